"""The ``aks`` platform: an AKS cluster with GPU agent pools and the NVIDIA software AKS does not install."""

from __future__ import annotations

from types import MappingProxyType, ModuleType

from gpuready.resources import azure
from gpuready_components.aks_gpu import facts
from gpuready_components.aks_gpu.args import AksGpuClusterArgs, ClusterArgs, GpuAgentPoolArgs
from gpuready_components.aks_gpu.outputs import OUTPUTS
from gpuready_components.aks_gpu.reservation import CapacityReservationGroupArgs
from gpuready_components.platforms import Platform
from gpuready_components.served import Choice, Served, plain

from .clouds import AZURE, KUBERNETES, KUBERNETES_TARGETS, parts


def _stack() -> ModuleType:
    from gpuready_stacks import aks

    return aks


def _component() -> type:
    from gpuready_components.aks_gpu.component import AksGpuCluster

    return AksGpuCluster


PLATFORM = Platform(
    "aks", "azure", ("azure", "k8s"), _stack, OUTPUTS,
    served=(Served(_component, AksGpuClusterArgs, facts.TYPE_TOKEN, OUTPUTS, MappingProxyType({
        (ClusterArgs, "deployer_principal_type"):
            Choice("DeployerPrincipalType", lambda: plain(facts.DEPLOYER_PRINCIPAL_TYPES)),
        (GpuAgentPoolArgs, "availability_zones"): Choice("AvailabilityZone", lambda: plain(facts.ZONES)),
        (CapacityReservationGroupArgs, "zones"): Choice("AvailabilityZone", lambda: plain(facts.ZONES)),
    })),),
    targets=KUBERNETES_TARGETS, node=facts.NODES, node_images=facts.NODE_IMAGES, managed_autoscaler=True,
    credentials=facts.CREDENTIALS, pools=(azure.AksAgentPool,), facts=facts,
    pool_max_setting="gpuready:maxCount", **parts(AZURE, KUBERNETES))
"""AKS: GPU agent pools in mode User that AKS's own autoscaler scales."""
