"""Typed inputs of :class:`~gpuready_components.eks_gpu.EksGpuCluster`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence

import pulumi

from ..teams import TeamArgs
from ..k8s_gpu.args import ExistingClusterArgs, ExtraInstanceTypeArgs, GpuSoftwareOptions
from . import facts
from .repair import NodeRepairArgs
from .reservation import CapacityReservationArgs


@dataclass(frozen=True, kw_only=True)
class SystemNodeGroupArgs:
    """Untainted CPU nodes of a new cluster, for what must not wait for a GPU node: CoreDNS, the GPU Operator's
    controller, node-feature-discovery's master. Without them those pods stay Pending and the Helm releases fail."""

    instance_types: Sequence[str] = facts.SYSTEM_INSTANCE_TYPES
    """CPU instance types of the system node group."""
    size: int = 2
    """Nodes, fixed (two, so that CoreDNS survives the loss of one)."""


@dataclass(frozen=True, kw_only=True)
class ClusterArgs:
    """A new EKS cluster: API access entries, secrets encrypted with KMS, control-plane logs, an OIDC provider."""

    version: Optional[str] = None
    """Kubernetes version (``1.33``...); ``facts.DEFAULT_KUBERNETES_VERSION`` when omitted (pinned, so that the
    cluster-autoscaler image matches it)."""
    endpoint_public_access: bool = True
    """Reach the API server from the internet (from ``public_access_cidrs`` only). ``False``: a private endpoint
    only, so ``pulumi up`` must run inside the VPC (the Helm releases talk to the API server)."""
    public_access_cidrs: Sequence[str] = ()
    """Allow-list for the public endpoint, e.g. your VPN's egress range. Empty means anywhere (0.0.0.0/0)."""
    secrets_kms_key_arn: Optional[pulumi.Input[str]] = None
    """KMS key for envelope encryption of Kubernetes secrets; one (with rotation) is created when omitted."""
    log_types: Sequence[str] = facts.CLUSTER_LOG_TYPES
    """Control-plane logs sent to CloudWatch."""
    system_nodes: SystemNodeGroupArgs = field(default_factory=SystemNodeGroupArgs)
    """The CPU node group the cluster's own workloads run on."""


@dataclass(frozen=True, kw_only=True)
class GpuNodeGroupArgs:
    """A managed node group of GPU instances, tainted so that only GPU pods land on them."""

    instance_types: Sequence[str]
    """GPU instance types from the catalog, one architecture; EKS picks among them (Spot: the most available)."""
    ami_type: str = facts.DEFAULT_AMI_TYPE
    """An NVIDIA AMI type: ``AL2023_x86_64_NVIDIA`` (driver and toolkit) or ``BOTTLEROCKET_x86_64_NVIDIA`` (driver,
    toolkit and device plugin)."""
    capacity_type: str = "ON_DEMAND"
    """``ON_DEMAND`` or ``SPOT``."""
    min_size: int = 0
    """Nodes kept when no GPU pod is pending; 0 bills no idle GPUs (the autoscaler scales up)."""
    max_size: int = 2
    """Most nodes at once in each GPU node group: caps GPUs and dollars. Instance types are split into one node
    group per GPU count and model (cluster-autoscaler models a group by its first type)."""
    desired_size: Optional[int] = None
    """Nodes at creation (``min_size`` when omitted); the autoscaler moves it afterwards, and Pulumi leaves it."""
    root_volume_gib: int = 200
    """Encrypted gp3 volume for container images (the root volume on AL2023, the data volume on Bottlerocket).
    Deep-learning images are over 10 GB; a small volume leaves pods in ContainerCreating or evicted."""
    root_volume_kms_key_id: Optional[pulumi.Input[str]] = None
    """KMS key for that volume; the account's default EBS key when omitted."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """Extra node labels (``nvidia.com/gpu.present=true`` is always set)."""
    subnet_ids: Optional[pulumi.Input[Sequence[pulumi.Input[str]]]] = None
    """Subnets for the nodes; the component's ``subnet_ids`` when omitted."""
    efa: bool = False
    """Elastic Fabric Adapter for NCCL across nodes: every instance type must have EFA (all with the same number of
    interfaces); the launch template gets one ``efa`` interface per network card, the nodes one subnet (``subnet_ids``
    of one subnet, else the first of the component's) and a ``cluster`` placement group, and a security group lets
    them reach each other on every port; the AWS EFA device plugin advertises ``vpc.amazonaws.com/efa``. Managed node
    groups only (autoscaler ``cluster-autoscaler`` or ``none``)."""
    repair: NodeRepairArgs = field(default_factory=NodeRepairArgs)
    """Automatic repair of failing GPU nodes (managed node groups; on by default): see :class:`NodeRepairArgs`.
    Karpenter repairs through its ``nodeRepair`` feature gate (on), Auto Mode by itself."""
    reservation: Optional[CapacityReservationArgs] = None
    """Reserved capacity to launch into: a Capacity Block for ML or an On-Demand Capacity Reservation (see
    :class:`~gpuready_components.eks_gpu.reservation.CapacityReservationArgs`): managed node groups (autoscaler
    ``cluster-autoscaler`` or ``none``: a Capacity Block sets ``capacityType`` ``CAPACITY_BLOCK``), Karpenter (the
    EC2NodeClass selects it, the NodePool prefers ``reserved`` capacity) or Auto Mode (a custom NodeClass selects it
    by id or tags, the NodePool prefers ``reserved``; Auto Mode then stops using open ODCRs cluster-wide)."""


@dataclass(frozen=True, kw_only=True)
class AutoscalerArgs:
    """What adds GPU nodes when a GPU pod is pending (the node groups scale from ``min_size`` 0)."""

    mode: Optional[str] = None
    """``cluster-autoscaler`` (default for a new cluster: the official chart, with an IAM role through EKS Pod
    Identity and node-template tags on each GPU group's Auto Scaling group) or ``none`` (default for an existing
    cluster: its own autoscaler scales the GPU groups), ``karpenter`` (the official chart, its interruption queue,
    an EC2NodeClass and a GPU NodePool instead of GPU node groups) or ``auto-mode`` (a new cluster in EKS Auto Mode:
    a GPU NodePool on the default NodeClass, or on a reservation a custom NodeClass that selects it, and no NVIDIA
    plugin from the stack)."""
    kubernetes_version: Optional[str] = None
    """An existing cluster's Kubernetes minor (``1.33``), to match the cluster-autoscaler image; a new cluster's
    is its ``version``."""


@dataclass(frozen=True, kw_only=True)
class EksGpuClusterArgs:
    """Inputs of an EKS GPU cluster. Plain values are checked when the component is constructed."""

    node_group: GpuNodeGroupArgs
    """The GPU nodes (see :class:`GpuNodeGroupArgs`)."""
    subnet_ids: pulumi.Input[Sequence[pulumi.Input[str]]]
    """Private subnets (with a NAT gateway) in at least two availability zones, for the cluster and the nodes."""
    cluster: Optional[ClusterArgs] = None
    """Create the cluster with these settings; give either this or ``existing_cluster``."""
    existing_cluster: Optional[ExistingClusterArgs] = None
    """Join an EKS cluster made elsewhere instead; give either this or ``cluster``."""
    autoscaler: AutoscalerArgs = field(default_factory=AutoscalerArgs)
    """What scales the GPU node groups up from zero."""
    software: GpuSoftwareOptions = field(default_factory=GpuSoftwareOptions)
    """The NVIDIA software installed on the cluster (device plugin or GPU Operator, DCGM exporter, sharing)."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """Tags for every AWS resource that takes tags, and for the instances."""
    extra_instance_types: Sequence[ExtraInstanceTypeArgs] = ()
    """GPU facts of instance types newer than gpuready's catalog (see
    :class:`~gpuready_components.k8s_gpu.args.ExtraInstanceTypeArgs`), checked like its rows: this component alone
    knows them (unpriced), and tags (annotates) the node groups (NodePool) that launch them with their facts."""
    teams: Sequence[TeamArgs] = ()
    """The teams sharing the GPUs (see :class:`~gpuready_components.teams.TeamArgs`; pools by the names the
    ``teams`` output's flavors carry after ``gpu-``: ``gpu``, ``gpu-4x``... one per GPU node group, or the NodePool ``gpuready-gpu``), checked against the pools at construction. With
    teams, Kueue is installed: a ClusterQueue per team in one cohort, a LocalQueue in each team's namespace (created,
    labelled ``gpuready.io/team``), and GPU jobs of those namespaces wait for their queue. None: no queue."""
    overcommit_quotas: bool = False
    """Let the teams' quotas add up to more GPUs than the pools reach at full scale (jobs then wait for GPUs their
    quota allows)."""
