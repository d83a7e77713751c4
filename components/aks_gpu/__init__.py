"""AKS GPU capacity: a GPU agent pool in a new or existing cluster, with the shared NVIDIA software."""

from .args import AksGpuClusterArgs, ClusterArgs, ExistingClusterArgs, GpuAgentPoolArgs
from .validation import AksCapacity

__all__ = ["AksCapacity", "AksGpuCluster", "AksGpuClusterArgs", "ClusterArgs", "ExistingClusterArgs",
           "GpuAgentPoolArgs"]


def __getattr__(name: str):
    # The component imports the cloud SDK; args, facts and validation do not need it (the policy pack reads them).
    if name == "AksGpuCluster":
        from .component import AksGpuCluster

        return AksGpuCluster
    raise AttributeError(name)
