"""Construction-time checks of :class:`GkeGpuClusterArgs`: an impossible setup fails at preview.

:func:`check` raises :class:`~gpuready_components.errors.ConfigError` naming the field, the value and the fix, and returns
the catalog facts and the settings the component derives.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
from dataclasses import dataclass
from typing import Callable, Optional

from .. import catalog
from ..errors import ConfigError
from ..inputs import checked, pattern
from ..k8s_gpu.args import GpuSoftwareOptions
from ..k8s_gpu.facts import kubernetes_version
from ..k8s_gpu.validation import check_cluster_choice, check_dra_version, check_labels, check_options, mig_profiles
from . import facts, reservation
from .args import GkeGpuClusterArgs, GpuNodePoolArgs

CLUSTER_NAME = pattern(facts.CLUSTER_NAME, "a GKE cluster name (up to 40 lowercase letters, digits and '-', from a "
                       "letter)", "give the cluster's name as `gcloud container clusters list` shows it")

_LOCATION = re.compile(facts.LOCATION)
region = facts.region


@dataclass(frozen=True)
class GkeCapacity:
    """What the node pool can offer, from the catalog, and the settings derived from the inputs."""

    machine: catalog.GpuInstanceType
    node_image: str
    """Key of the platform descriptor's ``node_images``."""
    driver_version: str
    partition_size: Optional[str]
    software: GpuSoftwareOptions
    """The software options with GKE's defaults filled in."""
    max_gpus: int
    max_usd_per_hour: float

    @property
    def gpu_models(self) -> tuple[str, ...]:
        return (self.machine.gpu_model,)

    @property
    def max_gpus_per_node(self) -> int:
        return self.machine.gpus


def _machine(pool: GpuNodePoolArgs) -> catalog.GpuInstanceType:
    family = pool.machine_type.split("-")[0]
    accelerators = facts.FAMILY_ACCELERATORS.get(family)
    if accelerators is None:
        raise ConfigError("node_pool.machine_type", pool.machine_type, "not a GPU machine family",
                          "use G2 (L4), A2 (A100), A3 (H100), or N1 with an accelerator (T4, V100)")
    if family in facts.ATTACHED_GPU_FAMILIES:
        if pool.accelerator not in accelerators:
            raise ConfigError("node_pool.accelerator", pool.accelerator, f"{family.upper()} machines take only "
                              f"{', '.join(accelerators)}", "give accelerator nvidia-tesla-t4 or nvidia-tesla-v100, "
                              "or use G2 for L4, A2 for A100, A3 for H100")
        name = f"{pool.machine_type}:{pool.accelerator}:{pool.accelerator_count}"
        row = catalog.find("gcp", name)
        if row is None:
            offered = [r.name for r in catalog.rows() if r.cloud == "gcp" and r.machine_type == pool.machine_type
                       and r.accelerator == pool.accelerator]
            raise ConfigError("node_pool.accelerator_count", pool.accelerator_count,
                              f"not a count the catalog holds for {pool.machine_type} with {pool.accelerator}",
                              f"use one of {', '.join(offered)}" if offered
                              else f"use a machine type the catalog holds with {pool.accelerator}, e.g. n1-standard-8")
        return row
    if pool.accelerator is not None and pool.accelerator not in accelerators:
        raise ConfigError("node_pool.accelerator", pool.accelerator,
                          f"{pool.machine_type} comes with {accelerators[0]}, and GKE attaches no other GPU to it",
                          "leave accelerator unset, or choose the machine family of that GPU (G2: L4, A2: A100, "
                          "A3: H100)")
    if pool.accelerator_count is not None:
        raise ConfigError("node_pool.accelerator_count", pool.accelerator_count,
                          f"{pool.machine_type} has a fixed number of GPUs", "leave accelerator_count unset")
    row = catalog.find("gcp", pool.machine_type)
    if row is None:
        close = catalog.suggest("gcp", pool.machine_type)
        raise ConfigError("node_pool.machine_type", pool.machine_type, "unknown GPU machine type",
                          f"use one of {', '.join(close)}" if close else "use a GPU machine type from the catalog")
    return row


def _driver(pool: GpuNodePoolArgs, install: str) -> str:
    wanted = facts.DRIVER_DISABLED if install == "gpu-operator" else facts.DRIVER_INSTALLED[0]
    version = pool.gpu_driver_version or wanted
    if version not in (*facts.DRIVER_INSTALLED, facts.DRIVER_DISABLED):
        raise ConfigError("node_pool.gpu_driver_version", version, "not a GKE driver installation setting",
                          f"use {', '.join(facts.DRIVER_INSTALLED)} or {facts.DRIVER_DISABLED}")
    return version


def _partition_size(args: GkeGpuClusterArgs, row: catalog.GpuInstanceType) -> Optional[str]:
    mig = args.software.mig
    if mig is None or args.software.install == "gpu-operator":
        return None
    if mig.strategy != "single":
        raise ConfigError("software.mig.strategy", mig.strategy, "GKE advertises every partition as nvidia.com/gpu",
                          "use strategy single")
    profiles = mig_profiles(row.gpu_model, row.gpu_memory_gib) or ()
    size = mig.config.removeprefix("all-")
    if size not in profiles:
        raise ConfigError("software.mig.config", mig.config, f"GKE partitions every GPU of a pool the same way, "
                          f"into one of the {row.gpu_model}'s profiles",
                          f"use one of {', '.join('all-' + p for p in profiles)}")
    return size


def _check_pool(pool: GpuNodePoolArgs, install: str) -> None:
    if pool.min_nodes < 0 or pool.max_nodes < 1 or pool.min_nodes > pool.max_nodes:
        raise ConfigError("node_pool.min_nodes/max_nodes", (pool.min_nodes, pool.max_nodes),
                          "need 0 <= min_nodes <= max_nodes and max_nodes >= 1",
                          "set min_nodes 0 (no idle GPUs billed) and max_nodes to the most nodes to run at once")
    low, high = facts.DISK_GB_RANGE
    if not low <= pool.disk_size_gb <= high:
        raise ConfigError("node_pool.disk_size_gb", pool.disk_size_gb, f"must be between {low} and {high} GB",
                          "use 100 GB or more for deep-learning images")
    sharing = pool.gpu_sharing
    if sharing is not None:
        if install == "gpu-operator":
            raise ConfigError("node_pool.gpu_sharing", sharing.strategy, "GKE's GPU sharing needs GKE's device "
                              "plugin, which the GPU Operator replaces", "use software.time_slicing_replicas instead")
        if install == "dra":
            raise ConfigError("node_pool.gpu_sharing", sharing.strategy, "GKE's GPU sharing needs GKE's device "
                              "plugin, which install 'dra' turns off", "leave gpu_sharing unset with install 'dra'")
        if sharing.strategy not in facts.SHARING_STRATEGIES:
            raise ConfigError("node_pool.gpu_sharing.strategy", sharing.strategy, "not a GKE sharing strategy",
                              f"use {' or '.join(facts.SHARING_STRATEGIES)}")
        if not 2 <= sharing.max_clients_per_gpu <= facts.MAX_SHARED_CLIENTS_PER_GPU:
            raise ConfigError("node_pool.gpu_sharing.max_clients_per_gpu", sharing.max_clients_per_gpu,
                              f"GKE accepts 2 to {facts.MAX_SHARED_CLIENTS_PER_GPU}", "use 2-8")
    for zone in pool.node_locations:
        if not (isinstance(zone, str) and facts.is_zone(zone)):
            raise ConfigError("node_pool.node_locations", zone, "not a zone (REGION-LETTER)",
                              "use zones such as us-central1-a, as `gcloud compute zones list` shows them")
    check_labels("node_pool.labels", pool.labels, {})
    for key in facts.NO_GKE_DEVICE_PLUGIN_LABEL:
        if key in pool.labels:
            raise ConfigError(f"node_pool.labels.{key}", pool.labels[key], "set from the install mode: it turns "
                              "GKE's device plugin off for the GPU Operator", "remove it; choose software.install")


def _check_node_region(pool: GpuNodePoolArgs, location: str) -> None:
    """The pool's zones in the cluster's region: GKE puts a cluster's nodes only in zones of its region. Checked by
    the zones' names (a zone is its region's name and a letter); whether each zone exists is known at ``pulumi up``."""
    home = region(location)
    outside = [z for z in pool.node_locations if region(z) != home]
    if not outside:
        return
    regions = sorted({region(z) for z in pool.node_locations})
    move = f"set `location` to {regions[0]} (where the zones are), or " if len(regions) == 1 else ""
    raise ConfigError("node_pool.node_locations", list(pool.node_locations), f"{', '.join(outside)} not in "
                      f"{home}, and GKE puts the nodes of a cluster in {location} only in zones of {home}",
                      f"{move}list zones of {home} only")


def _software(args: GkeGpuClusterArgs) -> GpuSoftwareOptions:
    options = args.software
    managed = args.cluster is not None and args.cluster.managed_dcgm
    if managed and options.dcgm_exporter:
        raise ConfigError("software.dcgm_exporter", True, "GKE's managed DCGM metrics are on: the exporter would "
                          "report the same GPUs twice", "leave dcgm_exporter unset, or set cluster.managed_dcgm false")
    if options.dcgm_exporter is None:
        options = dataclasses.replace(options, dcgm_exporter=not managed)
    if args.managed_alerts and not options.dcgm_exporter:
        raise ConfigError("managed_alerts", True, "the alerts read gpuready's DCGM exporter, and " + (
            "GKE's managed DCGM package runs its own, with a list of fields gpuready cannot extend" if managed else
            "software.dcgm_exporter is false"), "set cluster.managed_dcgm false (and leave software.dcgm_exporter "
            "unset), or managed_alerts false")
    if args.node_pool.gpu_sharing is not None and args.software.mig is not None:
        raise ConfigError("node_pool.gpu_sharing", args.node_pool.gpu_sharing.strategy, "GPU sharing together with "
                          "MIG", "choose one: MIG for isolated slices, sharing for whole GPUs taken in turns")
    return options


def _network_check(field: str, value: object) -> None:
    name, path = facts.COMPUTE_NAME, rf"{facts.COMPUTE_PREFIX}global/networks/{facts.COMPUTE_NAME}"
    if not isinstance(value, str) or not (re.fullmatch(name, value) or re.fullmatch(path, value)):
        raise ConfigError(field, value, "not a VPC network's name or path",
                          "give its name (ml-vpc), or projects/PROJECT/global/networks/NAME (a Network's id)")


def _subnetwork_check(cluster_region: str) -> Callable[[str, object], None]:
    path = re.compile(rf"{facts.COMPUTE_PREFIX}regions/([^/]+)/subnetworks/{facts.COMPUTE_NAME}")

    def check(field: str, value: object) -> None:
        found = path.fullmatch(value) if isinstance(value, str) else None
        if not found and not (isinstance(value, str) and re.fullmatch(facts.COMPUTE_NAME, value)):
            raise ConfigError(field, value, "not a subnetwork's name or path",
                              "give its name (ml-subnet), or projects/PROJECT/regions/REGION/subnetworks/NAME")
        if found and found.group(1) != cluster_region:
            raise ConfigError(field, value, f"a subnetwork of {found.group(1)}: GKE puts the nodes of a cluster in "
                              f"{cluster_region} only in subnetworks of that region",
                              f"give a subnetwork of {cluster_region}, or set `location` to {found.group(1)} (and "
                              "node_pool.node_locations to zones of it)")
    return check


def checked_inputs(args: GkeGpuClusterArgs) -> GkeGpuClusterArgs:
    """``args`` with the inputs other resources' outputs feed checked (:mod:`~gpuready_components.inputs`): your
    network and subnetwork (names or paths; the subnetwork in the cluster's region), an existing cluster's name; each
    checked now when its value is known and when it resolves otherwise. The component builds from the returned args
    only."""
    cluster, existing = args.cluster, args.existing_cluster
    if cluster is not None:
        cluster = dataclasses.replace(
            cluster, network=checked(cluster.network, "cluster.network", _network_check),
            subnetwork=checked(cluster.subnetwork, "cluster.subnetwork", _subnetwork_check(region(args.location))))
    if existing is not None:
        existing = dataclasses.replace(existing, name=checked(existing.name, "existing_cluster.name", CLUSTER_NAME))
    return dataclasses.replace(args, cluster=cluster, existing_cluster=existing)


def check(args: GkeGpuClusterArgs, project: Optional[str]) -> GkeCapacity:
    """Raise :class:`ConfigError` for the first input that cannot work; return the capacity and derived settings.

    ``project`` is the Google Cloud project in effect (the args' or the provider's).
    """
    if not project:
        raise ConfigError("project", project, "no Google Cloud project", "set gcp:project, or give project")
    if not _LOCATION.fullmatch(args.location):
        raise ConfigError("location", args.location, "not a region or zone", "use a region such as us-central1")
    check_cluster_choice(args.cluster, args.existing_cluster)
    if args.cluster is not None:
        cluster = args.cluster
        if cluster.kubernetes_version is not None and kubernetes_version(cluster.kubernetes_version) is None:
            raise ConfigError("cluster.kubernetes_version", cluster.kubernetes_version, "not a Kubernetes version",
                              "give it as 1.34 or 1.34.2, or leave it unset for the channel's default")
        if cluster.release_channel not in facts.RELEASE_CHANNELS:
            raise ConfigError("cluster.release_channel", cluster.release_channel, "not a GKE release channel",
                              f"use one of {', '.join(facts.RELEASE_CHANNELS)}")
        for cidr in (cluster.master_ipv4_cidr_block, *cluster.master_authorized_networks):
            try:
                ipaddress.ip_network(cidr)
            except ValueError:
                raise ConfigError("cluster.master_authorized_networks", cidr, "not a CIDR block",
                                  "use a range like 203.0.113.0/24") from None
        if cluster.system_nodes < 1:
            raise ConfigError("cluster.system_nodes", cluster.system_nodes, "a new cluster needs CPU nodes for "
                              "kube-dns and the GPU software's controllers", "use 1 or more")
        if cluster.network is None and cluster.subnetwork is not None:
            raise ConfigError("cluster.network", None, "a subnetwork without its network",
                              "give network too, or neither (a network and subnetwork are created)")
        if cluster.network is not None and cluster.cloud_nat and cluster.subnetwork is None:
            raise ConfigError("cluster.subnetwork", None, "Cloud NAT on your network needs the subnetwork the "
                              "nodes use", "give subnetwork, or leave cloud_nat off if the network has its NAT")
    pool = args.node_pool
    row = _machine(pool)
    install = args.software.install
    driver = _driver(pool, install)
    _check_pool(pool, install)
    _check_node_region(pool, args.location)
    if pool.flex_start is not None:
        reservation.check_flex_start(pool.flex_start, reservation=pool.reservation, spot=pool.spot,
                                     min_nodes=pool.min_nodes, teams=bool(args.teams))
    if pool.reservation is not None:
        reservation.check_reservation(pool.reservation, machine_type=row.machine_type,
                                      node_locations=pool.node_locations, location=args.location,
                                      max_nodes=pool.max_nodes, spot=pool.spot)
    software = _software(args)
    node_image = facts.node_image(driver, facts.NO_GKE_DEVICE_PLUGIN_LABEL if install in facts.OWN_PLUGIN_OFF else {})
    check_options("software", software, facts.NODE_IMAGES[node_image], node_image,
                  ((row.gpu_model, row.gpu_memory_gib),))
    if args.cluster is not None:
        check_dra_version("cluster.kubernetes_version", args.cluster.kubernetes_version, software,
                          f"GKE's {args.cluster.release_channel} channel picks a new cluster's version, which preview "
                          "cannot know")
    else:
        check_dra_version("existing_cluster.kubernetes_version", args.existing_cluster.kubernetes_version, software)
    return GkeCapacity(
        machine=row, node_image=node_image, driver_version=driver, partition_size=_partition_size(args, row),
        software=software, max_gpus=pool.max_nodes * row.gpus,
        max_usd_per_hour=round(pool.max_nodes * (row.price_usd_hour or 0.0), 2))
