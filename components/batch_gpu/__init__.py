"""AWS Batch GPU platform: compute environments, a GPU-only job queue, GPU and multi-node job definitions."""

from .args import BatchGpuEnvironmentArgs, CpuQueueArgs, GpuJobArgs, MultiNodeArgs
from .reservation import BatchReservationArgs
from .validation import BatchCapacity

__all__ = ["BatchCapacity", "BatchGpuEnvironment", "BatchGpuEnvironmentArgs", "BatchReservationArgs", "CpuQueueArgs",
           "GpuJobArgs", "MultiNodeArgs"]


def __getattr__(name: str):
    """``BatchGpuEnvironment`` on first use: it imports the AWS SDK; the args, facts and validation do not (the policy
    pack and ``gpuready plan`` of other platforms read them)."""
    if name == "BatchGpuEnvironment":
        from .component import BatchGpuEnvironment

        return BatchGpuEnvironment
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
