"""The ``gke`` platform: a GKE cluster with GPU node pools and the NVIDIA software GKE does not install."""

from __future__ import annotations

from types import MappingProxyType, ModuleType

from gpuready.resources import gcp
from gpuready_components.gke_gpu import facts, reservation
from gpuready_components.gke_gpu.args import ClusterArgs, GkeGpuClusterArgs, GpuNodePoolArgs, GpuSharingArgs
from gpuready_components.gke_gpu.outputs import OUTPUTS
from gpuready_components.platforms import Platform
from gpuready_components.served import Choice, Served, plain

from .clouds import GCP, KUBERNETES, KUBERNETES_TARGETS, parts


def _stack() -> ModuleType:
    from gpuready_stacks import gke

    return gke


def _component() -> type:
    from gpuready_components.gke_gpu.component import GkeGpuCluster

    return GkeGpuCluster


PLATFORM = Platform(
    "gke", "gcp", ("gcp", "k8s"), _stack, OUTPUTS,
    served=(Served(_component, GkeGpuClusterArgs, facts.TYPE_TOKEN, OUTPUTS, MappingProxyType({
        (GpuSharingArgs, "strategy"): Choice("GpuSharingStrategy", lambda: plain(facts.SHARING_STRATEGIES)),
        (GpuNodePoolArgs, "gpu_driver_version"):
            Choice("GpuDriverVersion", lambda: plain((*facts.DRIVER_INSTALLED, facts.DRIVER_DISABLED))),
        (ClusterArgs, "release_channel"): Choice("ReleaseChannel", lambda: plain(facts.RELEASE_CHANNELS)),
        (reservation.ReservationArgs, "affinity"): Choice("ReservationAffinity",
                                                          lambda: plain(reservation.AFFINITIES)),
    })),),
    targets=KUBERNETES_TARGETS, node=facts.NODES, node_images=facts.NODE_IMAGES, managed_autoscaler=True,
    credentials=facts.CREDENTIALS, pools=(gcp.GkeNodePool,), facts=facts,
    pool_max_setting="gpuready:maxNodes", **parts(GCP, KUBERNETES))
"""GKE: GPU node pools that GKE's own autoscaler scales."""
