"""Reference stack ``aks``: an AKS cluster (or yours) with a GPU agent pool and the NVIDIA software."""

from __future__ import annotations

from gpuready_components.aks_gpu import (AksGpuCluster, AksGpuClusterArgs, CapacityReservationGroupArgs, ClusterArgs,
                                        ExistingClusterArgs, GpuAgentPoolArgs)
from gpuready_components.errors import ConfigError

from . import teams
from .config import StackConfig
from .kubernetes import api_allowed_cidrs, existing_cluster, export, kubernetes_settings, software_options
from .settings import Setting, args_of

AP = GpuAgentPoolArgs
R = CapacityReservationGroupArgs
_R = "node_pool.reservation."
SETTINGS = kubernetes_settings(
    "cluster.authorized_ip_ranges", "AKS's API server authorized IP ranges",
    Setting("resourceGroupName", str, "existing resource group", ("resource_group_name",), required=True),
    Setting("vmSize", str, "GPU VM size from the catalog, e.g. `Standard_NC16as_T4_v3`, "
            "`Standard_NC24ads_A100_v4`", ("node_pool.vm_size",), required=True),
    Setting("spot", bool, "Spot priority, evicted nodes deleted; AKS's Spot taint is tolerated too",
            ("node_pool.spot",), AP),
    # AKS "Maximum nodes per node pool" (Virtual Machine Scale Sets): 1,000
    # (learn.microsoft.com/azure/aks/quotas-skus-regions).
    Setting("minCount", int, "GPU nodes kept when idle", ("node_pool.min_count",), AP, most=1_000),
    Setting("maxCount", int, "most GPU nodes at once; caps GPUs and cost", ("node_pool.max_count",), AP, most=1_000),
    Setting("osDiskSizeGb", int, "OS disk per GPU node, holding container images", ("node_pool.os_disk_size_gb",), AP),
    Setting("availabilityZones", list, "zones of the GPU pool (`1`, `2`, `3`)", ("node_pool.availability_zones",),
            AP),
    Setting("nodeLabels", dict, "extra node labels (map)", ("node_pool.labels",), AP),
    Setting("reservation", dict, "an Azure capacity reservation group the GPU pool takes its VMs from: `{groupId: "
            "/subscriptions/.../capacityReservationGroups/NAME}` (a new cluster then gets a user-assigned identity "
            "with Contributor on the group's resource group); optional known facts `vmSize`, `count`, `zones`, "
            "`start`, `end`, checked at preview; VMs past the reserved count come without its guarantee, so `only: "
            "true` is refused, and so is Spot", ("node_pool.reservation",), default={}, sub=(
                Setting("groupId", str, fields=(_R + "group_id",)),  # required: no default
                Setting("vmSize", str, fields=(_R + "vm_size",), feeds=R),
                Setting("count", int, fields=(_R + "count",), feeds=R),
                Setting("zones", list, fields=(_R + "zones",), feeds=R),
                Setting("start", str, fields=(_R + "start",), feeds=R),
                Setting("end", str, fields=(_R + "end",), feeds=R),
                Setting("only", bool, fields=(_R + "only",), feeds=R))),
    Setting("kubernetesVersion", str, "Kubernetes version of a new cluster, 1.30 or newer (default: AKS's default); "
            "with `existingCluster`, that cluster's version; required with `install: dra` (1.34 or later)",
            ("cluster.kubernetes_version", "existing_cluster.kubernetes_version"), ClusterArgs),
    Setting("deployerAdmin", bool, "grant whoever runs `pulumi up` \"Azure Kubernetes Service RBAC Cluster Admin\" "
            "on the new cluster", ("cluster.deployer_admin",), ClusterArgs),
    Setting("deployerPrincipalType", str, "what runs `pulumi up`: `User` (`az login`) or `ServicePrincipal` (CI); "
            "Azure refuses a role assignment of the wrong type",
            ("cluster.deployer_principal_type",), ClusterArgs),
    Setting("adminGroupObjectIds", list, "Entra ID groups made admins of the new cluster, instead of "
            "(`deployerAdmin: false`) or besides the deployer (list of object IDs)",
            ("cluster.admin_group_object_ids",), ClusterArgs),
    Setting("vnetSubnetId", str, "subnet for the nodes of a new cluster (default: AKS creates a network)",
            ("cluster.vnet_subnet_id",), ClusterArgs),
    Setting("tags", dict, "tags for every Azure resource (map)", ("tags",), AksGpuClusterArgs),
)
"""The ``gpuready:`` keys this platform reads (besides ``platform``)."""
CLOUD_KEYS = {"azure-native:location": "Azure region (the reference stack: eastus)"}
RENAMED = {"authorizedIpRanges": "apiAllowedCidrs"}


def build(config: StackConfig) -> None:
    """Declare the stack's resources and export what ``gpuready smoke`` reads."""
    import pulumi

    existing = existing_cluster(config)
    allowed = api_allowed_cidrs(config, existing is not None)
    location = pulumi.Config("azure-native").get("location") or "eastus"
    cluster = AksGpuCluster("aks", AksGpuClusterArgs(**config.args(
        location=location,
        cluster=None if existing else ClusterArgs(**config.args("cluster", authorized_ip_ranges=allowed)),
        existing_cluster=ExistingClusterArgs(name=existing[0], kubeconfig=existing[1],
                                             kubernetes_version=config.read("kubernetesVersion")) if existing else None,
        node_pool=GpuAgentPoolArgs(**config.args("node_pool", reservation=_reservation(config))),
        software=software_options(config),
        teams=teams.args(config),
    )))
    export(cluster)


def _reservation(config: StackConfig) -> CapacityReservationGroupArgs | None:
    """``gpuready:reservation`` as the GPU pool's capacity reservation group (none when the key is absent or empty)."""
    value = config.read("reservation")
    if not value:
        return None
    if "groupId" not in value:
        raise ConfigError("gpuready:reservation.groupId", None, "the capacity reservation group's id is required",
                          "set groupId: /subscriptions/SUB/resourceGroups/RG/providers/Microsoft.Compute/"
                          "capacityReservationGroups/NAME")
    return CapacityReservationGroupArgs(**args_of(SETTINGS["reservation"], value))
