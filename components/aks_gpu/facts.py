"""Azure Kubernetes Service platform facts, in one table. Tests check each value AKS constrains against
azure-mgmt-containerservice's enums."""

from __future__ import annotations

from types import MappingProxyType

from ..k8s_gpu.kubeconfig import CredentialPlugin
from ..k8s_gpu.facts import (DRIVER_TOOLKIT, MIG_PARTITIONING, STARTUP_BURN_IN_TAINT, CapacityLabel, NodeFacts,
                              NodeImage, Taint)

NO_TOPOLOGY = "AKS publishes no topology labels: no Topology (docs/queues/topology.md)"
"""What ``gpuready plan`` says under the flavor of an AKS pool built for gangs across nodes (an NVL72 rack's): AKS
documents no node label for a VM's place in Azure's network, so Kueue cannot place its gangs by topology; the rack's
NVLink domain is ``nvidia.com/gpu.clique`` (GPU feature discovery), which the ComputeDomain's pods share."""

TYPE_TOKEN = "gpuready:azure:AksGpuCluster"
"""Never change: renaming a type token replaces every cloud resource under it."""

CLUSTER_NAME = r"[a-zA-Z0-9]|[a-zA-Z0-9][-_a-zA-Z0-9]{0,61}[a-zA-Z0-9]"
"""An AKS cluster's name (the managed-cluster operations' ``resourceName`` in azure-mgmt-containerservice up to
version 19, and the AKS REST specification: that pattern, at most 63 characters)."""
RESOURCE_GROUP_NAME = r"[-\w.()]{0,89}[-\w()]"
"""A resource group's name: 1 to 90 letters, digits, ``_``, ``-``, ``.``, ``(``, ``)``, not ending in ``.`` (the same
operations' ``resourceGroupName``: at most 90; Azure Resource Manager's naming rules)."""
SUBNET_ID = (r"/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Network/virtualNetworks/[^/]+"
             r"/subnets/[^/]+")
"""A subnet's resource id, as ``vnetSubnetID`` takes it (case-insensitive: Azure resource ids are), the form
azure-mgmt-containerservice's ``ManagedClusterAgentPoolProfile.vnet_subnet_id`` documents."""

GPU_DRIVER_INSTALL = "Install"
GPU_DRIVER_NONE = "None"
"""``gpuProfile.driver``: AKS installs the driver (``Install``), or leaves it to the GPU Operator (``None``)."""
MODE_USER = "User"
MODE_SYSTEM = "System"
PRIORITY_REGULAR = "Regular"
PRIORITY_SPOT = "Spot"
SPOT_EVICTION_POLICY = "Delete"
"""Evicted Spot nodes are deleted, so a scaled-down pool bills nothing (``Deallocate`` keeps their disks)."""
SPOT_TAINT = ("kubernetes.azure.com/scalesetpriority", "spot", "NoSchedule")
"""AKS taints every Spot node so; the NVIDIA daemonsets must tolerate it as well as the GPU taint."""
OS_SKU = "Ubuntu"
"""The GPU Operator supports Ubuntu nodes on AKS; AKS's own GPU driver supports Ubuntu and Azure Linux."""
OS_DISK_GB_RANGE = (40, 2048)
MIG_PROFILES = MappingProxyType({"1g": "MIG1g", "2g": "MIG2g", "3g": "MIG3g", "4g": "MIG4g", "7g": "MIG7g"})
"""MIG compute slice of a profile (``1g.10gb``) -> AKS ``gpuInstanceProfile``."""
ZONES = ("1", "2", "3")
SYSTEM_VM_SIZE = "Standard_D4s_v5"
SYSTEM_POOL_NAME = "system"
GPU_POOL_NAME = "gpu"
SYSTEM_NODE_LABELS = MappingProxyType({"kubernetes.azure.com/mode": "system"})
"""Label AKS puts on the nodes of every System-mode pool, a new cluster's and an existing one's alike (AKS docs,
Manage system node pools): Kueue's controller selects them."""
"""Agent pool names: lowercase letters and digits, 12 characters at most for Linux."""
DEPLOYER_PRINCIPAL_TYPES = ("User", "ServicePrincipal")
GROUP_PRINCIPAL_TYPE = "Group"
"""``principalType`` of a role assignment: Azure refuses one that does not match the principal."""
AAD_SERVER_APP_ID = "6dae42f8-4368-4678-94ff-3960e28e3630"
"""The Azure Kubernetes Service AAD server application every AKS cluster with Entra ID accepts tokens for."""

IDENTITY_SYSTEM_ASSIGNED = "SystemAssigned"
IDENTITY_USER_ASSIGNED = "UserAssigned"
"""``identity.type`` of a managed cluster (azure-mgmt-containerservice ``ResourceIdentityType``): system-assigned by
default; user-assigned on a capacity reservation group, which a system-assigned identity cannot use (AKS docs,
"Assign capacity reservation groups to AKS node pools")."""
CAPACITY_RESERVATION_GROUP_ID = (r"/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Compute"
                                 r"/capacityReservationGroups/[^/]+")
"""A capacity reservation group's resource id, as ``capacityReservationGroupID`` takes it (case-insensitive), the form
azure-mgmt-containerservice's ``AgentPool.capacity_reservation_group_id`` documents."""
MANAGED_IDENTITY_PRINCIPAL_TYPE = "ServicePrincipal"
"""``principalType`` of a role assignment to a managed identity (a service principal in Entra ID)."""
# AKS labels no node with the capacity reservation group it came from (AKS docs, "Use labels": the
# kubernetes.azure.com/ labels AKS sets name the pool, mode, OS, image, accelerator, Spot priority; none the group):
# only the agent pool's capacityReservationGroupID says it. The one capacity label AKS sets is Spot's, the key and
# value of SPOT_TAINT (kubernetes.azure.com/scalesetpriority=spot).


ACCELERATOR_LABEL = MappingProxyType({"kubernetes.azure.com/accelerator": "nvidia"})
"""The label AKS puts on every node of a GPU agent pool (AKS docs, Use labels)."""

NODES = NodeFacts(
    "aks", Taint("sku", "gpu", "NoSchedule"),
    (("kubernetes.azure.com/accelerator", "In", ("nvidia",)),),
    MappingProxyType({"kubernetes.azure.com/accelerator": "nvidia", "kubernetes.azure.com/agentpool": "gpu"}),
    "AKS labels GPU nodes kubernetes.azure.com/accelerator=nvidia (AKS docs, Use labels) and its GPU guide "
    "taints GPU pools sku=gpu:NoSchedule (AKS docs, Use GPUs on AKS)", burn_in_taint=STARTUP_BURN_IN_TAINT,
    sharing_fix="use the device plugin the charts install",
    # Spot's label is the one capacity label AKS sets (see above): a reserved node reads as unlabelled, not on-demand.
    capacity_labels=(CapacityLabel(SPOT_TAINT[0], MappingProxyType({SPOT_TAINT[1]: "spot"})),))
"""How this platform's GPU nodes register: their taint, the labels they carry from boot (its descriptor's ``node``)."""

NODE_IMAGES = MappingProxyType({
    "aks/driver-installed": NodeImage(
        "aks", frozenset(DRIVER_TOOLKIT | {MIG_PARTITIONING}),
        "AKS GPU node image with gpuProfile.driver Install: driver and NVIDIA container runtime; AKS creates MIG "
        "instances from gpuInstanceProfile; no device plugin"),
    "aks/driver-none": NodeImage(
        "aks", frozenset(),
        "AKS with gpuProfile.driver None: no driver or toolkit, and no MIG instances (for the GPU Operator)"),
})
"""``PLATFORM/IMAGE`` -> what this platform's GPU node images ship before any chart (its descriptor's ``node_images``)."""

CREDENTIALS = CredentialPlugin("kubelogin", "kubelogin get-token", lambda args: list(args[:1]) == ["get-token"])
"""The kubeconfig's credential plugin (``kubelogin get-token``, from the Azure CLI's login)."""


def node_image(driver: object) -> str:
    """Key of ``NODE_IMAGES`` for an agent pool whose ``gpuProfile.driver`` is ``driver``."""
    return "aks/driver-none" if driver == GPU_DRIVER_NONE else "aks/driver-installed"


RESERVATION_KIND = "capacity-reservation-group"
"""A reservation's kind, as readers and ``gpuready plan`` name it."""
