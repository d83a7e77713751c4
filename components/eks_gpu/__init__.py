"""EKS GPU capacity: a GPU managed node group in a new or existing cluster, with the shared NVIDIA software."""

from .args import ClusterArgs, EksGpuClusterArgs, ExistingClusterArgs, GpuNodeGroupArgs, SystemNodeGroupArgs
from .validation import EksCapacity

__all__ = ["ClusterArgs", "EksCapacity", "EksGpuCluster", "EksGpuClusterArgs", "ExistingClusterArgs",
           "GpuNodeGroupArgs", "SystemNodeGroupArgs"]


def __getattr__(name: str):
    # The component imports the cloud SDK; args, facts and validation do not need it (the policy pack reads them).
    if name == "EksGpuCluster":
        from .component import EksGpuCluster

        return EksGpuCluster
    raise AttributeError(name)
