"""AKS GPU capacity: a GPU agent pool in a new or existing cluster, with the shared NVIDIA software."""

from .args import AksGpuClusterArgs, ClusterArgs, ExistingClusterArgs, GpuAgentPoolArgs
from .reservation import CapacityReservationGroupArgs
from .validation import AksCapacity

__all__ = ["AksCapacity", "AksGpuCluster", "AksGpuClusterArgs", "CapacityReservationGroupArgs", "ClusterArgs",
           "ExistingClusterArgs", "GpuAgentPoolArgs"]


def __getattr__(name: str):
    """``AksGpuCluster`` on first use: it imports the Azure SDK; the args, facts and validation do not (the policy
    pack and ``gpuready plan`` of other platforms read them)."""
    if name == "AksGpuCluster":
        from .component import AksGpuCluster

        return AksGpuCluster
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
