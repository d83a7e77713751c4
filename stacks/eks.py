"""Reference stack ``eks``: an EKS cluster (or yours) with a GPU managed node group and the NVIDIA software."""

from __future__ import annotations

from components.aws_network import AwsNetwork, AwsNetworkArgs
from components.eks_gpu import AutoscalerArgs, ClusterArgs, EksGpuCluster, EksGpuClusterArgs, ExistingClusterArgs, GpuNodeGroupArgs
from components.errors import ConfigError

from .config import StackConfig
from .kubernetes import (API_ACCESS_KEYS, EXISTING_CLUSTER_KEYS, SOFTWARE_KEYS, api_allowed_cidrs, existing_cluster,
                         export, software_options)

KEYS = {
    "instanceTypes": "GPU instance types of the node group (list, required), e.g. [g6.xlarge, g6.2xlarge]",
    "amiType": "EKS AMI type (default AL2023_x86_64_NVIDIA; BOTTLEROCKET_x86_64_NVIDIA also ships the device plugin)",
    "capacityType": "ON_DEMAND (default) or SPOT",
    "minSize": "GPU nodes kept when idle (default 0: no idle GPUs billed)",
    "maxSize": "most GPU nodes at once (default 2): caps GPUs and cost",
    "desiredSize": "GPU nodes at creation (default minSize); the autoscaler owns it afterwards",
    "rootVolumeGiB": "encrypted gp3 volume for container images per node (default 200)",
    "nodeLabels": "extra labels of the GPU nodes (map); nvidia.com/gpu.present=true is always set",
    "kubernetesVersion": "Kubernetes version of a new cluster (default 1.34), or of existingCluster (needed there "
                         "with autoscaler cluster-autoscaler, to match its image)",
    "autoscaler": "what scales GPU nodes from zero: cluster-autoscaler (default for a new cluster), karpenter, "
                  "auto-mode (new cluster in EKS Auto Mode) or none (default for existingCluster: its own autoscaler)",
    "endpointPublicAccess": "public API endpoint (default true); false: private only, run pulumi inside the VPC",
    "network": "existing network {vpcId, subnetIds}; or {cidrBlock, availabilityZones} for a new VPC",
    "tags": "tags for every AWS resource (map)",
    **API_ACCESS_KEYS,
    **SOFTWARE_KEYS,
    **EXISTING_CLUSTER_KEYS,
}
"""The ``gpuready:`` keys this platform reads (besides ``platform``)."""
RENAMED = {"publicAccessCidrs": "apiAllowedCidrs"}

_NETWORK_KEYS = {"vpcId": str, "subnetIds": list, "cidrBlock": str, "availabilityZones": int}


def build(config: StackConfig) -> None:
    """Declare the stack's resources and export what ``gpuready smoke`` reads."""
    tags = config.get_object("tags", None, {})
    network = config.get_object("network", _NETWORK_KEYS, {})
    if network.get("subnetIds"):
        subnet_ids = network["subnetIds"]
    else:
        if network.get("vpcId"):
            raise ConfigError("gpuready:network.subnetIds", None, "vpcId given without subnets",
                              "give subnetIds too, or drop the network key to create a VPC")
        vpc = AwsNetwork("gpu", AwsNetworkArgs(
            cidr_block=network.get("cidrBlock", "10.42.0.0/16"),
            availability_zones=network.get("availabilityZones", 2), tags=tags))
        subnet_ids = vpc.private_subnet_ids

    existing = existing_cluster(config)
    public = config.get_bool("endpointPublicAccess", True)
    allowed = api_allowed_cidrs(config, existing is not None, public)

    cluster = EksGpuCluster("eks", EksGpuClusterArgs(
        subnet_ids=subnet_ids,
        cluster=None if existing else ClusterArgs(
            version=config.get_str("kubernetesVersion"),
            endpoint_public_access=public, public_access_cidrs=allowed),
        existing_cluster=ExistingClusterArgs(name=existing[0], kubeconfig=existing[1]) if existing else None,
        autoscaler=AutoscalerArgs(mode=config.get_str("autoscaler"),
                                  kubernetes_version=config.get_str("kubernetesVersion") if existing else None),
        node_group=GpuNodeGroupArgs(
            instance_types=config.get_list("instanceTypes") or [],
            ami_type=config.get_str("amiType", "AL2023_x86_64_NVIDIA"),
            capacity_type=config.get_str("capacityType", "ON_DEMAND"),
            min_size=config.get_int("minSize", 0),
            max_size=config.get_int("maxSize", 2),
            desired_size=config.get_int("desiredSize", None),
            root_volume_gib=config.get_int("rootVolumeGiB", 200),
            labels=config.get_object("nodeLabels", None, {}),
        ),
        software=software_options(config),
        tags=tags,
    ))

    export(cluster)
