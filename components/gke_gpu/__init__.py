"""GKE GPU capacity: a GPU node pool in a new or existing cluster, with the shared NVIDIA software."""

from .args import ClusterArgs, ExistingClusterArgs, GkeGpuClusterArgs, GpuNodePoolArgs, GpuSharingArgs
from .validation import GkeCapacity

__all__ = ["ClusterArgs", "ExistingClusterArgs", "GkeCapacity", "GkeGpuCluster", "GkeGpuClusterArgs",
           "GpuNodePoolArgs", "GpuSharingArgs"]


def __getattr__(name: str):
    # The component imports the cloud SDK; args, facts and validation do not need it (the policy pack reads them).
    if name == "GkeGpuCluster":
        from .component import GkeGpuCluster

        return GkeGpuCluster
    raise AttributeError(name)
