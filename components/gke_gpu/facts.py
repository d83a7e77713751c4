"""Google Kubernetes Engine platform facts, in one table. Tests check each value GKE constrains against Google's
container v1 discovery document."""

from __future__ import annotations

import re
from types import MappingProxyType
from typing import Mapping, Optional

from ..k8s_gpu.kubeconfig import CredentialPlugin
from ..k8s_gpu.topology import Block, Placement
from ..k8s_gpu.facts import (ALL_NODE_SOFTWARE, DRIVER, GPU_LABELS, MIG_PARTITIONING, STARTUP_BURN_IN_TAINT,
                              CapacityLabel, NodeFacts, NodeImage, Taint)

TYPE_TOKEN = "gpuready:gcp:GkeGpuCluster"
"""Never change: renaming a type token replaces every cloud resource under it."""

CLUSTER_NAME = r"[a-z](?:[-a-z0-9]{0,38}[a-z0-9])?"
"""A GKE cluster's name: up to 40 lowercase letters, digits and hyphens, from a letter, to a letter or digit
(container v1 ``Cluster.name``'s description)."""
LOCATION = r"[a-z]+-[a-z]+[0-9]+(?:-[a-z])?"
"""A Compute Engine region (``us-central1``) or zone: a zone is named ``REGION-LETTER`` (``us-central1-a``), its
region's name and a letter (cloud.google.com/compute/docs/regions-zones). Which letters a region has is not known
offline (no vendor artefact in the project lists the zones): a zone's region is checked by its name, its existence at
``pulumi up``."""


def region(location: str) -> str:
    """``us-central1`` for the region ``us-central1`` or the zone ``us-central1-a`` (a zone is its region's name and a
    letter)."""
    return re.sub(r"-[a-z]$", "", location)


def is_zone(location: str) -> bool:
    """Whether ``location`` names a zone (``us-central1-a``), not a region."""
    return re.fullmatch(LOCATION, location) is not None and region(location) != location


COMPUTE_NAME = r"[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?"
"""A Compute Engine network's or subnetwork's name (compute v1 ``Network.name``'s and ``Subnetwork.name``'s
``pattern``)."""
COMPUTE_PREFIX = r"(?:https://(?:www|compute)\.googleapis\.com/compute/(?:v1|beta|alpha)/)?(?:projects/[^/]+/)?"
"""What may come before ``global/networks/...`` or ``regions/...`` in a resource's URL: a self link, the path from
``projects/`` (a Pulumi ``gcp.compute.Network``'s id), or the partial URL from ``global/`` or ``regions/``."""

FAMILY_ACCELERATORS = MappingProxyType({
    "n1": ("nvidia-tesla-t4", "nvidia-tesla-v100", "nvidia-tesla-p4", "nvidia-tesla-p100"),
    "g2": ("nvidia-l4",),
    "a2": ("nvidia-tesla-a100", "nvidia-a100-80gb"),
    "a3": ("nvidia-h100-80gb", "nvidia-h100-mega-80gb", "nvidia-h200-141gb"),
    "a4": ("nvidia-b200",),
    "a4x": ("nvidia-gb200", "nvidia-gb300"),
    "g4": ("nvidia-rtx-pro-6000",),
})
"""Machine family -> the accelerators it takes (Compute Engine GPU machine types). G2, A2, A3 (High and Mega: H100;
Ultra: H200), A4 (B200), A4X (GB200: a4x-highgpu-4g; A4X Max, GB300: a4x-maxgpu-4g-metal) and G4 (RTX PRO 6000) come
with their GPUs attached; N1 takes T4, V100, P4 or P100 attached separately."""
ATTACHED_GPU_FAMILIES = ("n1",)

DRIVER_INSTALLED = ("DEFAULT", "LATEST")
"""``gpuDriverInstallationConfig.gpuDriverVersion`` values with which GKE installs the driver itself."""
DRIVER_DISABLED = "INSTALLATION_DISABLED"
"""GKE installs no driver: what the GPU Operator needs."""
SHARING_STRATEGIES = ("TIME_SHARING", "MPS")
MAX_SHARED_CLIENTS_PER_GPU = 48
"""GKE's limit on ``maxSharedClientsPerGpu`` (GKE docs, share GPUs with multiple workloads)."""

GPU_TAINT_EFFECT = "NO_SCHEDULE"
"""GKE API spelling of ``NoSchedule`` for ``nvidia.com/gpu=present`` (``NODES``)."""
GPU_POOL = "gpu"
"""The GPU node pool's name in the stack (its resource is ``<component>-gpu``): what ``teams[].pools`` names."""
NODE_POOL_LABEL = "cloud.google.com/gke-nodepool"
"""Label GKE puts on every node: its node pool's name (GKE docs, About node pools). Kueue's controller selects the
system pool's by it."""
NO_GKE_DEVICE_PLUGIN_LABEL = MappingProxyType({"gke-no-default-nvidia-gpu-device-plugin": "true"})
"""Node label that keeps GKE's own device plugin off the nodes, for the GPU Operator's (NVIDIA GPU Operator docs,
Google GKE)."""


def node_image(driver_version: str, node_labels: Mapping[str, str]) -> str:
    """Key of ``NODE_IMAGES`` for a GPU pool with this ``gpuDriverVersion`` and labels."""
    if driver_version == DRIVER_DISABLED:
        return "gke/driver-disabled"
    plugin_off = all(node_labels.get(k) == v for k, v in NO_GKE_DEVICE_PLUGIN_LABEL.items())
    return "gke/driver-installed-operator" if plugin_off else "gke/driver-installed"

IMAGE_TYPES = MappingProxyType({"device-plugin": "COS_CONTAINERD", "gpu-operator": "UBUNTU_CONTAINERD",
                                "dra": "COS_CONTAINERD"})
"""Node image per install mode: the GPU Operator builds its driver on Ubuntu; GKE's own driver runs on COS (also
under the DRA driver, which reads it from ``/home/kubernetes/bin/nvidia``)."""
OWN_PLUGIN_OFF = ("gpu-operator", "dra")
"""Install modes that turn GKE's own device plugin off (:data:`NO_GKE_DEVICE_PLUGIN_LABEL`): the GPU Operator runs
its own, and the DRA driver must be the only one giving out the nodes' GPUs."""
DISK_TYPE = "pd-balanced"
DISK_GB_RANGE = (40, 65_536)
OAUTH_SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)
"""Access is governed by the node service account's roles, as GKE recommends, not by scopes."""
NODE_SERVICE_ACCOUNT_ROLES = (
    "roles/logging.logWriter",
    "roles/monitoring.metricWriter",
    "roles/monitoring.viewer",
    "roles/stackdriver.resourceMetadata.writer",
    "roles/artifactregistry.reader",
)
"""The least-privilege node service account of GKE's hardening guide, plus pulling images from Artifact Registry."""
WORKLOAD_METADATA_MODE = "GKE_METADATA"
"""Workload Identity on the nodes: pods get Google credentials of their own, never the node's."""
RELEASE_CHANNELS = ("RAPID", "REGULAR", "STABLE", "EXTENDED")
MONITORING_COMPONENTS = ("SYSTEM_COMPONENTS", "DCGM")
"""GKE's managed DCGM metrics: the DCGM component with Google Cloud Managed Service for Prometheus."""
SUBNET_RANGES = MappingProxyType({"nodes": "10.10.0.0/20", "services": "10.10.16.0/20", "pods": "10.12.0.0/14"})
"""The subnetwork a new cluster gets when no network is given: its primary range (nodes) and the secondary ranges
GKE takes pods and services from, by range name; none overlaps the control plane's 172.16.0.32/28."""
NAT_IP_ALLOCATION = "AUTO_ONLY"
NAT_SOURCE_SUBNETWORKS = "LIST_OF_SUBNETWORKS"
NAT_SUBNETWORK_RANGES = ("ALL_IP_RANGES",)
NAT_LOG_FILTER = "ERRORS_ONLY"
"""Cloud NAT for the nodes' subnetwork only (all its ranges, pods included), with Google-allocated addresses: private
nodes have no public IP, and images from Docker Hub or nvcr.io are on the internet. Errors are logged."""
SYSTEM_MACHINE_TYPE = "e2-standard-4"
"""Untainted nodes of a new cluster for kube-dns, the GPU Operator's controller and NFD's master."""


TOPOLOGY_LEVELS = ("cloud.google.com/gce-topology-block", "cloud.google.com/gce-topology-subblock",
                   "cloud.google.com/gce-topology-host")
"""The labels GKE puts on the nodes of the machine types of :data:`TOPOLOGY_MACHINES`, coarsest first: the reserved
block, the sub-block (the hosts of one rack; on A4X and A4X Max one NVLink domain), the physical host (AI Hypercomputer
docs, Schedule GKE workloads with Topology Aware Scheduling; Terminology)."""
TOPOLOGY_SOURCE = "https://cloud.google.com/ai-hypercomputer/docs/workloads/schedule-gke-workloads-tas"
TOPOLOGY_GANG_LEVEL = TOPOLOGY_LEVELS[1]
"""The level a gang asks for: one sub-block (the hosts of one rack, one NVLink domain on A4X), widened to the block,
whose sub-blocks share a non-blocking fabric."""
TOPOLOGY_MACHINES = MappingProxyType({"a3-ultragpu-": None, "a4-highgpu-": None, "a4x-": 18})
"""Machine type prefix -> the nodes of one sub-block where Google states it (``None``: not published), for the
machine types GKE labels with :data:`TOPOLOGY_LEVELS`: A3 Ultra, A4, and A4X and A4X Max, whose sub-block is an
NVLink domain of 18 instances (72 GPUs) (AI Hypercomputer docs, Terminology: "An NVLink domain consists of 18 A4X Max
or A4X instances"). These are GKE's RDMA machine types, built for jobs across nodes."""
TOPOLOGY_BLOCK_SOURCE = "https://cloud.google.com/ai-hypercomputer/docs/terminology"


def placement(machine_type: str) -> Optional[Placement]:
    """How GKE labels the place of a ``machine_type`` node in Google's network (:data:`TOPOLOGY_LEVELS`), a gang asking
    for one sub-block; ``None`` for a machine type GKE gives no such labels."""
    prefix = next((p for p in TOPOLOGY_MACHINES if machine_type.startswith(p)), None)
    if prefix is None:
        return None
    size = TOPOLOGY_MACHINES[prefix]
    return Placement(TOPOLOGY_LEVELS, TOPOLOGY_GANG_LEVEL, TOPOLOGY_SOURCE,
                     Block(size, TOPOLOGY_BLOCK_SOURCE) if size else None)


ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"
"""The label GKE puts on every node of a GPU node pool, valued the pool's accelerator type (About GPUs in GKE)."""


NODE_IMAGES = MappingProxyType({
    "gke/driver-installed": NodeImage(
        "gke", frozenset(ALL_NODE_SOFTWARE | {MIG_PARTITIONING, GPU_LABELS}),
        "GKE with gpuDriverInstallationConfig DEFAULT or LATEST: GKE installs the driver under "
        "/home/kubernetes/bin/nvidia, runs its own device plugin (which mounts the driver into GPU containers), "
        "partitions MIG from gpuPartitionSize and labels nodes cloud.google.com/gke-accelerator",
        driver_root="/home/kubernetes/bin/nvidia", operator_image="gke/driver-installed-operator"),
    "gke/driver-installed-operator": NodeImage(
        "gke", frozenset({DRIVER, GPU_LABELS}),
        "GKE with DEFAULT or LATEST and the node label gke-no-default-nvidia-gpu-device-plugin=true: GKE installs the "
        "driver under /home/kubernetes/bin/nvidia and labels nodes; its device plugin, which gave containers the "
        "driver, is off, so the GPU Operator runs the container toolkit, device plugin and MIG manager (NVIDIA GPU "
        "Operator docs, Google GKE, Using the Google Driver Installer). Changing MIG mode reboots the node there",
        driver_root="/home/kubernetes/bin/nvidia", mig_manager_env=(("WITH_REBOOT", "true"),)),
    "gke/driver-disabled": NodeImage(
        "gke", frozenset(),
        "GKE Ubuntu nodes with INSTALLATION_DISABLED and the label gke-no-default-nvidia-gpu-device-plugin=true: "
        "nothing NVIDIA on the node (for the GPU Operator)"),
})
"""``PLATFORM/IMAGE`` -> what this platform's GPU node images ship before any chart (its descriptor's ``node_images``)."""


# Where a GPU pool's nodes come from: a Compute Engine reservation, flex-start (Dynamic Workload Scheduler), Spot.
RESERVATION_AFFINITY = MappingProxyType({
    "specific": "SPECIFIC_RESERVATION",
    "any": "ANY_RESERVATION",
    "none": "NO_RESERVATION",
})
"""``reservation.affinity`` -> the node pool's ``nodeConfig.reservationAffinity.consumeReservationType`` (container
v1 ``ReservationAffinity``): the one reservation named (node creation fails when it is full, ended or absent), any
matching reservation (on-demand past them), or none."""
RESERVATION_NAME_KEY = "compute.googleapis.com/reservation-name"
"""``reservationAffinity.key`` that targets a ``SPECIFIC_RESERVATION`` by name (container v1 ``ReservationAffinity.key``
's description)."""
RESERVATION_NAME = r"[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?"
"""A reservation's name (compute v1 ``Reservation.name``'s ``pattern``)."""
SHARED_RESERVATION = rf"projects/[a-z][-a-z0-9]{{4,28}}[a-z0-9]/reservations/{RESERVATION_NAME}"
"""A reservation shared from another project, as GKE names it in ``reservationAffinity.values``
(``projects/PROJECT/reservations/NAME``; GKE docs, Consuming reserved zonal resources)."""
RESERVATION_SUB_BLOCK = (rf"(?:{SHARED_RESERVATION}|{RESERVATION_NAME})/reservationBlocks/{RESERVATION_NAME}"
                         rf"/reservationSubBlocks/{RESERVATION_NAME}")
"""A reservation's sub-block, as GKE's node pools consume it (``--reservation-affinity=specific
--reservation=RESERVATION/reservationBlocks/BLOCK/reservationSubBlocks/SUB_BLOCK``, the projects/PROJECT/reservations/
prefix for one shared from another project): GKE's docs for A4X and A4X Max clusters recommend a sub-block targeted
reservation, so that the pool's nodes are placed on one sub-block."""
NVL72_FAMILIES = MappingProxyType({"a4x": 18})
"""Machine families whose VMs are trays of a GB200/GB300 NVL72 rack -> the VMs of one NVLink domain: an A4X or A4X
Max sub-block is one NVL72 domain of 18 VMs, 72 GPUs (Compute Engine, A4X Max and A4X machine series: 18 instances
and 72 GPUs per NVL72 domain; GKE's A4X Max docs: a node pool of 18 nodes or fewer in one sub-block)."""
NVL72_WORKLOAD_POLICY = MappingProxyType({"type": "HIGH_THROUGHPUT", "accelerator_topology": "1x72"})
NVL72_PLACEMENT_TYPE = "COMPACT"
"""The Compute Engine workload policy an A4X pool is placed by (``gcloud compute resource-policies create
workload-policy --type=high-throughput --accelerator-topology=1x72``: 72 GPUs joined by NVLink in one block; Compute
Engine's A4X and A4X Max docs) and the node pool's ``placementPolicy`` naming it: type ``COMPACT`` with the policy's
name, as Google's Cluster Toolkit A4X blueprint passes a workload policy to its GKE node pool. Checked against
Compute Engine's and GKE's discovery documents (``ResourcePolicyWorkloadPolicy``, ``PlacementPolicy``)."""
RESERVATION_NAME_LABEL = "cloud.google.com/reservation-name"
RESERVATION_AFFINITY_LABEL = "cloud.google.com/reservation-affinity"
"""Labels of a node on a specific reservation: the reservation's name and ``specific``; a workload selects reserved
nodes by them (GKE docs, Consuming reserved zonal resources, Autopilot's nodeSelector; Google's xpk selects a
reservation's nodes of a Standard pool by ``cloud.google.com/reservation-name``)."""
FLEX_START_LABEL = "cloud.google.com/gke-flex-start"
"""Label, value ``"true"``, of a flex-start node; a workload selects Flex-start VMs by it (GKE docs, Run a small
batch workload with GPUs and flex-start)."""
QUEUED_LABEL = "cloud.google.com/gke-queued"
ARM_TAINT = Taint("kubernetes.io/arch", "arm64", "NoSchedule")
ARM_FAMILIES = ("a4x",)
"""GKE taints every Arm node ``kubernetes.io/arch=arm64:NoSchedule`` (GKE docs, Prepare an Arm workload for
deployment; Google's Cluster Toolkit A4X blueprint tolerates it): the GPU machine families with Arm (Grace) CPUs, whose
NVIDIA daemonsets and GPU pods must tolerate it."""
QUEUED_TAINT = Taint("cloud.google.com/gke-queued", "true", "NoSchedule")
"""The label (value ``"true"``) and taint GKE puts on the nodes of a queued-provisioning pool: only pods that tolerate
it land there (GKE docs, Run a large-scale workload with flex-start with queued provisioning; Google's xpk selects
flex-start nodes by the label and its workloads tolerate the taint)."""
SPOT_LABEL = "cloud.google.com/gke-spot"
"""Label, value ``"true"``, of a Spot VM node (GKE docs, Spot VMs)."""

TOPOLOGY_SUB_BLOCK_LABEL = "cloud.google.com/gce-topology-subblock"
"""The label of the reservation sub-block a node's VM is in (GKE docs, View the physical topology of nodes: with
gce-topology-block and gce-topology-host). On A4X and A4X Max a sub-block is one NVL72 domain: the label a
multi-node job's pods share to talk over NVLink (GKE labels it itself; GPU feature discovery cannot run beside GKE's
own driver)."""

NODES = NodeFacts(
    "gke", Taint("nvidia.com/gpu", "present", "NoSchedule"),
    (("cloud.google.com/gke-accelerator", "Exists", ()),),
    MappingProxyType({"cloud.google.com/gke-accelerator": "nvidia-l4", "cloud.google.com/gke-nodepool": "gpu"}),
    "GKE taints GPU node pools nvidia.com/gpu=present:NoSchedule and labels their nodes "
    "cloud.google.com/gke-accelerator=ACCELERATOR (GKE docs, About GPUs in GKE). GKE admits critical pods "
    "outside kube-system only under a ResourceQuota scoped to their PriorityClass, and on GKE 1.33+ the "
    "toolkit misconfigures containerd unless it reads the config file (NVIDIA GPU Operator docs, Google GKE)",
    critical_pods_need_quota=True, toolkit_env=(("RUNTIME_CONFIG_SOURCE", "file"),),
    burn_in_taint=STARTUP_BURN_IN_TAINT,
    sharing_fix="set GPU sharing on the node pool instead (GKE's time-sharing, which its own device plugin "
                "applies)",
    capacity_labels=(
        CapacityLabel(FLEX_START_LABEL, MappingProxyType({"true": "flex-start"})),
        CapacityLabel(SPOT_LABEL, MappingProxyType({"true": "spot"})),
        CapacityLabel(RESERVATION_NAME_LABEL, reservation=True)),
    nvlink_domain_label=TOPOLOGY_SUB_BLOCK_LABEL)
"""How this platform's GPU nodes register: their taint, the labels they carry from boot (its descriptor's ``node``)."""
MAX_RUN_DURATION_SECONDS = 7 * 24 * 3600
"""The longest a flex-start node runs (``nodeConfig.maxRunDuration``, also GKE's default): seven days (GKE docs,
About flex-start provisioning mode)."""
PROVISIONING_CLASS = "queued-provisioning.gke.io"
"""The ProvisioningRequest class GKE's cluster autoscaler serves from queued-provisioning pools, by the Dynamic
Workload Scheduler: what Kueue's ProvisioningRequestConfig names (GKE docs, flex-start with queued provisioning)."""
MAX_RUN_DURATION_PARAMETER = "maxRunDurationSeconds"
"""The ProvisioningRequest parameter of that class bounding how long its nodes run (GKE docs, as above)."""


def provisioning_labels(flex_start: bool, queued: bool) -> dict[str, str]:
    """The label GKE puts on the nodes of a flex-start pool (queued or not), by which workloads select them; none for
    other pools."""
    if not flex_start:
        return {}
    return {QUEUED_LABEL if queued else FLEX_START_LABEL: "true"}


FLEX_START_AUTO_REPAIR = False
"""Auto-repair of a flex-start pool: off, as GKE's flex-start guides create them (``--no-enable-autorepair``): a
repaired node would be a new flex-start VM, obtained again."""

CREDENTIALS = CredentialPlugin("gke-gcloud-auth-plugin", "gke-gcloud-auth-plugin")
"""The kubeconfig's credential plugin (as ``gcloud container clusters get-credentials`` writes it)."""
