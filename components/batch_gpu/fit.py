"""Whether a Batch job fits what a queue's instance types offer: the one fit rule for the component's validation,
the policy pack and the smoke test's diagnosis.

A job fits an instance type when its GPUs, vCPUs and memory all fit one instance, memory net of the ECS agent's share.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from .. import catalog
from . import facts


@dataclass(frozen=True)
class Needs:
    """What one job container asks for."""

    gpus: int
    vcpus: int
    memory_mib: int

    def __str__(self) -> str:
        return f"{self.gpus} GPU, {self.vcpus} vCPU, {self.memory_mib} MiB"


def usable_memory_mib(instance: catalog.GpuInstanceType) -> int:
    """Memory a Batch job can ask for on ``instance``: installed memory less the ECS agent's share."""
    return int(instance.memory_mib * (1 - facts.ECS_MEMORY_RESERVE_FRACTION))


def fits(needs: Needs, instance: catalog.GpuInstanceType) -> bool:
    """Whether one ``instance`` holds the whole job."""
    return needs.gpus <= instance.gpus and needs.vcpus <= instance.vcpus and \
        needs.memory_mib <= usable_memory_mib(instance)


def holding(needs: Needs, instances: Iterable[catalog.GpuInstanceType]) -> list[catalog.GpuInstanceType]:
    """The ``instances`` that hold the job, in their order."""
    return [i for i in instances if fits(needs, i)]


def largest(instances: Iterable[catalog.GpuInstanceType], count: int) -> list[catalog.GpuInstanceType]:
    """The ``count`` biggest instance types (GPUs, then vCPUs, then memory): what to quote when a job fits none."""
    return sorted(instances, key=lambda i: (i.gpus, i.vcpus, i.memory_mib), reverse=True)[:count]


def capacity(instance: catalog.GpuInstanceType) -> str:
    """What one instance offers a job: ``1 GPU, 4 vCPU, 15564 MiB usable``."""
    return f"{instance.gpus} GPU, {instance.vcpus} vCPU, {usable_memory_mib(instance)} MiB usable"


def offer(instance: catalog.GpuInstanceType) -> str:
    """``g6.xlarge (1 GPU, 4 vCPU, 15564 MiB usable)``."""
    return f"{instance.name} ({capacity(instance)})"
