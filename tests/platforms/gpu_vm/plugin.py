"""What ``gpuready plan`` and the policy rules need to know of a ``gpu-vm`` stack's resources: the instance's reader
(a GPU pool of one), its describer, and the offline answer to the AMI look-up."""

from __future__ import annotations

from typing import Any, Mapping, Optional

from gpuready.resources.base import GpuPool, PoolCapacity

AMI_ID = "ami-0123456789abcdef0"


class Instance(GpuPool):
    """An EC2 instance: a GPU pool that always runs exactly one node."""

    TOKEN = "aws:ec2/instance:Instance"
    CLOUD = "aws"

    @property
    def instance_types(self) -> list[str]:
        return [self.props.get("instanceType", "")]

    @property
    def minimum(self) -> tuple[int, str]:
        return 1, "an instance runs until it is stopped"

    @property
    def own_volume(self) -> Optional[tuple[int, str]]:
        size = (self.props.get("rootBlockDevice") or {}).get("volumeSize")
        return (int(size), "rootBlockDevice.volumeSize") if size else None

    def capacity(self) -> Optional[PoolCapacity]:
        rows = self.gpu_rows
        if not rows:
            return None
        return PoolCapacity("aws", (rows[0].name,), rows[0].gpus, rows[0].price_usd_hour or 0.0, (), (rows[0],))


def _instance(r: Any, rendering: Any) -> dict[str, Any]:
    rows = Instance(r.inputs).gpu_rows
    return {"gpus": f"{rows[0].gpus}x {rows[0].gpu_model}" if rows else "none", "image": r.inputs.get("ami")}


def _ami(args: Mapping[str, Any], mocks: Any) -> dict:
    return {"id": AMI_ID, "imageId": AMI_ID, "name": "Deep Learning Base OSS Nvidia Driver GPU AMI"}


DESCRIBERS = {Instance: _instance}
ANSWERS = {"aws:ec2/getAmi:getAmi": _ami}
