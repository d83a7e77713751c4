"""Readers of Azure resources: AKS and role assignments."""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from gpuready_components import catalog
from gpuready_components.k8s_gpu.compute_domain import needs_compute_domains
from gpuready_components.k8s_gpu.facts import Taint

from .base import (ON_DEMAND, RESERVED, SPOT, GpuPool, PoolCapacity, Reservation, Resource, Site, Source, dig, get,
                   plain)


class AksCluster(Resource):
    TOKEN = "azure-native:containerservice:ManagedCluster"
    ALLOW_LIST_FIX = "set apiServerAccessProfile.authorizedIPRanges to your networks"
    """How its API endpoint's allow-list is set."""

    @classmethod
    def stand_in(cls, name: str, state: Mapping[str, Any], site: Site) -> tuple[Optional[str], dict[str, Any]]:
        # A user-assigned identity goes in as a list of ids and comes back as a map of id -> its principal and client.
        given = dig(state, "identity.userAssignedIdentities", None)
        identities = {str(i): {"principalId": f"{name}-principal", "clientId": f"{name}-client"} for i in given} \
            if isinstance(given, list) else None
        return (f"/subscriptions/{site.azure_subscription}/resourceGroups/{state.get('resourceGroupName')}"
                f"/providers/Microsoft.ContainerService/managedClusters/{name}"), \
            ({"identity": {"userAssignedIdentities": identities}} if identities else {})

    @property
    def public_endpoint(self) -> bool:
        return not dig(self.props, "apiServerAccessProfile.enablePrivateCluster", False)

    @property
    def authorized_networks(self) -> list[Any]:
        return dig(self.props, "apiServerAccessProfile.authorizedIPRanges") or []

    VERSION_FIX = "set kubernetesVersion to 1.34 or later (gpuready:kubernetesVersion)"
    """How its Kubernetes version is set."""

    @property
    def kubernetes_version(self) -> Optional[str]:
        """Its Kubernetes version as given (``None``: AKS's default)."""
        return self.props.get("kubernetesVersion")

    @property
    def user_assigned_identities(self) -> list[str]:
        """The ids of the user-assigned identities it runs on (a list as it goes in, a map's keys as Azure answers);
        none on a system-assigned identity."""
        return [str(i) for i in dig(self.props, "identity.userAssignedIdentities", None) or []]


class AksAgentPool(GpuPool):
    TOKEN = "azure-native:containerservice:AgentPool"
    CLOUD = "azure"
    NAME_LABEL = "kubernetes.azure.com/agentpool"  # the label AKS sets on every node with its agent pool's name
    NAME_INPUT = "agentPoolName"
    MINIMUM_KEY = "gpuready:minCount"
    RESERVED_ONLY_FIX = ("none on AKS: Azure deploys VMs past a capacity reservation group's reserved count without "
                         "its guarantee; keep maxCount at the reserved count and the group for this pool alone")

    @property
    def labels(self) -> dict[str, str]:
        """The labels its nodes carry: the pool's own, and the accelerator label AKS sets on a GPU pool's nodes."""
        return {**(self.props.get("nodeLabels") or {}),
                **(self.platform_facts.ACCELERATOR_LABEL if self.is_gpu else {})}

    @property
    def instance_types(self) -> list[str]:
        return [self.props.get("vmSize", "")]

    @property
    def minimum(self) -> tuple[int, str]:
        if not self.props.get("enableAutoScaling"):
            return int(self.props.get("count", 1)), "a fixed count (no autoscaling)"
        return int(self.props.get("minCount", 0)), "minCount"

    @property
    def spot(self) -> bool:
        return self.props.get("scaleSetPriority") == self.platform_facts.PRIORITY_SPOT

    @property
    def taints(self) -> list[Taint]:
        """``nodeTaints`` (``key=value:Effect``), and the taint AKS puts on every Spot node."""
        taints = []
        for text in self.props.get("nodeTaints") or []:
            key_value, _, effect = text.partition(":")
            key, _, value = key_value.partition("=")
            taints.append(Taint(key, value, effect))
        if self.spot:
            taints.append(Taint(*self.platform_facts.SPOT_TAINT))
        return taints

    @property
    def reservation(self) -> Optional[Reservation]:
        """The capacity reservation group its VMs come from (``capacityReservationGroupID``), with the facts the
        stack stamped on it; Azure deploys VMs past the group's reserved count without its guarantee, so it always
        falls back. None when it names none."""
        group = self.props.get("capacityReservationGroupID")
        if not group:
            return None
        zones = self.props.get("availabilityZones") or []
        return self.stamped_reservation(Reservation(self.platform_facts.RESERVATION_KIND, str(group), True,
                                                    zone=str(zones[0]) if len(zones) == 1 else None))

    def source(self, linked: Sequence[Resource] = ()) -> Source:
        """``scaleSetPriority`` (``Spot``: Spot, which no capacity reservation group serves), and the group its VMs
        come from: reserved first, then on-demand past the group's reserved count."""
        if self.spot:
            return Source((SPOT,), only=self.said_only)
        reserved = self.reservation
        if reserved is None:
            return Source((ON_DEMAND,), only=self.said_only)
        return Source((RESERVED, ON_DEMAND), reserved, self.said_only)

    @property
    def public_node_ips(self) -> bool:
        return bool(self.props.get("enableNodePublicIP"))

    @property
    def node_image(self) -> str:
        """Key of the platform descriptor's ``node_images``."""
        return self.platform_facts.node_image(get(self.props, "gpuProfile.driver"))

    @property
    def own_volume(self) -> Optional[tuple[int, str]]:
        return int(self.props.get("osDiskSizeGB", 128)), "osDiskSizeGB"

    @property
    def placement_note(self) -> str:
        """An NVL72 rack's pool (:func:`~gpuready_components.k8s_gpu.compute_domain.needs_compute_domains`) of more
        than one node: AKS puts no topology label on its nodes (the facts' ``NO_TOPOLOGY``), so no Topology places
        its gangs."""
        nodes = int(self.props.get("maxCount", self.props.get("count", 0)))
        if nodes > 1 and needs_compute_domains(tuple(r.gpu_model for r in self.gpu_rows)):
            return self.platform_facts.NO_TOPOLOGY
        return ""

    def capacity(self) -> Optional[PoolCapacity]:
        row = catalog.find("azure", self.props.get("vmSize", ""))
        if row is None:
            return None
        nodes = int(self.props.get("maxCount", self.props.get("count", 0)))
        return PoolCapacity("azure", (row.name,), nodes * row.gpus, nodes * (row.price_usd_hour or 0.0), (), (row,))


RoleAssignment = plain("RoleAssignment", "azure-native:authorization:RoleAssignment")


class UserAssignedIdentity(Resource):
    """A managed identity a cluster runs on (the AKS cluster of a pool on a capacity reservation group)."""

    TOKEN = "azure-native:managedidentity:UserAssignedIdentity"

    @classmethod
    def stand_in(cls, name: str, state: Mapping[str, Any], site: Site) -> tuple[Optional[str], dict[str, Any]]:
        """Its ARM id, and the principal and client ids Entra ID gives it (role assignments name the principal)."""
        return (f"/subscriptions/{site.azure_subscription}/resourceGroups/{state.get('resourceGroupName')}"
                f"/providers/Microsoft.ManagedIdentity/userAssignedIdentities/{name}"), \
            {"principalId": f"{name}-principal", "clientId": f"{name}-client"}
