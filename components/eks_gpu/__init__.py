"""EKS GPU capacity: a GPU managed node group in a new or existing cluster, with the shared NVIDIA software."""

from ..sdk import lazy_components
from .args import AutoscalerArgs, ClusterArgs, EksGpuClusterArgs, ExistingClusterArgs, GpuNodeGroupArgs, SystemNodeGroupArgs
from .validation import EksCapacity

__all__ = ["AutoscalerArgs", "ClusterArgs", "EksCapacity", "EksGpuCluster", "EksGpuClusterArgs", "ExistingClusterArgs",
           "GpuNodeGroupArgs", "SystemNodeGroupArgs"]

__getattr__ = lazy_components(__name__, "EksGpuCluster")
