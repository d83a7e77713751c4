"""GKE GPU capacity: a GPU node pool in a new or existing cluster, with the shared NVIDIA software."""

from ..sdk import lazy_components
from .args import ClusterArgs, ExistingClusterArgs, GkeGpuClusterArgs, GpuNodePoolArgs, GpuSharingArgs
from .validation import GkeCapacity

__all__ = ["ClusterArgs", "ExistingClusterArgs", "GkeCapacity", "GkeGpuCluster", "GkeGpuClusterArgs",
           "GpuNodePoolArgs", "GpuSharingArgs"]

__getattr__ = lazy_components(__name__, "GkeGpuCluster")
