"""Reference stack ``gke``: a GKE cluster (or yours) with a GPU node pool and the NVIDIA software."""

from __future__ import annotations

from gpuready_components.errors import ConfigError
from gpuready_components.gke_gpu import (ClusterArgs, ExistingClusterArgs, FlexStartArgs, GkeGpuCluster, GkeGpuClusterArgs,
                                GpuNodePoolArgs, GpuSharingArgs, ReservationArgs)

from . import teams
from .config import StackConfig
from .kubernetes import api_allowed_cidrs, existing_cluster, export, kubernetes_settings, software_options
from .settings import Setting, args_of, object_of

NP = GpuNodePoolArgs
R, F = ReservationArgs, FlexStartArgs
_R, _F = "node_pool.reservation.", "node_pool.flex_start."
SETTINGS = kubernetes_settings(
    "cluster.master_authorized_networks", "GKE's master authorized networks",
    Setting("location", str, "region (regional cluster) or zone of the cluster, e.g. `us-central1`", ("location",),
            required=True),
    Setting("machineType", str, "GPU machine type: `g2-standard-*` (L4), `a2-highgpu-*`/`a2-ultragpu-*` (A100), "
            "`a3-highgpu-8g` (H100), or `n1-standard-*` with `accelerator`", ("node_pool.machine_type",),
            required=True),
    Setting("accelerator", str, "N1 only: `nvidia-tesla-t4` or `nvidia-tesla-v100`; any other pairing is refused",
            ("node_pool.accelerator",), NP),
    Setting("acceleratorCount", int, "N1 only: GPUs per node", ("node_pool.accelerator_count",), NP),
    Setting("gpuDriverVersion", str, "`DEFAULT`, `LATEST` (GKE installs) or `INSTALLATION_DISABLED` (the GPU Operator "
            "does); default follows `install`", ("node_pool.gpu_driver_version",), NP),
    Setting("gpuSharing", dict, "GKE's GPU sharing: `{strategy: TIME_SHARING|MPS, maxClientsPerGpu}` (2-48)",
            ("node_pool.gpu_sharing",), sub=(
                Setting("strategy", str, fields=("node_pool.gpu_sharing.strategy",), feeds=GpuSharingArgs),
                Setting("maxClientsPerGpu", int, fields=("node_pool.gpu_sharing.max_clients_per_gpu",),
                        feeds=GpuSharingArgs))),
    Setting("nodeLocations", list, "zones of the GPU pool, where the GPU is offered: zones of the cluster's region "
            "(`REGION-LETTER`, e.g. `us-central1-a` for `location: us-central1`), checked by name",
            ("node_pool.node_locations",), NP),
    Setting("spot", bool, "Spot VMs for the GPU pool", ("node_pool.spot",), NP),
    # GKE quota "Nodes per node pool zone": 1,000 (cloud.google.com/kubernetes-engine/quotas).
    Setting("minNodes", int, "GPU nodes kept when idle, in total", ("node_pool.min_nodes",), NP, most=1_000),
    Setting("maxNodes", int, "most GPU nodes at once, in total; caps GPUs and cost", ("node_pool.max_nodes",), NP,
            most=1_000),
    Setting("diskSizeGb", int, "boot disk per GPU node, holding container images", ("node_pool.disk_size_gb",), NP),
    Setting("nodeLabels", dict, "extra node labels (map)", ("node_pool.labels",), NP),
    Setting("reservation", dict, "a Compute Engine reservation the GPU pool consumes: `{affinity: specific, name: "
            "NAME}` (that reservation only; a shared one as `projects/PROJECT/reservations/NAME`), `{affinity: any}` "
            "(any matching one, then on-demand) or `{affinity: none}`; `only: true` says reservations only; optional "
            "known facts `machineType`, `zone`, `count`, `start`, `end`, checked at preview",
            ("node_pool.reservation",), default={}, sub=(
                Setting("affinity", str, fields=(_R + "affinity",)),  # required: no default
                Setting("name", str, fields=(_R + "name",), feeds=R),
                Setting("only", bool, fields=(_R + "only",), feeds=R),
                Setting("machineType", str, fields=(_R + "machine_type",), feeds=R),
                Setting("zone", str, fields=(_R + "zone",), feeds=R),
                Setting("count", int, fields=(_R + "count",), feeds=R),
                Setting("start", str, fields=(_R + "start",), feeds=R),
                Setting("end", str, fields=(_R + "end",), feeds=R))),
    Setting("flexStart", dict, "flex-start VMs (Dynamic Workload Scheduler) for the GPU pool: `{queued: true}` (queued "
            "provisioning: a team's job waits in Kueue until all its nodes come; needs `teams`) or `{queued: false}`, "
            "and `maxRunDurationSeconds` (at most 604800, seven days); no reservation, no Spot, `minNodes` 0",
            ("node_pool.flex_start",), default={}, sub=(
                Setting("queued", bool, fields=(_F + "queued",), feeds=F),
                Setting("maxRunDurationSeconds", int, fields=(_F + "max_run_duration_seconds",), feeds=F))),
    Setting("managedDcgm", bool, "GKE's managed DCGM metrics in Cloud Monitoring; the DCGM exporter chart is then not "
            "installed", ("cluster.managed_dcgm",), ClusterArgs),
    Setting("managedAlerts", bool, "the GPU alerts in Google Cloud Managed Service for Prometheus: a PodMonitoring of "
            "the DCGM exporter and a ClusterRules of the GPU alerts; needs `managedDcgm: false` (the alerts read "
            "gpuready's exporter)", ("managed_alerts",), GkeGpuClusterArgs),
    Setting("kubernetesVersion", str, "the oldest Kubernetes version a new cluster starts at (GKE's "
            "`minMasterVersion`; default: the release channel's); with `existingCluster`, that cluster's version; "
            "required with `install: dra` (1.34 or later)", ("cluster.kubernetes_version",
                                                            "existing_cluster.kubernetes_version"), ClusterArgs),
    Setting("releaseChannel", str, "GKE release channel of a new cluster: `REGULAR`, `RAPID`, `STABLE`, `EXTENDED`",
            ("cluster.release_channel",), ClusterArgs),
    Setting("network", dict, "your `{network, subnetwork}` for a new cluster (default: the stack creates a network and "
            "a subnetwork in the cluster's region: nodes 10.10.0.0/20, pods 10.12.0.0/14, services 10.10.16.0/20, "
            "Private Google Access on)", default={}, sub=(
                Setting("network", str, fields=("cluster.network",)),
                Setting("subnetwork", str, fields=("cluster.subnetwork",)))),
    Setting("cloudNat", bool, "Cloud Router + Cloud NAT for the nodes' subnetwork (default: true on the network the "
            "stack creates; false on yours, where true needs `network.subnetwork`)", ("cluster.cloud_nat",),
            ClusterArgs),
    Setting("labels", dict, "resource labels for every Google Cloud resource (map)", ("labels",), GkeGpuClusterArgs),
)
"""The ``gpuready:`` keys this platform reads (besides ``platform``)."""
CLOUD_KEYS = {"gcp:project": "Google Cloud project (required)"}
RENAMED = {"masterAuthorizedNetworks": "apiAllowedCidrs"}


def build(config: StackConfig) -> None:
    """Declare the stack's resources and export what ``gpuready smoke`` reads."""
    read = config.read
    existing = existing_cluster(config)
    allowed = api_allowed_cidrs(config, existing is not None)
    if existing and read("cloudNat") is not None:
        raise ConfigError("gpuready:cloudNat", read("cloudNat"), "only read when the stack creates the cluster",
                          "remove it; your cluster's network keeps its own NAT")
    network, sharing, flex = read("network"), read("gpuSharing"), read("flexStart")
    cluster = GkeGpuCluster("gke", GkeGpuClusterArgs(**config.args(
        cluster=None if existing else ClusterArgs(**config.args(
            "cluster", network=network.get("network"), subnetwork=network.get("subnetwork"),
            master_authorized_networks=allowed)),
        existing_cluster=ExistingClusterArgs(name=existing[0], kubeconfig=existing[1],
                                             kubernetes_version=read("kubernetesVersion")) if existing else None,
        node_pool=GpuNodePoolArgs(**config.args(
            "node_pool", gpu_sharing=GpuSharingArgs(**args_of(SETTINGS["gpuSharing"], sharing))
            if sharing is not None else None, reservation=_reservation(config),
            flex_start=FlexStartArgs(**args_of(SETTINGS["flexStart"], flex)) if flex else None)),
        software=software_options(config),
        teams=teams.args(config),
    )))
    export(cluster)


def _reservation(config: StackConfig) -> ReservationArgs | None:
    """``gpuready:reservation`` as the GPU pool's reservation (none when the key is absent or empty)."""
    return object_of(SETTINGS["reservation"], config.read("reservation"), ReservationArgs, "affinity",
                     "set affinity: specific (with name), any or none")
