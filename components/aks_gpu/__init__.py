"""AKS GPU capacity: a GPU agent pool in a new or existing cluster, with the shared NVIDIA software."""

from ..sdk import lazy_components
from .args import AksGpuClusterArgs, ClusterArgs, ExistingClusterArgs, GpuAgentPoolArgs
from .validation import AksCapacity

__all__ = ["AksCapacity", "AksGpuCluster", "AksGpuClusterArgs", "ClusterArgs", "ExistingClusterArgs",
           "GpuAgentPoolArgs"]

__getattr__ = lazy_components(__name__, "AksGpuCluster")
