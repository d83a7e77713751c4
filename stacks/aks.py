"""Reference stack ``aks``: an AKS cluster (or yours) with a GPU agent pool and the NVIDIA software."""

from __future__ import annotations

from components.aks_gpu import AksGpuCluster, AksGpuClusterArgs, ClusterArgs, ExistingClusterArgs, GpuAgentPoolArgs

from .config import StackConfig
from .kubernetes import (API_ACCESS_KEYS, EXISTING_CLUSTER_KEYS, SOFTWARE_KEYS, api_allowed_cidrs, existing_cluster,
                         export, software_options)

KEYS = {
    "resourceGroupName": "resource group of the cluster (required; an existing one)",
    "vmSize": "GPU VM size (required): Standard_NC4as_T4_v3, Standard_NC24ads_A100_v4, Standard_ND96isr_H100_v5...",
    "spot": "Spot priority for the GPU pool (default false); evicted nodes are deleted",
    "minCount": "GPU nodes kept when idle (default 0)",
    "maxCount": "most GPU nodes at once (default 2): caps GPUs and cost",
    "osDiskSizeGb": "OS disk per GPU node, holding container images (default 200)",
    "availabilityZones": "zones of the GPU pool (list of 1, 2, 3)",
    "nodeLabels": "extra labels of the GPU nodes (map)",
    "kubernetesVersion": "Kubernetes version of a new cluster (default: AKS's default)",
    "deployerAdmin": "grant whoever runs pulumi up Azure Kubernetes Service RBAC Cluster Admin on the new cluster "
                     "(default true)",
    "deployerPrincipalType": "what runs pulumi up: User (default, az login) or ServicePrincipal (CI)",
    "adminGroupObjectIds": "Entra ID groups made admins of the new cluster (list of object IDs)",
    "vnetSubnetId": "subnet for the nodes of a new cluster (default: AKS creates a network)",
    "tags": "tags for every Azure resource (map)",
    **API_ACCESS_KEYS,
    **SOFTWARE_KEYS,
    **EXISTING_CLUSTER_KEYS,
}
"""The ``gpuready:`` keys this platform reads (besides ``platform``); ``azure-native:location`` is the region."""
RENAMED = {"authorizedIpRanges": "apiAllowedCidrs"}


def build(config: StackConfig) -> None:
    """Declare the stack's resources and export what ``gpuready smoke`` reads."""
    import pulumi

    existing = existing_cluster(config)
    allowed = api_allowed_cidrs(config, existing is not None)
    location = pulumi.Config("azure-native").get("location") or "eastus"
    cluster = AksGpuCluster("aks", AksGpuClusterArgs(
        resource_group_name=config.require_str("resourceGroupName"),
        location=location,
        cluster=None if existing else ClusterArgs(
            kubernetes_version=config.get_str("kubernetesVersion"),
            authorized_ip_ranges=allowed,
            vnet_subnet_id=config.get_str("vnetSubnetId"),
            deployer_admin=config.get_bool("deployerAdmin", True),
            deployer_principal_type=config.get_str("deployerPrincipalType", "User"),
            admin_group_object_ids=config.get_list("adminGroupObjectIds", [])),
        existing_cluster=ExistingClusterArgs(name=existing[0], kubeconfig=existing[1]) if existing else None,
        node_pool=GpuAgentPoolArgs(
            vm_size=config.require_str("vmSize"),
            spot=config.get_bool("spot", False),
            min_count=config.get_int("minCount", 0),
            max_count=config.get_int("maxCount", 2),
            os_disk_size_gb=config.get_int("osDiskSizeGb", 200),
            availability_zones=config.get_list("availabilityZones", []),
            labels=config.get_object("nodeLabels", None, {}),
        ),
        software=software_options(config),
        tags=config.get_object("tags", None, {}),
    ))
    export(cluster)
