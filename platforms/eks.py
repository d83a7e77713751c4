"""The ``eks`` platform: an EKS cluster with GPU managed node groups (or Karpenter, or Auto Mode) and the NVIDIA
software."""

from __future__ import annotations

from types import MappingProxyType, ModuleType

from gpuready.resources import aws
from gpuready_components.eks_gpu import facts, reservation
from gpuready_components.k8s_gpu import scalers
from gpuready_components.eks_gpu.args import AutoscalerArgs, ClusterArgs, EksGpuClusterArgs, GpuNodeGroupArgs
from gpuready_components.eks_gpu.outputs import OUTPUTS
from gpuready_components.platforms import Platform
from gpuready_components.served import Choice, Served, plain

from .clouds import AWS, KUBERNETES, KUBERNETES_TARGETS, parts


def _stack() -> ModuleType:
    from gpuready_stacks import eks

    return eks


def _component() -> type:
    from gpuready_components.eks_gpu.component import EksGpuCluster

    return EksGpuCluster


PLATFORM = Platform(
    "eks", "aws", ("aws", "k8s"), _stack, OUTPUTS,
    served=(Served(_component, EksGpuClusterArgs, facts.TYPE_TOKEN, OUTPUTS, MappingProxyType({
        (GpuNodeGroupArgs, "ami_type"): Choice("AmiType", lambda: plain(facts.GPU_AMI_TYPES)),
        (GpuNodeGroupArgs, "capacity_type"): Choice("CapacityType", lambda: plain(facts.CAPACITY_TYPES)),
        (reservation.CapacityReservationArgs, "kind"): Choice("ReservationKind", lambda: plain(reservation.KINDS)),
        (reservation.CapacityReservationArgs, "preference"): Choice("ReservationPreference",
                                                                     lambda: plain(reservation.PREFERENCES)),
        (ClusterArgs, "log_types"): Choice("ClusterLogType", lambda: plain(facts.LOG_TYPES)),
        (AutoscalerArgs, "mode"): Choice("AutoscalerMode", lambda: dict(scalers.MODES)),
    })),),
    targets=KUBERNETES_TARGETS, node=facts.NODES, node_images=facts.NODE_IMAGES, pool_max_setting="gpuready:maxSize",
    credentials=facts.CREDENTIALS, pools=(aws.EksNodeGroup,), facts=facts,
    **parts(AWS, KUBERNETES))
"""EKS: the GPU node group, the cluster-autoscaler or Karpenter we install, or EKS Auto Mode."""
