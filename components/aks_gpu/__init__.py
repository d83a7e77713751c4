"""AKS GPU capacity: a GPU agent pool in a new or existing cluster, with the shared NVIDIA software."""

from .args import AksGpuClusterArgs, ClusterArgs, ExistingClusterArgs, GpuAgentPoolArgs
from .component import AksGpuCluster
from .validation import AksCapacity

__all__ = ["AksCapacity", "AksGpuCluster", "AksGpuClusterArgs", "ClusterArgs", "ExistingClusterArgs",
           "GpuAgentPoolArgs"]
