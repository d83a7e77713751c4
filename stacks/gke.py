"""Reference stack ``gke``: a GKE cluster (or yours) with a GPU node pool and the NVIDIA software."""

from __future__ import annotations

from components.errors import ConfigError
from components.gke_gpu import (ClusterArgs, ExistingClusterArgs, GkeGpuCluster, GkeGpuClusterArgs, GpuNodePoolArgs,
                                GpuSharingArgs)

from .config import StackConfig
from .kubernetes import (API_ACCESS_KEYS, EXISTING_CLUSTER_KEYS, SOFTWARE_KEYS, api_allowed_cidrs, existing_cluster,
                         export, software_options)

KEYS = {
    "location": "region (regional cluster) or zone of the cluster (required), e.g. us-central1",
    "machineType": "GPU machine type (required): g2-standard-8 (L4), a2-highgpu-1g (A100), a3-highgpu-8g (H100), "
                   "or n1-standard-8 with accelerator",
    "accelerator": "N1 only: nvidia-tesla-t4 or nvidia-tesla-v100",
    "acceleratorCount": "N1 only: GPUs per node",
    "gpuDriverVersion": "DEFAULT or LATEST (GKE installs the driver), INSTALLATION_DISABLED (the GPU Operator does); "
                        "default follows install",
    "gpuSharing": "GKE's GPU sharing: {strategy: TIME_SHARING|MPS, maxClientsPerGpu}",
    "nodeLocations": "zones of the GPU pool (list), where the GPU is offered",
    "spot": "Spot VMs for the GPU pool (default false)",
    "minNodes": "GPU nodes kept when idle, in total (default 0)",
    "maxNodes": "most GPU nodes at once, in total (default 2): caps GPUs and cost",
    "diskSizeGb": "boot disk per GPU node, holding container images (default 200)",
    "nodeLabels": "extra labels of the GPU nodes (map)",
    "managedDcgm": "GKE's managed DCGM metrics in Cloud Monitoring (default true; the exporter chart is then off)",
    "releaseChannel": "GKE release channel of a new cluster (default REGULAR)",
    "network": "your VPC network and subnetwork for a new cluster: {network, subnetwork} (default: the stack creates "
               "both, with Cloud NAT)",
    "cloudNat": "Cloud Router + Cloud NAT so the private nodes pull images from the internet (default: true on the "
                "network the stack creates, false on yours; true needs network.subnetwork)",
    "labels": "resource labels for every Google Cloud resource (map)",
    **API_ACCESS_KEYS,
    **SOFTWARE_KEYS,
    **EXISTING_CLUSTER_KEYS,
}
"""The ``gpuready:`` keys this platform reads (besides ``platform``); ``gcp:project`` names the project."""
RENAMED = {"masterAuthorizedNetworks": "apiAllowedCidrs"}


def build(config: StackConfig) -> None:
    """Declare the stack's resources and export what ``gpuready smoke`` reads."""
    existing = existing_cluster(config)
    allowed = api_allowed_cidrs(config, existing is not None)
    if existing and config.get_bool("cloudNat", None) is not None:
        raise ConfigError("gpuready:cloudNat", config.get_bool("cloudNat", None), "only read when the stack creates "
                          "the cluster", "remove it; your cluster's network keeps its own NAT")
    network = config.get_object("network", {"network": str, "subnetwork": str}, {})
    sharing = config.get_object("gpuSharing", {"strategy": str, "maxClientsPerGpu": int})
    defaults = GpuSharingArgs()
    cluster = GkeGpuCluster("gke", GkeGpuClusterArgs(
        location=config.require_str("location"),
        cluster=None if existing else ClusterArgs(
            network=network.get("network"), subnetwork=network.get("subnetwork"),
            cloud_nat=config.get_bool("cloudNat", None),
            release_channel=config.get_str("releaseChannel", "REGULAR"),
            master_authorized_networks=allowed,
            managed_dcgm=config.get_bool("managedDcgm", True)),
        existing_cluster=ExistingClusterArgs(name=existing[0], kubeconfig=existing[1]) if existing else None,
        node_pool=GpuNodePoolArgs(
            machine_type=config.require_str("machineType"),
            accelerator=config.get_str("accelerator"),
            accelerator_count=config.get_int("acceleratorCount", None),
            gpu_driver_version=config.get_str("gpuDriverVersion"),
            gpu_sharing=GpuSharingArgs(strategy=sharing.get("strategy", defaults.strategy),
                                       max_clients_per_gpu=sharing.get("maxClientsPerGpu",
                                                                       defaults.max_clients_per_gpu))
            if sharing is not None else None,
            node_locations=config.get_list("nodeLocations", []),
            spot=config.get_bool("spot", False),
            min_nodes=config.get_int("minNodes", 0),
            max_nodes=config.get_int("maxNodes", 2),
            disk_size_gb=config.get_int("diskSizeGb", 200),
            labels=config.get_object("nodeLabels", None, {}),
        ),
        software=software_options(config),
        labels=config.get_object("labels", None, {}),
    ))
    export(cluster)
