"""The ``aws-batch`` platform: AWS Batch GPU compute environments and job queues."""

from __future__ import annotations

from types import MappingProxyType, ModuleType

from gpuready.resources import aws
from gpuready_components.batch_gpu import facts
from gpuready_components.batch_gpu.args import BatchGpuEnvironmentArgs
from gpuready_components.batch_gpu.outputs import OUTPUTS
from gpuready_components.platforms import GANG, SINGLE, SWEEP, Platform
from gpuready_components.served import Choice, Served, plain

from .clouds import AWS, parts


def _stack() -> ModuleType:
    from gpuready_stacks import aws_batch

    return aws_batch


def _component() -> type:
    from gpuready_components.batch_gpu.component import BatchGpuEnvironment

    return BatchGpuEnvironment


def _single() -> type:
    from gpuready.smoke.batch import BatchTarget

    return BatchTarget


def _gang() -> type:
    from gpuready.smoke.batch_multinode import BatchGangTarget

    return BatchGangTarget


def _sweep() -> type:
    from gpuready.smoke.sweep_batch import BatchSweepTarget

    return BatchSweepTarget


PLATFORM = Platform(
    "aws-batch", "aws", ("aws",), _stack, OUTPUTS,
    served=(Served(_component, BatchGpuEnvironmentArgs, facts.TYPE_TOKEN, OUTPUTS, MappingProxyType({
        (BatchGpuEnvironmentArgs, "capacity"): Choice("BatchCapacity", lambda: plain(facts.CAPACITY)),
        (BatchGpuEnvironmentArgs, "image_type"): Choice("BatchImageType", lambda: plain(facts.GPU_IMAGE_TYPES)),
    })),),
    targets=MappingProxyType({SINGLE: _single, GANG: _gang, SWEEP: _sweep}),
    pools=(aws.BatchComputeEnvironment,), facts=facts,
    **parts(AWS))
"""AWS Batch: a compute environment per purchase option, a GPU job queue, job definitions."""
