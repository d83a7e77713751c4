"""AKS GPU capacity: a GPU agent pool in a new or existing cluster, with the shared NVIDIA software.

The names below load from their modules on first use: importing one module of the package (every plan's readers
import its facts) loads no other, and ``AksGpuCluster`` alone imports the Azure SDK.
"""

__all__ = ["AksCapacity", "AksGpuCluster", "AksGpuClusterArgs", "CapacityReservationGroupArgs", "ClusterArgs",
           "ExistingClusterArgs", "GpuAgentPoolArgs"]


def __getattr__(name: str):
    if name in ("AksGpuClusterArgs", "ClusterArgs", "ExistingClusterArgs", "GpuAgentPoolArgs"):
        from . import args as module
    elif name == "CapacityReservationGroupArgs":
        from . import reservation as module
    elif name == "AksCapacity":
        from . import validation as module
    elif name == "AksGpuCluster":
        from . import component as module
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(module, name)
