"""The ``gpu-vm`` stack program: reads its settings and builds one :class:`GpuVm`."""

from __future__ import annotations

import pulumi

from gpuready_stacks.config import StackConfig
from gpuready_stacks.settings import Setting, Settings

from .component import GpuVm, GpuVmArgs

SETTINGS = Settings(
    Setting("instanceType", str, "a GPU instance type from the catalog", ("instance_type",), default="",
            required=True),
    Setting("subnetId", str, "the subnet to launch in", ("subnet_id",), GpuVmArgs),
    Setting("tags", dict, "tags of the instance", ("tags",), GpuVmArgs),
)
CLOUD_KEYS = {"aws:region": "AWS region"}


def build(config: StackConfig) -> None:
    vm = GpuVm("gpu", GpuVmArgs(**config.args()))
    for key, value in vm.outputs.items():
        pulumi.export(key, value)
