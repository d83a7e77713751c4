"""AWS Batch GPU platform: compute environments, a GPU-only job queue, GPU and multi-node job definitions."""

from .args import BatchGpuEnvironmentArgs, CpuQueueArgs, GpuJobArgs, MultiNodeArgs
from .validation import BatchCapacity

__all__ = ["BatchCapacity", "BatchGpuEnvironment", "BatchGpuEnvironmentArgs", "CpuQueueArgs", "GpuJobArgs",
           "MultiNodeArgs"]


def __getattr__(name: str):
    # The component imports the cloud SDK; args, facts and validation do not need it (the policy pack reads them).
    if name == "BatchGpuEnvironment":
        from .component import BatchGpuEnvironment

        return BatchGpuEnvironment
    raise AttributeError(name)
