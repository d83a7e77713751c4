"""GKE GPU capacity: a GPU node pool in a new or existing cluster, with the shared NVIDIA software.

The names below load from their modules on first use: importing one module of the package (every plan's readers
import its facts) loads no other, and ``GkeGpuCluster`` alone imports the GCP SDK.
"""

__all__ = ["ClusterArgs", "ExistingClusterArgs", "FlexStartArgs", "GkeCapacity", "GkeGpuCluster", "GkeGpuClusterArgs",
           "GpuNodePoolArgs", "GpuSharingArgs", "ReservationArgs"]


def __getattr__(name: str):
    if name in ("ClusterArgs", "ExistingClusterArgs", "GkeGpuClusterArgs", "GpuNodePoolArgs", "GpuSharingArgs"):
        from . import args as module
    elif name in ("FlexStartArgs", "ReservationArgs"):
        from . import reservation as module
    elif name == "GkeCapacity":
        from . import validation as module
    elif name == "GkeGpuCluster":
        from . import component as module
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(module, name)
