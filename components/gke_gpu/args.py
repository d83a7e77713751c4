"""Typed inputs of :class:`~gpuready_components.gke_gpu.GkeGpuCluster`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence

import pulumi

from ..teams import TeamArgs
from ..k8s_gpu.args import ExistingClusterArgs, GpuSoftwareOptions
from .reservation import FlexStartArgs, ReservationArgs


@dataclass(frozen=True, kw_only=True)
class GpuSharingArgs:
    """GKE's own GPU sharing, applied by GKE's device plugin (with GKE-installed drivers)."""

    strategy: str = "TIME_SHARING"
    """``TIME_SHARING`` (pods take turns) or ``MPS`` (pods run concurrently, memory limits per client)."""
    max_clients_per_gpu: int = 4
    """Pods sharing one GPU (2-48)."""


@dataclass(frozen=True, kw_only=True)
class ClusterArgs:
    """A new GKE Standard cluster: private nodes, Workload Identity, shielded nodes, a release channel."""

    network: Optional[pulumi.Input[str]] = None
    """Your VPC network, and ``subnetwork`` in the cluster's region. When omitted the component creates both
    (``facts.SUBNET_RANGES``), with Cloud NAT."""
    subnetwork: Optional[pulumi.Input[str]] = None
    """Your subnetwork of ``network``, in the cluster's region (given with ``network``)."""
    cloud_nat: Optional[bool] = None
    """A Cloud Router and Cloud NAT for the nodes' subnetwork, so that the private nodes pull images from the
    internet (Docker Hub, nvcr.io). Default: on for the network the component creates, off for yours (which may
    have its NAT already; a subnetwork takes one NAT per region)."""
    release_channel: str = "REGULAR"
    """GKE release channel, which picks the Kubernetes version and upgrades it."""
    kubernetes_version: Optional[str] = None
    """The oldest Kubernetes version the new cluster starts at (GKE's ``minMasterVersion``, e.g. ``1.34``; the
    channel upgrades it from there); ``None``: the channel's default. ``install: dra`` needs it stated, 1.34 or
    later."""
    master_ipv4_cidr_block: str = "172.16.0.32/28"
    """The control plane's private range (a /28 unused in the network)."""
    master_authorized_networks: Sequence[str] = ()
    """CIDRs allowed to reach the public API endpoint; empty leaves it open (with credentials)."""
    managed_dcgm: bool = True
    """GKE's managed DCGM metrics (Cloud Monitoring); the DCGM exporter chart is then not installed."""
    system_nodes: int = 1
    """Untainted CPU nodes per zone for kube-dns and the GPU software's controllers."""
    deletion_protection: bool = True
    """GKE refuses to delete the cluster while on (``pulumi destroy`` included)."""


@dataclass(frozen=True, kw_only=True)
class GpuNodePoolArgs:
    """A GPU node pool that scales from zero, tainted so that only GPU pods land on it."""

    machine_type: str
    """``g2-standard-8`` (L4), ``a2-highgpu-1g`` (A100), ``a3-highgpu-8g`` (H100); or an N1 type with
    ``accelerator``."""
    accelerator: Optional[str] = None
    """N1 only: ``nvidia-tesla-t4`` or ``nvidia-tesla-v100``. G2, A2 and A3 come with their own GPUs."""
    accelerator_count: Optional[int] = None
    """N1 only: GPUs per node; the machine type bounds it."""
    gpu_driver_version: Optional[str] = None
    """``DEFAULT`` or ``LATEST`` (GKE installs the driver), ``INSTALLATION_DISABLED`` (the GPU Operator does). Default
    follows the install mode."""
    gpu_sharing: Optional[GpuSharingArgs] = None
    """Share each GPU between pods with GKE's time-sharing or MPS."""
    node_locations: Sequence[str] = ()
    """Zones for the pool (where the GPU is offered); the cluster's zones when empty."""
    spot: bool = False
    """Spot VMs: cheaper, and Google Cloud may stop them at any time."""
    min_nodes: int = 0
    """Nodes kept in total when no GPU pod is pending; 0 bills no idle GPUs."""
    max_nodes: int = 2
    """Most nodes in total: caps GPUs and dollars."""
    disk_size_gb: int = 200
    """Boot disk holding container images; deep-learning images are over 10 GB."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """Extra Kubernetes labels of the GPU nodes."""
    reservation: Optional[ReservationArgs] = None
    """A Compute Engine reservation the pool consumes: by name (``specific``), any matching one, or none (see
    :class:`~gpuready_components.gke_gpu.reservation.ReservationArgs`)."""
    flex_start: Optional[FlexStartArgs] = None
    """Flex-start VMs of the Dynamic Workload Scheduler, by default with queued provisioning through Kueue (see
    :class:`~gpuready_components.gke_gpu.reservation.FlexStartArgs`); no reservation, no Spot, from 0 nodes."""


@dataclass(frozen=True, kw_only=True)
class GkeGpuClusterArgs:
    """Inputs of a GKE GPU cluster. Plain values are checked when the component is constructed."""

    location: str
    """Region (regional cluster) or zone of the cluster, e.g. ``us-central1``."""
    node_pool: GpuNodePoolArgs
    """The GPU nodes (see :class:`GpuNodePoolArgs`)."""
    project: Optional[str] = None
    """Google Cloud project; the provider's ``gcp:project`` when omitted."""
    cluster: Optional[ClusterArgs] = None
    """Create the cluster with these settings; give either this or ``existing_cluster``."""
    existing_cluster: Optional[ExistingClusterArgs] = None
    """Add the GPU pool to a GKE cluster made elsewhere instead; give either this or ``cluster``."""
    software: GpuSoftwareOptions = field(default_factory=GpuSoftwareOptions)
    """NVIDIA software: ``device-plugin`` mode uses GKE's own driver and device plugin; ``gpu-operator`` turns GKE's
    device plugin off and runs NVIDIA's, on GKE's driver (``DEFAULT``/``LATEST``) or its own
    (``INSTALLATION_DISABLED``, the default)."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """Resource labels for every Google Cloud resource (cost allocation)."""
    teams: Sequence[TeamArgs] = ()
    """The teams sharing the GPUs (see :class:`~gpuready_components.teams.TeamArgs`; pools by the names the
    ``teams`` output's flavors carry after ``gpu-``: ``gpu``, the GPU node pool), checked against the pools at construction. With
    teams, Kueue is installed: a ClusterQueue per team in one cohort, a LocalQueue in each team's namespace (created,
    labelled ``gpuready.io/team``), and GPU jobs of those namespaces wait for their queue. None: no queue."""
    overcommit_quotas: bool = False
    """Let the teams' quotas add up to more GPUs than the pools reach at full scale (jobs then wait for GPUs their
    quota allows)."""
    managed_alerts: bool = False
    """The GPU alerts in Google Cloud Managed Service for Prometheus: a PodMonitoring of gpuready's DCGM exporter and
    a ClusterRules of the GPU alerts (:mod:`~gpuready_components.gke_gpu.alerts`); needs the exporter
    (``cluster.managed_dcgm`` false) and managed collection (turned on in a cluster the component creates)."""
