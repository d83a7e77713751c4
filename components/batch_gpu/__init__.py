"""AWS Batch GPU platform: compute environments, a GPU-only job queue, GPU and multi-node job definitions.

The names below load from their modules on first use: importing one module of the package (every plan's readers
import its facts) loads no other, and ``BatchGpuEnvironment`` alone imports the AWS SDK.
"""

__all__ = ["BatchCapacity", "BatchGpuEnvironment", "BatchGpuEnvironmentArgs", "BatchReservationArgs", "CpuQueueArgs",
           "GpuJobArgs", "MultiNodeArgs"]


def __getattr__(name: str):
    if name in ("BatchGpuEnvironmentArgs", "CpuQueueArgs", "GpuJobArgs", "MultiNodeArgs"):
        from . import args as module
    elif name == "BatchReservationArgs":
        from . import reservation as module
    elif name == "BatchCapacity":
        from . import validation as module
    elif name == "BatchGpuEnvironment":
        from . import component as module
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(module, name)
