"""Typed inputs of :class:`~gpuready_components.aks_gpu.AksGpuCluster`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence

import pulumi

from ..teams import TeamArgs
from ..k8s_gpu.args import ExistingClusterArgs, GpuSoftwareOptions
from .reservation import CapacityReservationGroupArgs


@dataclass(frozen=True, kw_only=True)
class ClusterArgs:
    """A new AKS cluster: Entra ID with Azure RBAC and no local accounts, OIDC issuer and Workload Identity."""

    kubernetes_version: Optional[str] = None
    """AKS's default version when omitted."""
    authorized_ip_ranges: Sequence[str] = ()
    """CIDRs allowed to reach the API server; empty leaves it open (with Entra ID credentials)."""
    vnet_subnet_id: Optional[pulumi.Input[str]] = None
    """Subnet for the nodes (Azure CNI overlay); AKS creates a network when omitted."""
    system_nodes: int = 2
    """Untainted CPU nodes for CoreDNS and the GPU software's controllers."""
    deployer_admin: bool = True
    """Grant whoever runs ``pulumi up`` (the Azure client config's object id) "Azure Kubernetes Service RBAC Cluster
    Admin" on the cluster. With Azure RBAC on and local accounts off nothing else lets the GPU software in."""
    deployer_principal_type: str = "User"
    """What the deployer is: ``User`` (``az login``), or ``ServicePrincipal`` (CI)."""
    admin_group_object_ids: Sequence[str] = ()
    """Entra ID groups made cluster admins (``aadProfile.adminGroupObjectIDs``, and the same role as the
    deployer), instead of or besides the deployer."""


@dataclass(frozen=True, kw_only=True)
class GpuAgentPoolArgs:
    """A GPU agent pool (mode User) that scales from zero, tainted at creation (AKS taints cannot be added later)."""

    vm_size: str
    """GPU VM size from the catalog: ``Standard_NC4as_T4_v3``, ``Standard_NC24ads_A100_v4``..."""
    spot: bool = False
    """Spot priority: evicted nodes are deleted; AKS adds its own Spot taint, which the GPU software tolerates."""
    min_count: int = 0
    """Nodes kept when no GPU pod is pending; 0 bills no idle GPUs."""
    max_count: int = 2
    """Most nodes at once: caps GPUs and dollars."""
    os_disk_size_gb: int = 200
    """OS disk holding container images; deep-learning images are over 10 GB."""
    availability_zones: Sequence[str] = ()
    """Zones of the pool (``1``, ``2``, ``3``) where the VM size is offered; empty: no zones."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """Extra Kubernetes labels of the GPU nodes."""
    reservation: Optional[CapacityReservationGroupArgs] = None
    """An Azure capacity reservation group the pool takes its VMs from (see
    :class:`~gpuready_components.aks_gpu.reservation.CapacityReservationGroupArgs`); Regular priority only. A new
    cluster then runs on a user-assigned identity with Contributor on the group's resource group (system-assigned
    otherwise, as before)."""


@dataclass(frozen=True, kw_only=True)
class AksGpuClusterArgs:
    """Inputs of an AKS GPU cluster. Plain values are checked when the component is constructed."""

    resource_group_name: pulumi.Input[str]
    """Resource group of the cluster (an existing one)."""
    location: str
    """Azure region, e.g. ``eastus``."""
    node_pool: GpuAgentPoolArgs
    """The GPU nodes (see :class:`GpuAgentPoolArgs`)."""
    cluster: Optional[ClusterArgs] = None
    """Create the cluster with these settings; give either this or ``existing_cluster``."""
    existing_cluster: Optional[ExistingClusterArgs] = None
    """Add the GPU pool to an AKS cluster made elsewhere instead; give either this or ``cluster``."""
    software: GpuSoftwareOptions = field(default_factory=GpuSoftwareOptions)
    """NVIDIA software: ``device-plugin`` mode uses AKS's driver; ``gpu-operator`` sets ``gpuProfile.driver`` to
    ``None`` and installs NVIDIA's."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """Tags for every Azure resource that takes tags."""
    teams: Sequence[TeamArgs] = ()
    """The teams sharing the GPUs (see :class:`~gpuready_components.teams.TeamArgs`; pools by the names the
    ``teams`` output's flavors carry after ``gpu-``: ``gpu``, the GPU agent pool), checked against the pools at construction. With
    teams, Kueue is installed: a ClusterQueue per team in one cohort, a LocalQueue in each team's namespace (created,
    labelled ``gpuready.io/team``), and GPU jobs of those namespaces wait for their queue. None: no queue."""
    overcommit_quotas: bool = False
    """Let the teams' quotas add up to more GPUs than the pools reach at full scale (jobs then wait for GPUs their
    quota allows)."""
