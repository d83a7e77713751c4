"""Typed inputs of :class:`~gpuready_components.k8s_gpu.K8sGpuSoftware`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence

import pulumi

from . import facts


@dataclass(frozen=True, kw_only=True)
class ExistingClusterArgs:
    """A cluster made elsewhere (EKS, GKE or AKS): the GPU nodes join it and the GPU software is installed in it."""

    name: pulumi.Input[str]
    """The cluster's name, as its cloud knows it (an output of the program that made it, such as a stack
    reference's, is checked when it resolves)."""
    kubeconfig: pulumi.Input[str]
    """A kubeconfig for the cluster (a secret), used to install the GPU software."""
    kubernetes_version: Optional[str] = None
    """The cluster's Kubernetes version (``1.34``, ``1.34.2``), where a choice needs it known at preview
    (``install: dra`` needs 1.34.2 or later); ``None``: not stated."""


@dataclass(frozen=True, kw_only=True)
class ExtraInstanceTypeArgs:
    """The GPU facts of an instance, VM or machine type newer than gpuready's catalog, as its cloud states them
    (EC2 ``DescribeInstanceTypes``): checked like the catalog's rows, then known to the one component that declares
    it (unpriced), and stamped on the resources that launch it (a ``gpu-facts.gpuready.io/NAME`` tag or annotation)
    for the policy pack and ``gpuready plan``."""

    name: str
    """The type's name, e.g. ``g7.2xlarge``; not one the catalog lists."""
    gpu_model: str
    """NVIDIA model as the catalog names them: T4, V100, A10G, A10, L4, L40S, A100, H100, H200, B200, B300..."""
    gpus: int
    """GPUs in one instance (1 to 16)."""
    gpu_memory_gib: float
    """Memory of one GPU in GiB (2**30 bytes) as the cloud reports it: EC2's GPU ``SizeInMiB`` / 1024 (an L4's 22,888
    MiB is 22.35), not the vendor's decimal GB (24)."""
    vcpus: int
    """vCPUs of one instance."""
    memory_gib: float
    """Memory of one instance, GiB."""
    efa_interfaces: int = 0
    """Elastic Fabric Adapter interfaces one instance takes (0: no EFA; 0 outside AWS)."""


@dataclass(frozen=True, kw_only=True)
class MigArgs:
    """Multi-Instance GPU: partition each GPU into isolated instances (A100, A30, H100, H200 only)."""

    strategy: str = "single"
    """How partitions are advertised: ``single`` (every GPU cut the same way; pods ask for ``nvidia.com/gpu``) or
    ``mixed`` (pods ask for ``nvidia.com/mig-1g.10gb`` and the like)."""
    config: str = "all-balanced"
    """The mig-parted configuration the GPU Operator's MIG manager applies, set as the GPU nodes' label
    ``nvidia.com/mig.config``: ``all-1g.10gb``, ``all-balanced``...
    (ignored where the platform partitions GPUs itself: GKE's ``gpuPartitionSize``, AKS's ``gpuInstanceProfile``)."""


@dataclass(frozen=True, kw_only=True)
class BurnInArgs:
    """Burn-in admission: new GPU nodes boot tainted ``gpuready.io/burn-in=pending:NoSchedule``; a daemonset runs
    the GPU probe and DCGM diagnostics on each and removes the taint on pass, or labels the node
    ``gpuready.io/burn-in=failed`` with the reason as an annotation (the taint stays)."""

    probe_files: Mapping[str, str]
    """The probe's files by name (``core.py`` at least), shipped in a ConfigMap: gpuready's ``gpuready/probe``
    (the stack reads them; components do not import gpuready)."""
    dcgm_level: int = 2
    """``dcgmi diag -r LEVEL``: 1 (seconds) to 4 (hours); 2 takes about two minutes."""


@dataclass(frozen=True, kw_only=True)
class GpuSoftwareOptions:
    """What an admin chooses about the NVIDIA software on GPU nodes; the platform supplies the rest."""

    install: str = "device-plugin"
    """``device-plugin`` (NVIDIA's device plugin and DCGM exporter charts on an image that ships the driver),
    ``gpu-operator`` (the GPU Operator installs whatever the node image lacks) or ``dra`` (NVIDIA's DRA driver instead
    of the device plugin: pods claim GPUs with ResourceClaims of DeviceClass ``gpu.nvidia.com``; Kubernetes 1.34.2 or
    later, an image that ships the driver and no device plugin)."""
    compute_domains: bool = False
    """With ``install: dra``: the DRA driver's ComputeDomains too (its controller and compute-domain kubelet plugin),
    which give a multi-node job its IMEX channel for NVLink across nodes (GB200/GB300 NVL72 racks)."""
    time_slicing_replicas: Optional[int] = None
    """Advertise each GPU as this many ``nvidia.com/gpu`` (2-64): pods share it in turns, with no memory isolation."""
    mig: Optional[MigArgs] = None
    """Partition GPUs with MIG; not together with time-slicing."""
    gpu_feature_discovery: Optional[bool] = None
    """Label nodes with their GPU product, memory, count and CUDA version (``nvidia.com/gpu.product``...), so
    workloads can select a GPU model. Brings node-feature-discovery with it. Default: on, except where the platform
    labels GPU nodes itself (GKE)."""
    dcgm_exporter: Optional[bool] = None
    """Run NVIDIA's DCGM exporter on GPU nodes: utilisation, memory, temperature, power and XID errors on :9400.
    Default: on (GKE: off when its managed DCGM metrics are on)."""
    prometheus_operator: bool = False
    """Create a ServiceMonitor for the DCGM exporter and a PrometheusRule of GPU health alerts
    (:mod:`~gpuready_components.k8s_gpu.health`). Only when the Prometheus Operator's CRDs are in the cluster:
    without them the release fails."""
    prometheus_labels: Mapping[str, str] = field(default_factory=dict)
    """Labels for the ServiceMonitor and the PrometheusRule, as the Prometheus's ``serviceMonitorSelector`` and
    ``ruleSelector`` pick them (kube-prometheus-stack: ``release: <its release name>``)."""
    burn_in: Optional[BurnInArgs] = None
    """Admit new GPU nodes only after a burn-in (the platform component adds the taint to the GPU pools)."""
    namespace: str = facts.NAMESPACE
    """Namespace created for the releases, labelled privileged for Pod Security Admission."""
    job_namespace: str = "default"
    """Namespace where GPU jobs run (an existing one): the jobs' service account is created there."""
    job_service_account: str = "gpu-jobs"
    """Service account created for GPU jobs (no permissions of its own), named in the Metaflow profile."""


@dataclass(frozen=True, kw_only=True)
class K8sGpuSoftwareArgs:
    """Inputs of :class:`K8sGpuSoftware`: the cluster's platform and GPU node image, and the admin's options."""

    platform: str
    """``eks``, ``gke`` or ``aks``: decides the GPU taint tolerated and the node labels selected."""
    node_image: str
    """``PLATFORM/IMAGE`` key of the platform descriptor's ``node_images``, e.g. ``eks/AL2023_x86_64_NVIDIA``:
    decides which of driver, toolkit and device plugin the charts install."""
    options: GpuSoftwareOptions = field(default_factory=GpuSoftwareOptions)
    """What to install and how GPUs are shared (see :class:`GpuSoftwareOptions`)."""
    gpu_models: tuple[tuple[str, float], ...] = ()
    """(GPU model, GPU memory GiB) of the node pools, to check MIG against; empty skips that check."""
    extra_taints: tuple[facts.Taint, ...] = ()
    """Taints GPU nodes carry besides the platform's GPU taint (AKS Spot pools:
    ``kubernetes.azure.com/scalesetpriority=spot``); every NVIDIA daemonset tolerates them too."""
    extra_instance_types: Sequence[ExtraInstanceTypeArgs] = ()
    """GPU facts of the platform's types newer than gpuready's catalog (see :class:`ExtraInstanceTypeArgs`): the
    burn-in expects their GPU counts too."""
