"""What EC2 instance types offer a container job run by ECS (as AWS Batch runs its jobs): whether a job fits them,
the one fit rule for the Batch component's validation, the policy pack and the smoke test's diagnosis; and what a
compute environment runs at full scale, the one computation behind the component's capacity outputs and the compute
environment reader's (``gpuready plan``, the capacity caps rule).

A job fits an instance type when its GPUs, vCPUs and memory all fit one instance, memory net of the ECS agent's share.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, NamedTuple, Sequence

from . import catalog
from .capacity import best_fill

ECS_MEMORY_RESERVE_FRACTION = 0.05
"""Share of an instance's installed memory to leave to the OS and the ECS agent. The agent registers less than the
installed memory (an 8 GiB m4.large offers 7985 MiB), so a job asking for its instance's nominal memory never leaves
RUNNABLE; AWS Batch's guide recommends a 5% buffer (batch/latest/userguide/ecs-reserved-memory.html)."""


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
    return int(instance.memory_mib * (1 - ECS_MEMORY_RESERVE_FRACTION))


def fits(needs: Needs, instance: catalog.GpuInstanceType) -> bool:
    """Whether one ``instance`` holds the whole job."""
    return needs.gpus <= instance.gpus and needs.vcpus <= instance.vcpus and \
        needs.memory_mib <= usable_memory_mib(instance)


def holding(needs: Needs, instances: Iterable[catalog.GpuInstanceType]) -> list[catalog.GpuInstanceType]:
    """The ``instances`` that hold the job, in their order."""
    return [i for i in instances if fits(needs, i)]


def largest(instances: Iterable[catalog.GpuInstanceType], count: int) -> list[catalog.GpuInstanceType]:
    """The ``count`` biggest distinct instance types (GPUs, then vCPUs, then memory): what to quote when a job fits
    none (a type offered by several compute environments is quoted once)."""
    distinct = {i.name: i for i in instances}.values()
    return sorted(distinct, key=lambda i: (i.gpus, i.vcpus, i.memory_mib), reverse=True)[:count]


def capacity(instance: catalog.GpuInstanceType) -> str:
    """What one instance offers a job: ``1 GPU, 4 vCPU, 15564 MiB usable``."""
    return f"{instance.gpus} GPU, {instance.vcpus} vCPU, {usable_memory_mib(instance)} MiB usable"


def offer(instance: catalog.GpuInstanceType) -> str:
    """``g6.xlarge (1 GPU, 4 vCPU, 15564 MiB usable)``."""
    return f"{instance.name} ({capacity(instance)})"


class FullScale(NamedTuple):
    """What one compute environment runs at once with every vCPU of its ``maxvCpus`` in use."""

    gpus: int
    usd_per_hour: float
    """On-demand list price (Spot costs less), not rounded; a type the catalog has no price for counts as 0."""


def full_scale(instances: Sequence[catalog.GpuInstanceType], max_vcpus: int) -> FullScale:
    """The most GPUs, and the most on-demand dollars per hour, that any mix of ``instances`` within ``max_vcpus``
    vCPUs runs (each its own best fill: the costliest mix need not hold the most GPUs)."""
    return FullScale(int(best_fill(max_vcpus, [(i.vcpus, i.gpus) for i in instances])),
                     best_fill(max_vcpus, [(i.vcpus, i.price_usd_hour or 0.0) for i in instances]))
