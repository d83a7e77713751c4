"""GKE GPU capacity: a GPU node pool in a new or existing cluster, with the shared NVIDIA software."""

from .args import ClusterArgs, ExistingClusterArgs, GkeGpuClusterArgs, GpuNodePoolArgs, GpuSharingArgs
from .component import GkeGpuCluster
from .validation import GkeCapacity

__all__ = ["ClusterArgs", "ExistingClusterArgs", "GkeCapacity", "GkeGpuCluster", "GkeGpuClusterArgs",
           "GpuNodePoolArgs", "GpuSharingArgs"]
