"""EKS GPU capacity: a GPU managed node group in a new or existing cluster, with the shared NVIDIA software."""

from .args import AutoscalerArgs, ClusterArgs, EksGpuClusterArgs, ExistingClusterArgs, GpuNodeGroupArgs, SystemNodeGroupArgs
from .repair import NodeRepairArgs
from .reservation import CapacityReservationArgs
from .validation import EksCapacity

__all__ = ["AutoscalerArgs", "CapacityReservationArgs", "ClusterArgs", "EksCapacity", "EksGpuCluster", "EksGpuClusterArgs", "ExistingClusterArgs",
           "GpuNodeGroupArgs", "NodeRepairArgs", "SystemNodeGroupArgs"]


def __getattr__(name: str):
    """``EksGpuCluster`` on first use: it imports the AWS SDK; the args, facts and validation do not (the policy
    pack and ``gpuready plan`` of other platforms read them)."""
    if name == "EksGpuCluster":
        from .component import EksGpuCluster

        return EksGpuCluster
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
