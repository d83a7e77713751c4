"""Construction-time checks of :class:`EksGpuClusterArgs`: an impossible setup fails at preview.

:func:`check` raises :class:`~gpuready_components.errors.ConfigError` naming the field, the value and the fix, and returns
the catalog facts the component reports as outputs.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
from dataclasses import dataclass
from typing import Optional, Sequence

from .. import catalog
from ..aws_instances import SUBNET_ID, ec2_instance_types, gpu_instances
from ..errors import ConfigError
from ..inputs import at_least, checked, checked_list, exactly, pattern
from ..k8s_gpu import facts as k8s_facts
from ..k8s_gpu.install import startup_taints as k8s_startup_taints
from ..k8s_gpu.validation import check_cluster_choice, check_dra_version, check_labels, check_options
from . import facts, reservation
from ..k8s_gpu import scalers as sf
from .args import EksGpuClusterArgs, GpuNodeGroupArgs
from ..k8s_gpu.scale_from_zero import GpuGroup, ScaleGroup, resolve, split, template_tags
from ..k8s_gpu.scale_from_zero import check as scale_check

_VERSION = re.compile(r"^1\.(\d+)$")


@dataclass(frozen=True)
class EksCapacity:
    """What the node group can offer, from the catalog."""

    instances: tuple[catalog.GpuInstanceType, ...]
    node_image: str
    """Key of the platform descriptor's ``node_images``."""
    max_gpus_per_node: int
    max_gpus: int
    """GPUs running at once with ``max_size`` nodes in each GPU group."""
    max_usd_per_hour: float
    """On-demand price of ``max_size`` nodes of each group's dearest type (Spot costs less)."""
    groups: tuple[GpuGroup, ...] = ()
    """The GPU node groups: one per GPU count and model."""
    autoscaler: str = sf.NONE
    """The resolved ``autoscaler.mode``."""
    kubernetes_version: Optional[str] = None
    """The cluster's Kubernetes minor, where known."""
    efa_interfaces: int = 0
    """EFA interfaces of each GPU node (``node_group.efa``); 0: no EFA, NCCL across nodes uses TCP sockets."""

    @property
    def gpu_models(self) -> tuple[str, ...]:
        return tuple(sorted({i.gpu_model for i in self.instances}))


def _arch(row: catalog.GpuInstanceType) -> str:
    family = row.name.split(".")[0]
    return "arm64" if family in facts.ARM64_GPU_FAMILIES else "x86_64"


def _check_node_group(ng: GpuNodeGroupArgs, types: catalog.Catalog) -> tuple[catalog.GpuInstanceType, ...]:
    if ng.ami_type in facts.RETIRED_AMI_TYPES:
        raise ConfigError("node_group.ami_type", ng.ami_type, facts.RETIRED_AMI_TYPES[ng.ami_type],
                          f"use {facts.DEFAULT_AMI_TYPE}")
    if ng.ami_type not in facts.GPU_AMI_TYPES:
        raise ConfigError("node_group.ami_type", ng.ami_type, "not an NVIDIA AMI type, so the nodes get no driver",
                          f"use one of {', '.join(facts.GPU_AMI_TYPES)}")
    rows = gpu_instances("node_group.instance_types", ng.instance_types,
                         "use GPU types (g5, g6, g6e, p4d, p5...) and run CPU work in another node group", types)
    arch = facts.GPU_AMI_TYPES[ng.ami_type].arch
    wrong = [r.name for r in rows if _arch(r) != arch]
    if wrong:
        raise ConfigError("node_group.instance_types", wrong, f"not {arch} instances, which {ng.ami_type} needs",
                          "use one architecture: x86_64 types with *_x86_64_NVIDIA, Graviton (g5g) with *_ARM_64_NVIDIA")
    if ng.capacity_type not in facts.CAPACITY_TYPES:
        raise ConfigError("node_group.capacity_type", ng.capacity_type, "not a capacity type this component makes",
                          f"use {' or '.join(facts.CAPACITY_TYPES)}")
    desired = ng.min_size if ng.desired_size is None else ng.desired_size
    if ng.min_size < 0 or ng.max_size < 1 or not ng.min_size <= desired <= ng.max_size:
        raise ConfigError("node_group.min_size/desired_size/max_size", (ng.min_size, desired, ng.max_size),
                          "need 0 <= min_size <= desired_size <= max_size and max_size >= 1",
                          "set min_size 0 (no idle GPUs billed) and max_size to the most nodes to run at once")
    low, high = facts.ROOT_VOLUME_GIB_RANGE
    if not low <= ng.root_volume_gib <= high:
        raise ConfigError("node_group.root_volume_gib", ng.root_volume_gib, f"must be between {low} and {high} GiB",
                          "use 100 GiB or more for deep-learning images")
    check_labels("node_group.labels", ng.labels, facts.GPU_NODE_LABELS)
    repair = ng.repair
    for key, value, low, high in (("max_parallel", repair.max_parallel, 1, None),
                                  ("max_unhealthy_percent", repair.max_unhealthy_percent, 1, 100),
                                  ("wait_minutes", repair.wait_minutes, 1, None)):
        if not isinstance(value, int) or value < low or (high is not None and value > high):
            raise ConfigError(f"node_group.repair.{key}", value,
                              f"EKS takes {low} or more" + (f" and at most {high}" if high else ""),
                              f"set a whole number {'between %d and %d' % (low, high) if high else 'of 1 or more'}")
    return rows


def _check_ultraserver(ng: GpuNodeGroupArgs, mode: str) -> None:
    """A type sold only inside UltraServers (:data:`facts.ULTRASERVERS`): a Capacity Block of whole UltraServers, a
    node group EKS runs DRA on, the AMI EKS recommends."""
    sold = [t for t in ng.instance_types if t in facts.ULTRASERVERS]
    if not sold:
        return
    servers = facts.ULTRASERVERS[sold[0]]
    named = ", ".join(f"{name} ({count} instances)" for name, count in servers.items())
    res = ng.reservation
    if res is None or res.kind != reservation.CAPACITY_BLOCK:
        raise ConfigError("node_group.reservation" + (".kind" if res else ""), res.kind if res else None,
                          f"{sold[0]} is sold only inside "
                          f"UltraServers ({named}), as EC2 Capacity Blocks for ML",
                          "buy an UltraServer Capacity Block and give reservation {kind: capacity-block, id: cr-...}")
    if mode in reservation.NODE_POOL_MODES:
        raise ConfigError("autoscaler.mode", mode, f"EKS runs {sold[0]} with DRA, which Karpenter and EKS Auto Mode do "
                          "not support", "use cluster-autoscaler (a managed node group) or none")
    if res.count is not None and res.count % min(servers.values()):
        raise ConfigError("node_group.reservation.count", res.count, f"an UltraServer Capacity Block holds whole "
                          f"UltraServers: {named}", f"give the block's instance count, e.g. {max(servers.values())}")
    if ng.efa:
        raise ConfigError("node_group.efa", True, f"{sold[0]}'s EFA interfaces sit on network cards 1, 3, ... 15 (AWS's "
                          "P6e-GB200 network guide), a layout the launch template gpuready writes (cards in a row) "
                          "does not have", "drop efa: within an UltraServer NCCL crosses hosts over NVLink "
                          "(ComputeDomains)")
    if ng.ami_type != facts.ULTRASERVER_AMI_TYPE:
        raise ConfigError("node_group.ami_type", ng.ami_type, f"EKS recommends the AL2023 ARM NVIDIA AMI for {sold[0]} "
                          "(its node components and IMEX configuration)", f"use {facts.ULTRASERVER_AMI_TYPE}")


def _check_cluster(args: EksGpuClusterArgs, types: catalog.Catalog) -> None:
    check_cluster_choice(args.cluster, args.existing_cluster)
    if args.existing_cluster is not None:
        return
    cluster = args.cluster
    if cluster.version is not None:
        if not _version_ok(cluster.version):
            oldest = ".".join(map(str, facts.MIN_KUBERNETES_VERSION))
            raise ConfigError("cluster.version", cluster.version, f"not a Kubernetes version {oldest} or newer",
                              "use a version EKS supports, such as 1.33, or leave it unset for EKS's default")
    for cidr in cluster.public_access_cidrs:
        try:
            ipaddress.ip_network(cidr)
        except ValueError:
            raise ConfigError("cluster.public_access_cidrs", cidr, "not a CIDR block", "use a range like 203.0.113.0/24") \
                from None
    if cluster.public_access_cidrs and not cluster.endpoint_public_access:
        raise ConfigError("cluster.public_access_cidrs", list(cluster.public_access_cidrs),
                          "an allow-list for a public endpoint that is off", "drop it, or set endpoint_public_access")
    system = cluster.system_nodes
    gpu_types = [t for t in system.instance_types if types.find("aws", t) is not None]
    # The defaults are checked against EC2's list in the tests; loading that list costs a quarter second.
    unknown = [t for t in system.instance_types
               if t not in facts.SYSTEM_INSTANCE_TYPES and t not in ec2_instance_types()]
    if gpu_types or unknown or not system.instance_types:
        raise ConfigError("cluster.system_nodes.instance_types", list(system.instance_types),
                          "must list CPU instance types", "use small general-purpose types such as m6i.large")
    if system.size < 1:
        raise ConfigError("cluster.system_nodes.size", system.size, "a new cluster needs CPU nodes for CoreDNS and "
                          "the GPU software's controllers", "use 2")
    bad_logs = [t for t in cluster.log_types if t not in facts.LOG_TYPES]
    if bad_logs:
        raise ConfigError("cluster.log_types", bad_logs, "not EKS control-plane log types",
                          f"use {', '.join(facts.LOG_TYPES)}")


def _version_ok(version: str) -> bool:
    match = _VERSION.match(version)
    return bool(match) and (1, int(match.group(1))) >= facts.MIN_KUBERNETES_VERSION


def _check_autoscaler(args: EksGpuClusterArgs) -> tuple[str, Optional[str]]:
    """The resolved mode and the cluster's Kubernetes minor (where known)."""
    new = args.cluster is not None
    mode = resolve(args.autoscaler.mode, new)
    field = "autoscaler.mode (stack: gpuready:autoscaler)"
    if mode not in sf.MODES:
        raise ConfigError(field, mode, "not an autoscaler", f"use one of {', '.join(sf.MODES)}")
    if mode == sf.AUTO_MODE and not new:
        raise ConfigError(field, mode, "EKS Auto Mode is switched on when the cluster is created",
                          "use it with a new cluster, or none / cluster-autoscaler for an existing one")
    if mode == sf.NONE and new and args.node_group.min_size == 0:
        raise ConfigError(field, mode, "a new cluster has no autoscaler, so GPU pods wait forever for a node of a "
                          "group at min_size 0", "use cluster-autoscaler (the default), or set min_size >= 1")
    if new:
        version = args.cluster.version or sf.DEFAULT_KUBERNETES_VERSION
    else:
        version = args.autoscaler.kubernetes_version
        if version is not None and not _version_ok(version):
            raise ConfigError("autoscaler.kubernetes_version (stack: gpuready:kubernetesVersion)", version,
                              "not a Kubernetes version", "give the existing cluster's version, such as 1.33")
    if mode == sf.CLUSTER_AUTOSCALER:
        if version is None:
            raise ConfigError("autoscaler.kubernetes_version (stack: gpuready:kubernetesVersion)", None,
                              "cluster-autoscaler's image must match the existing cluster's Kubernetes minor",
                              "give the cluster's version, such as 1.33")
        if version not in sf.CLUSTER_AUTOSCALER_IMAGES:
            raise ConfigError("cluster.version" if new else "autoscaler.kubernetes_version", version,
                              "no cluster-autoscaler image is pinned for this Kubernetes minor",
                              f"use one of {', '.join(sf.CLUSTER_AUTOSCALER_IMAGES)}")
    return mode, version


EFA_TYPES = "g6.12xlarge, g6e.48xlarge, p4d.24xlarge or p5.48xlarge"


def _check_efa(ng: GpuNodeGroupArgs, mode: str, rows: tuple[catalog.GpuInstanceType, ...]) -> int:
    """EFA interfaces per node of an EFA node group (0 without ``efa``)."""
    if not ng.efa:
        return 0
    field = "node_group.efa"
    if mode not in (sf.CLUSTER_AUTOSCALER, sf.NONE):
        raise ConfigError(field, True, f"EFA is set up on managed node groups' launch template, and {mode} "
                          "launches no node group", "use autoscaler cluster-autoscaler (or none), or drop efa")
    counts = {r.name: r.efa_interfaces for r in rows}
    without = [name for name, n in counts.items() if n == 0]
    if without:
        raise ConfigError("node_group.instance_types", without,
                          "no EFA on these types: NCCL would fall back to TCP sockets",
                          f"use EFA types only ({EFA_TYPES}), or drop efa")
    if len(set(counts.values())) > 1:
        raise ConfigError("node_group.instance_types", counts,
                          "types with different numbers of EFA interfaces share one launch template, which one "
                          "of them cannot launch",
                          "use types with the same count, e.g. only p4d.24xlarge/p4de.24xlarge")
    return next(iter(counts.values()))


CLUSTER_NAME = pattern(facts.CLUSTER_NAME, "an EKS cluster name (letters, digits, - and _, from a letter or digit, "
                       "at most 100)", "give the cluster's name as `aws eks list-clusters` shows it, not its ARN")


def checked_inputs(args: EksGpuClusterArgs) -> EksGpuClusterArgs:
    """``args`` with the inputs other resources' outputs feed checked (:mod:`~gpuready_components.inputs`): the
    subnet ids (two or more for a new cluster; one for an EFA node group), an existing cluster's name; each checked
    now when its value is known and when it resolves otherwise. The component builds from the returned args only."""
    need = facts.CLUSTER_SUBNETS if args.cluster is not None else 1
    subnets = checked_list(args.subnet_ids, "subnet_ids", SUBNET_ID, at_least(
        need, "EKS needs subnets in two or more Availability Zones for a new cluster", "give private subnets in two "
        "or more Availability Zones") if need > 1 else at_least(1, "the GPU nodes need a subnet",
                                                               "give one or more private subnets of the cluster's VPC"))
    ng = args.node_group
    one = exactly(1, "an EFA node group's cluster placement group lies in one Availability Zone, and EFA traffic "
                  "does not cross zones", "give one subnet, or leave it unset for the first of the cluster's subnets")
    ng = dataclasses.replace(ng, subnet_ids=checked_list(ng.subnet_ids, "node_group.subnet_ids", SUBNET_ID,
                                                         one if ng.efa else at_least(1, "the nodes need a subnet",
                                                                                     "give one or more subnets")))
    existing = args.existing_cluster
    if existing is not None:
        existing = dataclasses.replace(existing, name=checked(existing.name, "existing_cluster.name", CLUSTER_NAME))
    return dataclasses.replace(args, subnet_ids=subnets, node_group=ng, existing_cluster=existing)


def group_labels(gpu_node_labels: dict[str, str], group: GpuGroup) -> dict[str, str]:
    """A GPU group's node labels: the GPU nodes' labels and cluster-autoscaler's accelerator label."""
    return {**gpu_node_labels, sf.ACCELERATOR_LABEL: sf.accelerator(group.gpu_model)}


def _check_auto_mode_software(args: EksGpuClusterArgs) -> None:
    """Auto Mode runs its own NVIDIA device plugin: the stack adds no plugin, GPU feature discovery or operator."""
    sw = args.software
    asked = [what for what, on in (("install: gpu-operator", sw.install == "gpu-operator"),
                                   ("install: dra", sw.install == "dra"),
                                   ("gpu_feature_discovery", bool(sw.gpu_feature_discovery)),
                                   ("time_slicing_replicas", sw.time_slicing_replicas is not None),
                                   ("mig", sw.mig is not None)) if on]
    if asked:
        raise ConfigError("software", asked, "EKS Auto Mode runs its own NVIDIA device plugin (not configurable "
                          "here); a second plugin, GPU feature discovery or the GPU Operator breaks GPU allocation",
                          "drop them (the DCGM exporter is fine), or use autoscaler cluster-autoscaler")


def gpu_labels(ng: GpuNodeGroupArgs) -> dict[str, str]:
    """The labels every GPU node registers with: the admin's, the GPU label, and the EFA label on EFA groups."""
    return {**ng.labels, **facts.GPU_NODE_LABELS, **(facts.EFA_NODE_LABELS if ng.efa else {})}


def startup_taints(args: EksGpuClusterArgs) -> tuple[k8s_facts.Taint, ...]:
    """Taints GPU nodes boot with and lose once ready: the burn-in taint, with burn-in admission on."""
    return k8s_startup_taints(args.software, "eks")


def efa_resources(efa: int) -> dict[str, int]:
    """What an EFA node offers besides GPUs, for cluster-autoscaler's node template."""
    return {facts.EFA_RESOURCE: efa} if efa else {}


def _check_scale_from_zero(args: EksGpuClusterArgs, mode: str, groups: tuple[GpuGroup, ...],
                           rows: Sequence[catalog.GpuInstanceType], efa: int = 0) -> None:
    """The smoke pod (GPU nodes' labels, GPU taint tolerated) must make the scaler add a node, at 1 GPU and at the
    most GPUs one of ``rows`` (the node group's types) has."""
    type_gpus = {r.name: r.gpus for r in rows}
    gpus = max(type_gpus.values())
    taint = facts.NODES.taint
    labels = gpu_labels(args.node_group)
    startup = startup_taints(args)
    scale_groups = []
    if mode in (sf.AUTO_MODE, sf.KARPENTER):
        scale_groups.append(ScaleGroup(sf.NODE_POOL_NAME, tuple(t for g in groups for t in g.instance_types), labels,
                                       (taint, *startup), startup_taints=startup, type_gpus=type_gpus))
        groups = ()
    for g in groups:
        node_labels = group_labels(labels, g)
        scale_groups.append(ScaleGroup(f"gpu{g.suffix}", g.instance_types, node_labels, (taint, *startup),
                                       template_tags(g.gpus, node_labels, [taint], efa_resources(efa)),
                                       startup_taints=startup, type_gpus=type_gpus))
    result = scale_check(mode, scale_groups, labels, [{"key": taint.key, "operator": "Exists"}], gpus)
    if not result.ok:
        raise ConfigError("autoscaler.mode (stack: gpuready:autoscaler)", mode, "; ".join(result.problems),
                          "fix the node groups or choose another autoscaler")


def catalog_of(args: EksGpuClusterArgs) -> catalog.Catalog:
    """The catalog the component checks its types against: the file's and ``extra_instance_types`` (a
    :class:`ConfigError` for a declared type that fails the catalog's checks)."""
    return catalog.declared("aws", args.extra_instance_types)


def check(args: EksGpuClusterArgs) -> EksCapacity:
    """Raise :class:`ConfigError` for the first input that cannot work; return the capacity the inputs give."""
    types = catalog_of(args)
    _check_cluster(args, types)
    rows = _check_node_group(args.node_group, types)
    mode, version = _check_autoscaler(args)
    node_image = facts.node_image(args.node_group.ami_type)
    if mode == sf.AUTO_MODE:
        _check_auto_mode_software(args)
        node_image = facts.AUTO_MODE_NODE_IMAGE
    if mode == sf.KARPENTER and args.node_group.ami_type not in sf.KARPENTER_AMI_TYPES:
        raise ConfigError("node_group.ami_type", args.node_group.ami_type,
                          f"Karpenter's GPU nodes boot the pinned {sf.KARPENTER_AMI_ALIAS} alias (AL2023 NVIDIA)",
                          f"use {' or '.join(sf.KARPENTER_AMI_TYPES)}")
    check_options("software", args.software, facts.NODE_IMAGES[node_image], node_image,
                  tuple((r.gpu_model, r.gpu_memory_gib) for r in rows))
    check_dra_version("cluster.version" if args.cluster is not None else "autoscaler.kubernetes_version", version,
                      args.software)
    ng = args.node_group
    groups = split(rows)
    efa = _check_efa(ng, mode, rows)
    _check_ultraserver(ng, mode)
    if ng.reservation is not None:
        reservation.check(ng.reservation, capacity_type=ng.capacity_type, instance_types=ng.instance_types,
                          max_size=ng.max_size, mode=mode, managed_modes=(sf.CLUSTER_AUTOSCALER, sf.NONE))
    _check_scale_from_zero(args, mode, groups, rows, efa)
    price = {r.name: r.price_usd_hour or 0.0 for r in rows}
    if mode in (sf.AUTO_MODE, sf.KARPENTER):  # one NodePool of every type, capped at max_size nodes of the largest
        groups = (GpuGroup("", tuple(r.name for r in rows), max(r.gpus for r in rows), rows[0].gpu_model),)
    return EksCapacity(
        instances=rows, node_image=node_image,
        max_gpus_per_node=max(r.gpus for r in rows),
        max_gpus=ng.max_size * sum(g.gpus for g in groups),
        max_usd_per_hour=round(ng.max_size * sum(max(price[t] for t in g.instance_types) for g in groups), 2),
        groups=groups, autoscaler=mode, kubernetes_version=version, efa_interfaces=efa,
    )
