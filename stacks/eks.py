"""Reference stack ``eks``: an EKS cluster (or yours) with a GPU managed node group and the NVIDIA software."""

from __future__ import annotations

import pulumi

from components.aws_network import AwsNetwork, AwsNetworkArgs
from components.eks_gpu import ClusterArgs, EksGpuCluster, EksGpuClusterArgs, ExistingClusterArgs, GpuNodeGroupArgs
from components.errors import ConfigError
from components.k8s_gpu import GpuSoftwareOptions, MigArgs

from .config import StackConfig

KEYS = {
    "instanceTypes": "GPU instance types of the node group (list, required), e.g. [g6.xlarge, g6.2xlarge]",
    "amiType": "EKS AMI type (default AL2023_x86_64_NVIDIA; BOTTLEROCKET_x86_64_NVIDIA also ships the device plugin)",
    "capacityType": "ON_DEMAND (default) or SPOT",
    "minSize": "GPU nodes kept when idle (default 0: no idle GPUs billed)",
    "maxSize": "most GPU nodes at once (default 2): caps GPUs and cost",
    "desiredSize": "GPU nodes at creation (default minSize); the autoscaler owns it afterwards",
    "rootVolumeGiB": "encrypted gp3 volume for container images per node (default 200)",
    "nodeLabels": "extra labels of the GPU nodes (map); nvidia.com/gpu.present=true is always set",
    "install": "device-plugin (default: NVIDIA device plugin + DCGM exporter charts) or gpu-operator",
    "timeSlicingReplicas": "share each GPU between this many pods (2-64) by time-slicing",
    "mig": "partition GPUs with MIG: {strategy: single|mixed, config: all-balanced|all-1g.10gb...} (gpu-operator)",
    "gpuFeatureDiscovery": "label nodes with GPU product, memory and CUDA version (default true)",
    "dcgmExporter": "run NVIDIA's DCGM exporter for GPU metrics (default true)",
    "prometheusOperator": "create a ServiceMonitor for the DCGM exporter; needs the Prometheus Operator's CRDs",
    "kubernetesVersion": "Kubernetes version of a new cluster (default: EKS's default)",
    "endpointPublicAccess": "public API endpoint (default true); false: private only, run pulumi inside the VPC",
    "publicAccessCidrs": "allow-list of the public API endpoint (list of CIDRs; default anywhere)",
    "existingCluster": "name of an existing EKS cluster to add the GPU node group to, instead of creating one",
    "kubeconfig": "kubeconfig of existingCluster (set it with --secret)",
    "network": "existing network {vpcId, subnetIds}; or {cidrBlock, availabilityZones} for a new VPC",
    "tags": "tags for every AWS resource (map)",
}
"""The ``gpuready:`` keys this platform reads (besides ``platform``)."""

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

    existing_name = config.get_str("existingCluster")
    kubeconfig = config.get_secret("kubeconfig")
    if existing_name and kubeconfig is None:
        raise ConfigError("gpuready:kubeconfig", None, "needed with existingCluster to install the GPU software",
                          "pulumi config set --secret gpuready:kubeconfig \"$(cat KUBECONFIG)\"")
    if kubeconfig is not None and not existing_name:
        raise ConfigError("gpuready:kubeconfig", "[secret]", "only read with existingCluster",
                          "set gpuready:existingCluster too, or remove gpuready:kubeconfig")
    public_cidrs = config.get_list("publicAccessCidrs", [])
    mig = config.get_object("mig", {"strategy": str, "config": str})
    defaults = GpuSoftwareOptions()

    cluster = EksGpuCluster("eks", EksGpuClusterArgs(
        subnet_ids=subnet_ids,
        cluster=None if existing_name else ClusterArgs(
            version=config.get_str("kubernetesVersion"),
            endpoint_public_access=config.get_bool("endpointPublicAccess", True),
            public_access_cidrs=public_cidrs),
        existing_cluster=ExistingClusterArgs(name=existing_name, kubeconfig=kubeconfig) if existing_name else None,
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
        software=GpuSoftwareOptions(
            install=config.get_str("install", defaults.install),
            time_slicing_replicas=config.get_int("timeSlicingReplicas", None),
            mig=MigArgs(**mig) if mig is not None else None,
            gpu_feature_discovery=config.get_bool("gpuFeatureDiscovery", defaults.gpu_feature_discovery),
            dcgm_exporter=config.get_bool("dcgmExporter", defaults.dcgm_exporter),
            prometheus_operator=config.get_bool("prometheusOperator", defaults.prometheus_operator),
        ),
        tags=tags,
    ))

    cap = cluster.capacity
    pulumi.export("platform", "eks")
    pulumi.export("clusterName", cluster.cluster_name)
    pulumi.export("kubeconfig", cluster.kubeconfig)
    pulumi.export("nodeGroupName", cluster.node_group_name)
    pulumi.export("gpuTaint", cluster.gpu_taint)
    pulumi.export("gpuNodeLabels", cluster.gpu_node_labels)
    if cluster.software.namespace is not None:
        pulumi.export("gpuNamespace", cluster.software.namespace)
    pulumi.export("gpuModels", list(cap.gpu_models))
    pulumi.export("maxGpusPerNode", cap.max_gpus_per_node)
    pulumi.export("maxGpus", cap.max_gpus)
    pulumi.export("maxUsdPerHour", cap.max_usd_per_hour)
