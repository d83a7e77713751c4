"""AWS Batch GPU platform: compute environments, a GPU-only job queue, GPU and multi-node job definitions."""

from ..sdk import lazy_components
from .args import BatchGpuEnvironmentArgs, CpuQueueArgs, GpuJobArgs, MultiNodeArgs
from .validation import BatchCapacity

__all__ = ["BatchCapacity", "BatchGpuEnvironment", "BatchGpuEnvironmentArgs", "CpuQueueArgs", "GpuJobArgs",
           "MultiNodeArgs"]

__getattr__ = lazy_components(__name__, "BatchGpuEnvironment")
