"""Kubernetes GPU software facts, in tables: charts, platforms' GPU taints and boot labels, node images, MIG.

Tests check every chart values key against the real chart files in ``../shared/reference/helm-charts``, and every
platform x node image x install mode against "nothing installed twice, nothing missing".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence
from types import MappingProxyType

from ..queue_facts import (GPU_RESOURCE, KUEUE_API, OPERATORS_ROLE, OVERCOMMIT_ANNOTATION,  # noqa: F401 (shared
                           ROLE_LABEL)  # with the readers)

TYPE_TOKEN = "gpuready:k8s:GpuSoftware"
"""Never change: renaming a type token replaces every cloud resource under it."""


@dataclass(frozen=True)
class Chart:
    """A Helm chart pinned to one version from NVIDIA's official repository."""

    name: str
    repo: str
    version: str
    source: str


CHARTS = MappingProxyType({
    "nvidia-device-plugin": Chart(
        "nvidia-device-plugin", "https://nvidia.github.io/k8s-device-plugin", "0.20.0",
        "NVIDIA/k8s-device-plugin v0.20.0 deployments/helm/nvidia-device-plugin"),
    "gpu-operator": Chart(
        "gpu-operator", "https://helm.ngc.nvidia.com/nvidia", "v26.7.0",
        "NVIDIA/gpu-operator v26.7.0 deployments/gpu-operator"),
    "dcgm-exporter": Chart(
        "dcgm-exporter", "https://nvidia.github.io/dcgm-exporter/helm-charts", "4.8.2",
        "NVIDIA/dcgm-exporter 4.5.3-4.8.2 deployment/"),
    "dra-driver-nvidia-gpu": Chart(
        "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu", "", "0.4.1",
        "kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 (commit 764900e7833798a1528bd52a2af3e1b2d5f7a616) "
        "deployments/helm/dra-driver-nvidia-gpu; published as "
        "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu (the project's install docs)"),
})
"""Chart name -> pinned chart. The device plugin chart and the operator both embed node-feature-discovery 0.19.0.
An OCI chart (``oci://``) has no repository: its name is the full reference, its release is named by its last part."""

NFD_CHART_VERSION = "0.19.0"

# What a GPU node needs before a pod sees a GPU. Each must come from exactly one place: the node image or a chart.
DRIVER, TOOLKIT, DEVICE_PLUGIN = "driver", "toolkit", "device-plugin"
NODE_SOFTWARE = (DRIVER, TOOLKIT, DEVICE_PLUGIN)
MIG_PARTITIONING = "mig-partitioning"
"""Not needed on every node: who turns MIG mode on and creates the GPU instances."""
GPU_LABELS = "gpu-labels"
"""Node labels naming the GPU model, which GPU feature discovery adds where the platform does not."""

DRA = "dra"
INSTALL_MODES = ("device-plugin", "gpu-operator", DRA)
"""``device-plugin``: NVIDIA's device plugin chart (with GPU feature discovery) and the DCGM exporter chart, on an
image that ships the driver. ``gpu-operator``: the GPU Operator installs whatever the image lacks. ``dra``: NVIDIA's
DRA driver (:data:`DRA_CHART`) gives pods GPUs through ResourceClaims instead of the device plugin, on an image that
ships the driver and no device plugin (plus, as chosen, GPU feature discovery and the DCGM exporter charts)."""
DRA_CHART = "dra-driver-nvidia-gpu"
"""Key of :data:`CHARTS` of NVIDIA's DRA driver for GPUs (``kubernetes-sigs/dra-driver-nvidia-gpu``)."""
DRA_DRIVER = "dra-driver"
"""What the DRA driver's kubelet plugin provides on a GPU node: the GPUs, published as ResourceSlices of the driver
``gpu.nvidia.com`` and prepared for the pods whose ResourceClaims name them (in place of the device plugin)."""
DRA_MIN_KUBERNETES = (1, 34, 2)
"""The oldest Kubernetes the DRA driver v0.4.1 supports: ``resource.k8s.io/v1`` is GA in 1.34, and the driver's
prerequisites page asks for 1.34.2 or later (the chart's own ``kubeVersion`` says only ``>=1.32.0-0``). A version given
as a minor (``1.34``, as EKS names them) is taken at the cloud's current patch of it, which is later."""


def kubernetes_version(text: str) -> Optional[tuple[int, ...]]:
    """``1.34`` -> (1, 34); ``1.34.2`` -> (1, 34, 2); ``v1.35.0-gke.1`` -> (1, 35, 0); ``None`` for text that names no
    version."""
    match = re.match(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:[-+].*)?$", str(text).strip())
    return tuple(int(g) for g in match.groups() if g is not None) if match else None


def dra_supported(version: str) -> Optional[bool]:
    """Whether Kubernetes ``version`` runs the DRA driver (:data:`DRA_MIN_KUBERNETES` or later: a minor from
    1.34 on, a patch from 1.34.2 on); ``None`` for text that names no version."""
    parsed = kubernetes_version(version)
    if parsed is None:
        return None
    low = DRA_MIN_KUBERNETES
    return not (parsed[:2] < low[:2] or (len(parsed) > 2 and parsed < low))


DRA_RESOURCE_API = "resource.k8s.io/v1"
"""The API of DeviceClasses, ResourceClaims and ResourceClaimTemplates from Kubernetes 1.34 (set as the chart's
``resourceApiVersion``: no guessing from the API server's list at install)."""
DRA_DEVICE_CLASS = "gpu.nvidia.com"
"""The DeviceClass of whole NVIDIA GPUs the chart creates (``templates/deviceclass-gpu.yaml``), which a job's
ResourceClaimTemplate names in ``spec.devices.requests[].exactly.deviceClassName``."""
DRA_DRIVER_NAME = "gpu.nvidia.com"
"""The DRA driver's name, as its kubelet plugin publishes each node's GPUs (``ResourceSlice`` ``spec.driver``, device
attribute ``type: gpu``) and the DeviceClass selects them (``templates/deviceclass-gpu.yaml``)."""
DRA_KUEUE_MAPPINGS = MappingProxyType({GPU_RESOURCE: (DRA_DEVICE_CLASS,)})
"""Kueue's ``resources.deviceClassMappings`` with ``install: dra``: a job's ResourceClaimTemplate device request of
DeviceClass ``gpu.nvidia.com`` is charged ``count`` units of ``nvidia.com/gpu`` (Kueue 0.19.2, Set Up Dynamic
Resource Allocation: the ResourceClaimTemplate path, its ``KueueDRAIntegration`` gate on by default since 0.18),
the very resource every ClusterQueue already covers: a team's quota counts GPUs whichever way its jobs ask for them
(and a request of ``nvidia.com/gpu`` that the DeviceClass's ``extendedResourceName`` turns into a claim is charged to
the same name). Kueue leaves a workload that claims an unmapped DeviceClass inadmissible."""
DRA_COMPUTE_DOMAIN_CLASS = "compute-domain-default-channel.nvidia.com"
"""The DeviceClass of a ComputeDomain's IMEX channel (multi-node NVLink), with ``compute_domains`` on: the
ResourceClaimTemplate the ComputeDomain controller makes for ``spec.channel.resourceClaimTemplate.name`` (driver
v0.4.1, ``templates/compute-domain-workload-claim-template.tmpl.yaml``) asks for one device of it per pod (request
``channel``, ``exactly.deviceClassName`` only: the API server defaults ``allocationMode: ExactCount``, ``count: 1``),
with the driver's opaque ``config``, which Kueue 0.19.2 never reads (its DRA page: per-request config unsupported)."""
IMEX_CHANNEL_RESOURCE = "gpuready.io/imex-channel"
"""The Kueue quota resource a ComputeDomain's channel claim is charged to (:data:`DRA_CHANNEL_KUEUE_MAPPINGS`): a
label key, as Kueue 0.19.2 requires of a mapping's ``name`` (``pkg/config/validation.go``,
``validateDeviceClassMappings``: ``IsLabelKey``, at most 253 characters), under gpuready's own prefix (not
``kubernetes.io``/``k8s.io``, Kubernetes' own, nor ``nvidia.com``, whose ``nvidia.com/gpu`` is the GPUs')."""
DRA_CHANNEL_KUEUE_MAPPINGS = MappingProxyType({IMEX_CHANNEL_RESOURCE: (DRA_COMPUTE_DOMAIN_CLASS,)})
"""Kueue's ``resources.deviceClassMappings`` added with ``compute_domains``. Kueue 0.19.2 charges a
ResourceClaimTemplate request ``count`` units of its DeviceClass's mapped name and leaves a workload whose claim names
a DeviceClass no mapping lists inadmissible (``pkg/dra/claims.go`` ``GetResourceRequestsForResourceClaimTemplates``:
"DeviceClass ... is not mapped in DRA configuration"; ``pkg/controller/core/workload_controller.go`` then unsets its
quota reservation with reason ``Inadmissible``), so without this mapping no ComputeDomain gang is ever admitted. Its
own resource, not ``nvidia.com/gpu``: charged there, each pod's channel would take a GPU's quota. Every ClusterQueue
and the Cohort then cover it (a workload asking for a resource its ClusterQueue does not cover gets no flavor:
"resource ... unavailable in ClusterQueue"), with one channel per GPU of quota (:func:`.kueue.cohort`), so a gang
that fits the GPUs fits the channels: each of its pods claims one channel and at least one GPU."""
HOST_DRIVER_ROOT = "/"
"""The DRA driver's ``nvidiaDriverRoot`` for a driver installed on the host at the usual paths (its values.yaml)."""


@dataclass(frozen=True)
class Taint:
    """A Kubernetes node taint, with the effect spelled as Kubernetes spells it (``NoSchedule``)."""

    key: str
    """The taint's key, e.g. ``nvidia.com/gpu``."""
    value: str
    """Its value (may be empty)."""
    effect: str
    """``NoSchedule``, ``PreferNoSchedule`` or ``NoExecute``."""


TAINT_EFFECTS_K8S = MappingProxyType({"NoSchedule": "NO_SCHEDULE", "NoExecute": "NO_EXECUTE",
                                      "PreferNoSchedule": "PREFER_NO_SCHEDULE"})
"""Kubernetes' taint effect -> the managed node pool APIs' spelling of it (EKS's ``TaintEffect``, GKE's
``NodeTaint.effect``)."""


BURN_IN_TAINT = Taint("gpuready.io/burn-in", "pending", "NoSchedule")
"""Taint new GPU nodes boot with when burn-in admission is on: only pods that tolerate it (the NVIDIA daemonsets, the
burn-in daemonset) run there until the burn-in removes it. Scalers treat it as a startup taint (on EKS the
cluster-autoscaler gpuready installs gets ``--startup-taint``, Karpenter ``startupTaints``)."""
STARTUP_BURN_IN_TAINT = Taint("startup-taint.cluster-autoscaler.kubernetes.io/gpuready-burn-in", "pending",
                              "NoSchedule")
"""The burn-in taint where the platform runs the cluster autoscaler (GKE, AKS: no flag of ours reaches it). The key's
prefix is the autoscaler's own mark of a startup taint (cluster-autoscaler 1.29 and later, every supported GKE and
AKS version): it simulates a new node without it, so a pending GPU pod still scales an empty pool up, and counts a
node that carries it as still starting (kubernetes/autoscaler FAQ; release notes of cluster-autoscaler 1.29.0)."""

@dataclass(frozen=True)
class CapacityLabel:
    """A label a platform (or its node provisioner) puts on each node that says where the node's capacity comes
    from: a kind of capacity by value, or the reservation it runs on."""

    key: str
    kinds: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))
    """The label's values -> the kind of capacity (``reserved``, ``on-demand``, ``spot``, ``flex-start``)."""
    reservation: bool = False
    """The value names the reservation (its id, name or type): the node is on reserved capacity."""
    kind: str = ""
    """The kind of capacity any value of the label means (a label whose presence says it)."""
    shown: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))
    """A reservation label's values as ``gpuready`` shows them (Karpenter's ``default`` type is an ODCR)."""


def capacity_of(labels: Mapping[str, str], facts: Sequence[CapacityLabel]) -> Optional[str]:
    """Where a node's capacity comes from, read from its ``labels`` by ``facts`` (its platform's
    :attr:`NodeFacts.capacity_labels`): ``reserved (capacity-block cr-...)``, ``spot``, ``on-demand``...; ``None``
    when no label says."""
    kind, named = None, []
    for fact in facts:
        value = labels.get(fact.key)
        if value is None:
            continue
        if fact.reservation:
            named.append(fact.shown.get(value, value))
        found = fact.kinds.get(value) or fact.kind or ("reserved" if fact.reservation else None)
        kind = kind or found
    if not kind:
        return None
    return f"{kind} ({' '.join(named)})" if named else kind


GFD_CLIQUE_LABEL = "nvidia.com/gpu.clique"
"""The label GPU feature discovery (the device plugin chart's, the GPU Operator's) puts on a GPU node in an NVLink
domain: ``<cluster UUID>.<clique id>`` of its GPUs' fabric, the same on every host of one NVLink partition
(NVIDIA/k8s-device-plugin v0.20.0, the pinned chart's, ``internal/lm/imex.go``: from the GPUs' fabric IDs alone, no
IMEX config file needed since "Remove IMEX nodes config option"; the DRA driver's demo README lists nodes by it)."""


@dataclass(frozen=True)
class NodeFacts:
    """How a platform's GPU nodes look when they register: their taint, and the labels they carry from boot."""

    name: str
    taint: Taint
    selector: tuple[tuple[str, str, tuple[str, ...]], ...]
    """Node affinity terms (key, operator, values), all required, that select exactly the GPU nodes."""
    boot_labels: MappingProxyType
    """Labels a GPU node of this platform carries when it registers (used by tests and by diagnosis)."""
    source: str
    critical_pods_need_quota: bool = False
    """Pods with priorityClassName system-node-critical or system-cluster-critical (every NVIDIA chart's daemonsets)
    are refused outside kube-system unless a ResourceQuota of their namespace admits those PriorityClasses."""
    toolkit_env: tuple[tuple[str, str], ...] = ()
    """Environment of the GPU Operator's container toolkit on this platform."""
    burn_in_taint: Taint = BURN_IN_TAINT
    """The taint its GPU nodes boot with under burn-in admission: one its scaler treats as a startup taint."""
    sharing_fix: str = ""
    """Where GPU sharing goes when the node image runs a device plugin the charts do not configure."""
    capacity_labels: tuple[CapacityLabel, ...] = ()
    """The labels that say where a node's capacity comes from (:func:`capacity_of`), most telling first."""
    nvlink_domain_label: str = GFD_CLIQUE_LABEL
    """The node label whose value names a GPU node's NVLink domain (one per NVL72 rack partition): what a
    multi-node job's pods share to talk over NVLink. GPU feature discovery's, unless the platform labels it itself."""




@dataclass(frozen=True)
class NodeImage:
    """What a platform's GPU node image installs by itself, before any chart."""

    platform: str
    ships: frozenset
    """Subset of NODE_SOFTWARE (and MIG_PARTITIONING, GPU_LABELS) the image or the platform provides."""
    note: str
    driver_root: str = ""
    """Host directory of a driver installed outside the usual paths, which pods reading NVML must mount."""
    mig_manager_env: tuple[tuple[str, str], ...] = ()
    """Environment of the GPU Operator's MIG manager on this image."""
    operator_image: str = ""
    """Where the GPU Operator cannot run beside this image's own software: the key of the same nodes set up for it."""


DRIVER_TOOLKIT = frozenset({DRIVER, TOOLKIT})
ALL_NODE_SOFTWARE = frozenset({DRIVER, TOOLKIT, DEVICE_PLUGIN})

MIG_STRATEGIES = ("none", "single", "mixed")

MIG_PROFILES = MappingProxyType({
    # (GPU model, memory size GB as gpu_models.csv has it) -> GPU instance profiles (NVIDIA MIG user guide, supported profiles).
    ("A100", 40): ("1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"),
    ("A100", 80): ("1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
    ("A30", 24): ("1g.6gb", "2g.12gb", "4g.24gb"),
    ("H100", 80): ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
    ("H100", 94): ("1g.12gb", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb"),
    ("H200", 141): ("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"),
})
"""MIG-capable GPUs; any other GPU model cannot be partitioned."""

MIG_CONFIG_LABEL = "nvidia.com/mig.config"
"""Node label naming the mig-parted configuration the GPU Operator's MIG manager applies to that node. The
ClusterPolicy's ``migManager.config.default`` is only the fallback, and its CRD accepts no value but ``all-disabled``
or ``""``."""

CRITICAL_PRIORITY_CLASSES = ("system-node-critical", "system-cluster-critical")
CRITICAL_PODS_QUOTA = MappingProxyType({"name": "gpuready-critical-pods", "pods": "1000"})
"""The ResourceQuota that admits critical pods where the platform asks for one (NVIDIA's GKE guide creates it): its
pod limit only has to stay above the NVIDIA pods of the largest pool (about 10 per GPU node)."""

MIG_CONFIGS_ANY_GPU = ("all-disabled", "all-enabled", "all-balanced")
"""mig-parted configs in the GPU Operator's default MIG config that apply to every MIG-capable GPU; the others are
``all-PROFILE`` (every GPU cut into that one profile)."""

TIME_SLICING_REPLICAS = (2, 64)
"""Bounds we accept for replicas per GPU: 1 shares nothing, and beyond 64 each share's memory is too small to use."""

NAMESPACE = "nvidia-gpu"
"""Namespace of every release. Labelled privileged for Pod Security Admission: the NVIDIA daemonsets need host
access, and a namespace enforcing ``baseline`` or ``restricted`` rejects them."""
PRIVILEGED_NAMESPACE_LABELS = MappingProxyType({
    "pod-security.kubernetes.io/enforce": "privileged",
    "pod-security.kubernetes.io/audit": "privileged",
    "pod-security.kubernetes.io/warn": "privileged",
})

DCGM_EXPORTER_METRICS_MOUNT = MappingProxyType({
    "name": "exporter-metrics-volume", "mountPath": "/etc/dcgm-exporter/default-counters.csv",
    "subPath": "default-counters.csv"})
"""The dcgm-exporter chart's own entry of ``extraVolumeMounts``; a values list replaces the default, so it is kept."""
CONTAINER_DRIVER_ROOT = "/usr/local/nvidia"
"""Where a pod mounts a driver installed at ``NodeImage.driver_root`` (GKE's layout)."""

CRITICAL_ADDONS_TOLERATION = MappingProxyType({"key": "CriticalAddonsOnly", "operator": "Exists"})
CONTROL_PLANE_TOLERATION = MappingProxyType(
    {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"})


@dataclass(frozen=True)
class Daemonset:
    """A daemonset a chart runs on GPU nodes: where its tolerations are set, and their default in the pinned chart."""

    name: str
    tolerations_key: str
    """Dotted values path of its tolerations."""
    default_tolerations: tuple
    enabled_key: str = ""
    """Dotted values path that switches it on ('' for always)."""
    enabled_default: bool = True


CHART_DAEMONSETS = MappingProxyType({
    # Defaults copied from the pinned charts' values.yaml; tests compare them with the files.
    "nvidia-device-plugin": (
        Daemonset("device-plugin", "tolerations", (
            {"key": "CriticalAddonsOnly", "operator": "Exists"},
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}), "devicePlugin.enabled", True),
        Daemonset("gpu-feature-discovery", "tolerations", (
            {"key": "CriticalAddonsOnly", "operator": "Exists"},
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}), "gfd.enabled", False),
        Daemonset("nfd-worker", "nfd.worker.tolerations", (
            {"key": "node-role.kubernetes.io/master", "operator": "Equal", "value": "", "effect": "NoSchedule"},
            {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}),
            "gfd.enabled", False),
    ),
    "gpu-operator": (
        Daemonset("operands", "daemonsets.tolerations", (
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},)),
        Daemonset("nfd-worker", "node-feature-discovery.worker.tolerations", (
            {"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "", "effect": "NoSchedule"},
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}), "nfd.enabled", True),
    ),
    "dcgm-exporter": (
        Daemonset("dcgm-exporter", "tolerations", (
            {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"},)),
    ),
})
"""Chart name -> the daemonsets it runs on GPU nodes."""

BURN_IN_LABEL = "gpuready.io/burn-in"
"""Node label the burn-in sets: ``passed``, or ``failed`` (the taint stays, and the reason is the annotation)."""
BURN_IN_REASON_ANNOTATION = "gpuready.io/burn-in-reason"
DCGM_DIAG_LEVELS = (1, 2, 3, 4)
"""``dcgmi diag -r LEVEL``: 1 quick (seconds), 2 medium (about 2 minutes, the default), 3 long, 4 extended (hours)."""
DCGM_IMAGE = "nvcr.io/nvidia/cloud-native/dcgm:4.6.0-1-ubuntu24.04"
"""DCGM (``nv-hostengine``, ``dcgmi``): the image the pinned GPU Operator chart runs (values ``dcgm.version``)."""
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
"""What the burn-in pod keeps running once its init containers are done (a daemonset pod cannot complete)."""
BURN_IN_NAME = "gpuready-burn-in"
"""Name of the burn-in daemonset, its ConfigMap, ServiceAccount, ClusterRole and binding."""

# Kueue: the job queues of the teams sharing a stack's GPUs (components/teams.py), on every Kubernetes platform.
KUEUE_CHART = Chart(
    "oci://registry.k8s.io/kueue/charts/kueue", "", "0.19.2",
    "kubernetes-sigs/kueue v0.19.2 (commit 8eab68778fc1b52affe165fdf5af29d1e9b4f3cb) charts/kueue; published as "
    "oci://registry.k8s.io/kueue/charts/kueue (the chart's README, Installation)")
"""Kueue's official chart, an OCI chart: ``name`` is the full reference and there is no repository."""
KUEUE_IMAGE = MappingProxyType({"repository": "registry.k8s.io/kueue/kueue", "tag": "v0.19.2",
                                "pullPolicy": "IfNotPresent"})
"""The released controller image. The chart's values.yaml at the git tag names the staging image
(``k8s-staging-images/kueue/kueue:release-0.19``, pulled ``Always``), which Kueue's release build rewrites when it
publishes the chart; setting it keeps the release pinned to v0.19.2 whatever the chart's default."""
KUEUE_NAMESPACE = "kueue-system"
"""Where Kueue's own install guide puts it (the chart's README)."""
KUBERNETES_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
"""Namespaces Kubernetes itself makes and uses (its own components, public data, node leases; the Kubernetes docs'
"Initial namespaces"): never a team's. A stack creates each team's namespace, which fails at ``pulumi up`` for one
that exists, and Kueue would hold back the cluster's own pods in it."""
STACK_NAMESPACES = (NAMESPACE, KUEUE_NAMESPACE)
"""The namespaces a Kubernetes stack installs into beside Kubernetes' own (``kube-system``: the EKS autoscalers and
EFA's device plugin): NVIDIA's releases (by default; the stack's ``software.namespace`` too) and Kueue. No team's."""
KUEUE_CONFIG_API = "config.kueue.x-k8s.io/v1beta2"
"""The version of the controller's Configuration the chart's ``managerConfig.controllerManagerConfigYaml`` holds."""
KUEUE_CONFIG_BASE = MappingProxyType({
    "health": {"healthProbeBindAddress": ":8081"},
    "metrics": {"bindAddress": ":8443"},
    "webhook": {"port": 9443},
    "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
    "controller": {"groupKindConcurrency": {
        "Job.batch": 5, "Pod": 5, "Workload.kueue.x-k8s.io": 10, "LocalQueue.kueue.x-k8s.io": 5,
        "ClusterQueue.kueue.x-k8s.io": 5, "ResourceFlavor.kueue.x-k8s.io": 1}},
    "clientConnection": {"qps": 300, "burst": 500},
})
"""The chart's own Configuration (values.yaml ``managerConfig.controllerManagerConfigYaml``), kept whole: a values
document replaces the chart's, so what we do not change is copied (tests compare it with the chart)."""
KUEUE_FRAMEWORKS = ("batch/job", "jobset.x-k8s.io/jobset")
"""Integrations switched on: Jobs (Metaflow's ``@kubernetes``, ``gpuready smoke``) and JobSets (multi-node gangs).
Kueue sets up an integration whose CRD (JobSet's) is missing once the CRD appears."""
KUEUE_WAIT_FOR_PODS_READY = MappingProxyType({
    "timeout": "15m", "blockAdmission": True, "recoveryTimeout": "5m",
    "requeuingStrategy": {"timestamp": "Eviction", "backoffBaseSeconds": 60, "backoffMaxSeconds": 3600}})
"""Gangs all-or-nothing: a workload whose pods are not all ready within ``timeout`` is evicted (its GPUs freed) and
requeued with backoff; ``blockAdmission`` admits nothing else meanwhile, so two half-started gangs never hold each
other's GPUs. 15 minutes, not Kueue's 5: a GPU node scaled from zero takes minutes to join, and a deep-learning image
minutes more to pull."""
KUEUE_FAIR_SHARING = MappingProxyType({"preemptionStrategies": ["LessThanOrEqualToFinalShare",
                                                                "LessThanInitialShare"]})
"""Fair sharing on (in the v1beta2 Configuration its presence switches it on), with Kueue's default strategies:
idle GPUs go to the team with the lowest share (usage above its quota divided by its weight)."""
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
"""The label naming a job's LocalQueue (Kueue's ``constants.QueueLabel``); Metaflow sets it through
``METAFLOW_KUBERNETES_LABELS`` or ``@kubernetes(labels=...)``."""
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
"""The label naming a job's WorkloadPriorityClass (Kueue's ``constants.WorkloadPriorityClassLabel``)."""
TEAM_LABEL = "gpuready.io/team"
"""Label of each team's namespace (value: the team) and of the operators' namespace (value: :data:`OPERATORS_QUEUE`):
Kueue manages the jobs of the namespaces that carry it, and each ClusterQueue admits workloads of its own namespace
only."""
POOL_LABEL = "gpuready.io/gpu-pool"
"""Label gpuready puts on the nodes of each GPU pool when the stack declares teams (value: the pool's name): the
label that tells one pool's nodes from another's, which the pool's ResourceFlavor selects."""
COHORT = "gpuready"
"""The one Cohort every team's ClusterQueue belongs to: they lend each other their idle GPUs."""
FLAVOR_PREFIX = "gpu-"
"""A pool's ResourceFlavor is named after the pool (``teams[].pools`` names it), but its Pulumi child resource, and
those of its AdmissionCheck and ProvisioningRequestConfig, keep the names they had when the flavor was ``gpu-<pool>``
(``<stack>-resourceflavor-gpu-<pool>``): renaming a child replaces it."""
PREFIXED_KINDS = ("ResourceFlavor", "AdmissionCheck", "ProvisioningRequestConfig")
"""The kinds named after a pool's flavor, whose Pulumi child names carry :data:`FLAVOR_PREFIX`."""
PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"
"""``controllerName`` of Kueue's ProvisioningRequest admission check (Kueue's ``ProvisioningRequestControllerName``):
before admitting a workload, Kueue asks the cluster autoscaler for its nodes with a ProvisioningRequest of the class a
ProvisioningRequestConfig names, and admits it once they are provisioned. Kueue 0.19 runs it with no feature gate
(``ProvisioningACC`` graduated and was removed; the chart's ``featureGates`` default is empty)."""
PROVISIONING_CONFIG_KIND = "ProvisioningRequestConfig"
"""The kind an AdmissionCheck's ``parameters`` name for that controller (group: Kueue's)."""
PRIORITY_CLASSES = MappingProxyType({"gpuready-high": 1000, "gpuready-normal": 100, "gpuready-low": 10})
"""WorkloadPriorityClasses: a job names one with the ``kueue.x-k8s.io/priority-class`` label; a team's profile
gives ``gpuready-normal``. Higher preempts lower within a team's quota (``withinClusterQueue: LowerPriority``)."""
DEFAULT_PRIORITY_CLASS = "gpuready-normal"

OPERATORS_QUEUE = "gpuready-operators"
"""The operators' queue, on a stack with teams: its ClusterQueue and its LocalQueue are named so. The queue of the
platform's own checks (``gpuready smoke``, ``gpuready sweep``, ``sweep --repair`` without ``--team``), in the teams'
Cohort; no team may take the name (a team's ClusterQueue is named after it)."""
OPERATORS_NAMESPACE = "gpuready-system"
"""The namespace of the operators' LocalQueue, where those checks run their Jobs; no team may take it."""
OPERATORS_PRIORITY_CLASS = max(PRIORITY_CLASSES, key=PRIORITY_CLASSES.__getitem__)
"""The WorkloadPriorityClass of the operators' Jobs: the highest (``gpuready-high``)."""
OPERATORS_WEIGHT = 100
"""The operators' ClusterQueue's fair-sharing weight. Its nominal quota is 0, so all it runs is borrowed, and its share
(Kueue: the dominant resource's usage above nominal quota, over what the Cohort can lend, divided by the weight) is
1/100 of a team's at weight 1 for the same GPUs: a whole-node check of 8 GPUs counts as 0.08 of a GPU borrowed by
such a team. So fair sharing admits its Jobs first when GPUs are idle, and lets them preempt the borrowed GPUs of a
team that borrows at least that (Kueue never preempts a ClusterQueue that does not borrow). Teams' weights up to
about 10 keep that for nodes of up to 8 GPUs."""
