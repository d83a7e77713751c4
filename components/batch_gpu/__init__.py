"""AWS Batch GPU platform: compute environments, a GPU-only job queue, GPU and multi-node job definitions."""

from .args import BatchGpuEnvironmentArgs, CpuQueueArgs, GpuJobArgs, MultiNodeArgs
from .component import BatchGpuEnvironment
from .validation import BatchCapacity

__all__ = ["BatchCapacity", "BatchGpuEnvironment", "BatchGpuEnvironmentArgs", "CpuQueueArgs", "GpuJobArgs",
           "MultiNodeArgs"]
