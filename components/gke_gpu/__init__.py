"""GKE GPU capacity: a GPU node pool in a new or existing cluster, with the shared NVIDIA software."""

from .args import ClusterArgs, ExistingClusterArgs, GkeGpuClusterArgs, GpuNodePoolArgs, GpuSharingArgs
from .reservation import FlexStartArgs, ReservationArgs
from .validation import GkeCapacity

__all__ = ["ClusterArgs", "ExistingClusterArgs", "FlexStartArgs", "GkeCapacity", "GkeGpuCluster", "GkeGpuClusterArgs",
           "GpuNodePoolArgs", "GpuSharingArgs", "ReservationArgs"]


def __getattr__(name: str):
    """``GkeGpuCluster`` on first use: it imports the Google Cloud SDK; the args, facts and validation do not (the policy
    pack and ``gpuready plan`` of other platforms read them)."""
    if name == "GkeGpuCluster":
        from .component import GkeGpuCluster

        return GkeGpuCluster
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
