"""Construction-time checks of :class:`EksGpuClusterArgs`: an impossible setup fails at preview.

:func:`check` raises :class:`~components.errors.ConfigError` naming the field, the value and the fix, and returns
the catalog facts the component reports as outputs.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from .. import catalog
from ..aws_instances import ec2_instance_types, gpu_instances
from ..errors import ConfigError
from ..k8s_gpu import facts as k8s_facts
from ..k8s_gpu.validation import check_cluster_choice, check_labels, check_options
from . import facts
from .args import EksGpuClusterArgs, GpuNodeGroupArgs

_VERSION = re.compile(r"^1\.(\d+)$")


@dataclass(frozen=True)
class EksCapacity:
    """What the node group can offer, from the catalog."""

    instances: tuple[catalog.GpuInstanceType, ...]
    node_image: str
    """Key of ``components.k8s_gpu.facts.NODE_IMAGES``."""
    max_gpus_per_node: int
    max_gpus: int
    """GPUs running at once with ``max_size`` nodes of the largest type."""
    max_usd_per_hour: float
    """On-demand price of ``max_size`` nodes of the dearest type (Spot costs less)."""

    @property
    def gpu_models(self) -> tuple[str, ...]:
        return tuple(sorted({i.gpu_model for i in self.instances}))


def _arch(row: catalog.GpuInstanceType) -> str:
    family = row.name.split(".")[0]
    return "arm64" if family in facts.ARM64_GPU_FAMILIES else "x86_64"


def _check_node_group(ng: GpuNodeGroupArgs) -> tuple[catalog.GpuInstanceType, ...]:
    if ng.ami_type in facts.RETIRED_AMI_TYPES:
        raise ConfigError("node_group.ami_type", ng.ami_type, facts.RETIRED_AMI_TYPES[ng.ami_type],
                          f"use {facts.DEFAULT_AMI_TYPE}")
    if ng.ami_type not in facts.GPU_AMI_TYPES:
        raise ConfigError("node_group.ami_type", ng.ami_type, "not an NVIDIA AMI type, so the nodes get no driver",
                          f"use one of {', '.join(facts.GPU_AMI_TYPES)}")
    rows = gpu_instances("node_group.instance_types", ng.instance_types,
                         "use GPU types (g5, g6, g6e, p4d, p5...) and run CPU work in another node group")
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
    return rows


def _check_cluster(args: EksGpuClusterArgs) -> None:
    check_cluster_choice(args.cluster, args.existing_cluster)
    if args.existing_cluster is not None:
        return
    cluster = args.cluster
    if cluster.version is not None:
        match = _VERSION.match(cluster.version)
        if not match or (1, int(match.group(1))) < facts.MIN_KUBERNETES_VERSION:
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
    gpu_types = [t for t in system.instance_types if catalog.find("aws", t) is not None]
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


def check(args: EksGpuClusterArgs) -> EksCapacity:
    """Raise :class:`ConfigError` for the first input that cannot work; return the capacity the inputs give."""
    _check_cluster(args)
    rows = _check_node_group(args.node_group)
    node_image = f"eks/{args.node_group.ami_type}"
    check_options("software", args.software, k8s_facts.NODE_IMAGES[node_image], node_image,
                  tuple((r.gpu_model, r.gpu_memory_gib) for r in rows))
    ng = args.node_group
    return EksCapacity(
        instances=rows, node_image=node_image,
        max_gpus_per_node=max(r.gpus for r in rows),
        max_gpus=ng.max_size * max(r.gpus for r in rows),
        max_usd_per_hour=round(ng.max_size * max(r.price_usd_hour or 0.0 for r in rows), 2),
    )
