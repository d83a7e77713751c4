"""EKS GPU capacity: a GPU managed node group in a new or existing cluster, with the shared NVIDIA software."""

from .args import ClusterArgs, EksGpuClusterArgs, ExistingClusterArgs, GpuNodeGroupArgs, SystemNodeGroupArgs
from .component import EksGpuCluster
from .validation import EksCapacity

__all__ = ["ClusterArgs", "EksCapacity", "EksGpuCluster", "EksGpuClusterArgs", "ExistingClusterArgs",
           "GpuNodeGroupArgs", "SystemNodeGroupArgs"]
