"""EKS GPU capacity: a GPU managed node group in a new or existing cluster, with the shared NVIDIA software.

The names below load from their modules on first use: importing one module of the package (every plan's readers
import its facts) loads no other, and ``EksGpuCluster`` alone imports the AWS SDK.
"""

__all__ = ["AutoscalerArgs", "CapacityReservationArgs", "ClusterArgs", "EksCapacity", "EksGpuCluster", "EksGpuClusterArgs", "ExistingClusterArgs",
           "GpuNodeGroupArgs", "NodeRepairArgs", "SystemNodeGroupArgs"]


def __getattr__(name: str):
    if name in ("AutoscalerArgs", "ClusterArgs", "EksGpuClusterArgs", "ExistingClusterArgs", "GpuNodeGroupArgs",
                "SystemNodeGroupArgs"):
        from . import args as module
    elif name == "NodeRepairArgs":
        from . import repair as module
    elif name == "CapacityReservationArgs":
        from . import reservation as module
    elif name == "EksCapacity":
        from . import validation as module
    elif name == "EksGpuCluster":
        from . import component as module
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(module, name)
