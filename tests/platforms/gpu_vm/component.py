"""``GpuVm``: one EC2 instance of a GPU type from the catalog, on an AMI that ships the NVIDIA driver."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import pulumi
import pulumi_aws as aws

from gpuready_components import catalog
from gpuready_components.errors import ConfigError

from .outputs import OUTPUTS

AMI_NAME = "Deep Learning Base OSS Nvidia Driver GPU AMI (Amazon Linux 2023) *"
"""AWS's Deep Learning Base AMI: the NVIDIA driver and CUDA preinstalled."""


@dataclass
class GpuVmArgs:
    instance_type: str
    """A GPU instance type from the catalog, e.g. ``g6.xlarge``."""
    subnet_id: Optional[str] = None
    """The subnet to launch in; ``None``: the default VPC's."""
    tags: dict[str, str] = field(default_factory=dict)
    """Tags of the instance (cost allocation)."""


class GpuVm(pulumi.ComponentResource):
    """One GPU instance, IMDSv2 only, with an encrypted root volume."""

    def __init__(self, name: str, args: GpuVmArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        row = catalog.find("aws", args.instance_type)
        if row is None:
            raise ConfigError("instance_type", args.instance_type, "not a GPU instance type in the catalog",
                              "use one of the catalog's AWS types, e.g. g6.xlarge")
        super().__init__("gpuready:test:GpuVm", name, None, opts)
        ami = aws.ec2.get_ami(most_recent=True, owners=["amazon"],
                              filters=[{"name": "name", "values": [AMI_NAME]}], opts=pulumi.InvokeOptions(parent=self))
        instance = aws.ec2.Instance(
            name, instance_type=args.instance_type, ami=ami.id, subnet_id=args.subnet_id,
            metadata_options={"http_tokens": "required", "http_put_response_hop_limit": 1},
            root_block_device={"volume_size": 200, "volume_type": "gp3", "encrypted": True}, tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self))
        self.outputs = OUTPUTS.values({"platform": "gpu-vm", "instanceId": instance.id,
                                       "instanceType": args.instance_type, "gpus": row.gpus})
        self.register_outputs(self.outputs)
