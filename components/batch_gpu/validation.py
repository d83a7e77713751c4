"""Construction-time checks of :class:`BatchGpuEnvironmentArgs`: an impossible setup fails at preview.

:func:`check` raises :class:`~gpuready_components.errors.ConfigError` naming the field, the value and the fix, and returns
the catalog facts the component reports as outputs.
"""

from __future__ import annotations

import dataclasses
import datetime
import re
from dataclasses import dataclass
from typing import Optional, Sequence

from .. import catalog
from ..aws_instances import (ENA_ONLY_FIRST_CARD, SECURITY_GROUP_ID, SUBNET_ID, VPC_ID, arch, ec2_instance_types,
                             gpu_instances)
from ..errors import ConfigError
from . import reservation
from ..inputs import at_least, checked, checked_list
from ..teams import Pool
from . import facts
from .shares import Share, check_policy, shares
from ..ecs_fit import Needs, full_scale, holding, largest, offer, usable_memory_mib
from .args import BatchGpuEnvironmentArgs, GpuJobArgs, MultiNodeArgs

_POLICY_ARN = re.compile(r"arn:aws[a-z-]*:iam::(aws|[0-9]{12}):policy/[\w+=,.@/-]+")

_BUCKET = re.compile(r"(?!xn--)(?!.*\.\.)[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
"""S3's bucket naming rules (3-63 characters: lowercase letters, digits, dots and hyphens)."""

_LOG_RETENTION_DAYS = (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922,
                       3288, 3653)


@dataclass(frozen=True)
class MultiNodePlan:
    """The multi-node compute environment and job definition that :class:`MultiNodeArgs` resolve to."""

    nodes: int
    instances: tuple[catalog.GpuInstanceType, ...]
    max_vcpus: int
    gpus: int
    """GPUs each node's container asks for: every GPU of the type."""
    vcpus: int
    memory_mib: int
    shared_memory_mib: int
    efa_interfaces: int
    """EFA interfaces per node; 0: none."""
    rdma: bool
    """Whether every type's EFA does GPUDirect RDMA (``FI_EFA_USE_DEVICE_RDMA=1``)."""

    @property
    def instance_types(self) -> list[str]:
        return [r.name for r in self.instances]


@dataclass(frozen=True)
class BatchCapacity:
    """What the environment can offer, from the catalog."""

    instances: tuple[catalog.GpuInstanceType, ...]
    max_gpus_per_instance: int
    max_vcpus_per_instance: int
    max_memory_mib_per_instance: int
    max_total_gpus: int
    """GPUs running at once when every compute environment is at ``max_vcpus``."""
    max_usd_per_hour: float
    """On-demand price of that much capacity (Spot costs less); types without a price count as 0."""
    unpriced: tuple[str, ...]
    """Instance types the catalog has no on-demand price for."""
    multi_node: Optional[MultiNodePlan] = None
    """The multi-node environment, whose capacity the totals above include."""
    pools: tuple[Pool, ...] = ()
    """The GPU compute environments as the teams name them (``on-demand``, ``spot``, ``multi-node``), each with the
    GPUs it runs at full scale."""
    shares: tuple[Share, ...] = ()
    """The teams' shares of the fair-share queues (none without teams)."""

    @property
    def gpu_models(self) -> tuple[str, ...]:
        return tuple(sorted({i.gpu_model for i in self.instances}))


def _check_image(args: BatchGpuEnvironmentArgs, rows: Sequence[catalog.GpuInstanceType],
                 today: datetime.date) -> None:
    archs = {arch(r) for r in rows}
    if len(archs) > 1:
        raise ConfigError("instance_types", [r.name for r in rows if arch(r) == "arm64"],
                          "arm64 (Graviton) types beside x86_64 ones: one AMI cannot boot both",
                          "use one architecture per compute environment")
    if args.image_id is not None:
        return
    if archs == {"arm64"}:
        raise ConfigError("instance_types", [r.name for r in rows], "arm64 (Graviton) GPU types: Batch's NVIDIA "
                          "image types are for x86_64 instances only (Batch API, Ec2Configuration.imageType)",
                          "use x86_64 GPU types (g6, g5, g4dn...), or give image_id for an arm64 AMI with the "
                          "NVIDIA driver and ECS agent")
    if args.image_type not in facts.GPU_IMAGE_TYPES:
        raise ConfigError("image_type", args.image_type, "not an NVIDIA image type, so the instances get no driver",
                          f"use {facts.DEFAULT_IMAGE_TYPE}, or give image_id for an AMI that ships the driver")
    if args.image_type == "ECS_AL2_NVIDIA" and today >= datetime.date.fromisoformat(facts.AL2_BLOCKED_FROM):
        raise ConfigError("image_type", args.image_type,
                          f"Batch refuses new compute environments on Amazon Linux 2 AMIs since "
                          f"{facts.AL2_BLOCKED_FROM}", f"use {facts.DEFAULT_IMAGE_TYPE}")
    unsupported = facts.IMAGE_TYPE_UNSUPPORTED_FAMILIES.get(args.image_type, ())
    bad = [r.name for r in rows if r.name.split(".")[0] in unsupported]
    if bad:
        raise ConfigError("instance_types", bad, f"{args.image_type} does not support these instance families",
                          "use newer GPU families (g5, g6, p4d, p5), or give image_id for an AMI that supports them")


def _needs(job: GpuJobArgs) -> Needs:
    return Needs(job.gpus, job.vcpus, job.memory_mib)


def _check_job(field: str, job: GpuJobArgs, rows: Sequence[catalog.GpuInstanceType], max_vcpus: int,
               types: catalog.Catalog) -> None:
    for name, value, low in (("gpus", job.gpus, 1), ("vcpus", job.vcpus, 1), ("memory_mib", job.memory_mib, 4),
                             ("timeout_seconds", job.timeout_seconds, 60)):
        if value < low:
            raise ConfigError(f"{field}.{name}", value, f"must be at least {low}", f"set {field}.{name} >= {low}")
    if not job.image:
        raise ConfigError(f"{field}.image", job.image, "no container image", "give a CUDA image with Python")
    needs = _needs(job)
    if holding(needs, rows):
        if job.vcpus > max_vcpus:
            raise ConfigError(f"{field}.vcpus", job.vcpus, f"more than max_vcpus ({max_vcpus}), so it never starts",
                              f"raise max_vcpus to at least {job.vcpus}")
        return
    offered = "; ".join(offer(r) for r in largest(rows, 3))
    candidates = sorted(holding(needs, (r for r in types.rows() if r.cloud == "aws")),
                        key=lambda r: (r.price_usd_hour is None, r.price_usd_hour or 0))
    fix = f"ask for less, or add an instance type that holds it, such as {', '.join(r.name for r in candidates[:2])}" \
        if candidates else "ask for less: no AWS GPU instance holds this job"
    raise ConfigError(field, str(needs), f"no instance type in the queue can hold this job, so it would sit in "
                      f"RUNNABLE forever (largest: {offered})", fix)


def _one_subnet(field: str, value: object) -> None:
    if isinstance(value, (list, tuple)):
        raise ConfigError(field, list(value), "a multi-node job's nodes share one cluster placement group, which "
                          "lives in one Availability Zone: one subnet, not several",
                          "give one subnet id (the first of subnet_ids when omitted)")
    SUBNET_ID(field, value)


def checked_inputs(args: BatchGpuEnvironmentArgs) -> BatchGpuEnvironmentArgs:
    """``args`` with its network inputs checked (:mod:`~gpuready_components.inputs`): the subnet ids, the VPC id,
    the security group ids and the multi-node subnet, each checked now when its value is known and when it resolves
    otherwise; the component builds its resources from the returned args only."""
    subnets = checked_list(args.subnet_ids, "subnet_ids", SUBNET_ID, at_least(
        1, "Batch launches the instances in these subnets", "give the private subnets of your VPC"))
    groups = checked_list(args.security_group_ids, "security_group_ids", SECURITY_GROUP_ID, at_least(
        1, "Batch needs one or more security groups for the instances",
        "give your groups' ids, or leave security_group_ids unset to have one created (with vpc_id)"))
    multi_node = args.multi_node
    if multi_node is not None and multi_node.subnet is not None and not isinstance(multi_node.subnet, (list, tuple)):
        multi_node = dataclasses.replace(multi_node, subnet=checked(multi_node.subnet, "multi_node.subnet",
                                                                    _one_subnet))
    # vpc_id feeds only the groups the component creates: checked where one is made, so that no check waits on an
    # output nothing takes (it would fail only as the program ends, after the compute environments)
    used = args.security_group_ids is None or args.multi_node is not None
    vpc_id = checked(args.vpc_id, "vpc_id", VPC_ID) if used else args.vpc_id
    return dataclasses.replace(args, subnet_ids=subnets, vpc_id=vpc_id, security_group_ids=groups,
                               multi_node=multi_node)


def catalog_of(args: BatchGpuEnvironmentArgs) -> catalog.Catalog:
    """The catalog the component checks its types against: the file's and ``extra_instance_types`` (a
    :class:`ConfigError` for a declared type that fails the catalog's checks)."""
    return catalog.declared("aws", args.extra_instance_types)


def check(args: BatchGpuEnvironmentArgs, today: Optional[datetime.date] = None) -> BatchCapacity:
    """Raise :class:`ConfigError` for the first input that cannot work; return the capacity the inputs give."""
    today = today or datetime.date.today()
    types = catalog_of(args)
    rows = gpu_instances("instance_types", args.instance_types,
                         "use GPU types (g4dn, g5, g6, g6e, p4d, p5...) in a GPU environment and put CPU work in "
                         "cpu_queue", types)
    _check_image(args, rows, today)

    if not args.capacity or len(set(args.capacity)) != len(args.capacity) or \
            any(c not in facts.CAPACITY for c in args.capacity):
        raise ConfigError("capacity", list(args.capacity), "must list on-demand and/or spot, each once",
                          "use ['on-demand'], ['spot'] or ['spot', 'on-demand']")
    if args.min_vcpus < 0 or args.max_vcpus < 1 or args.min_vcpus > args.max_vcpus:
        raise ConfigError("min_vcpus/max_vcpus", (args.min_vcpus, args.max_vcpus), "need 0 <= min_vcpus <= max_vcpus",
                          "set min_vcpus to 0 (no idle GPUs billed) and max_vcpus to the most vCPUs to run at once")
    too_big = [r.name for r in rows if r.vcpus > args.max_vcpus]
    if too_big:
        need = max(r.vcpus for r in rows)
        raise ConfigError("max_vcpus", args.max_vcpus, f"smaller than one instance of {', '.join(too_big)}, which "
                          "can then never launch", f"raise max_vcpus to at least {need} or remove those types")
    low, high = facts.ROOT_VOLUME_GIB_RANGE
    if not low <= args.root_volume_gib <= high:
        raise ConfigError("root_volume_gib", args.root_volume_gib, f"must be between {low} and {high} GiB",
                          "use 100 GiB or more for deep-learning images")
    _check_job("job", args.job, rows, args.max_vcpus, types)

    if args.reservation is not None:
        reservation.check(args.reservation, capacity=args.capacity, instance_types=args.instance_types, rows=rows,
                          max_vcpus=args.max_vcpus)
    multi_node = _check_multi_node(args.multi_node, rows, types) if args.multi_node is not None else None

    minutes = args.runnable_timeout_minutes
    lo, hi = (s // 60 for s in facts.RUNNABLE_SECONDS_RANGE)
    if not lo <= minutes <= hi:
        raise ConfigError("runnable_timeout_minutes", minutes, f"Batch accepts {lo} to {hi} minutes",
                          f"use a value between {lo} and {hi}")
    if args.log_retention_days not in _LOG_RETENTION_DAYS:
        raise ConfigError("log_retention_days", args.log_retention_days, "not a CloudWatch Logs retention period",
                          f"use one of {', '.join(map(str, _LOG_RETENTION_DAYS[:9]))}...")

    bucket = args.metaflow_datastore_bucket
    if bucket is not None and not (isinstance(bucket, str) and _BUCKET.fullmatch(bucket)):
        raise ConfigError("metaflow_datastore_bucket", bucket, "not an S3 bucket name",
                          "give the bucket's name alone (my-metaflow-bucket), without s3:// or a path")
    not_arns = [a for a in args.job_role_policy_arns if not (isinstance(a, str) and _POLICY_ARN.fullmatch(a))]
    if not_arns:
        raise ConfigError("job_role_policy_arns", not_arns, "not IAM managed policy ARNs",
                          "list ARNs such as arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess")

    if args.cpu_queue is not None:
        gpu_in_cpu = [n for n in args.cpu_queue.instance_types if types.find("aws", n) is not None]
        if gpu_in_cpu:
            raise ConfigError("cpu_queue.instance_types", gpu_in_cpu, "GPU instances in the CPU queue",
                              "list CPU instance types (m6i, c6i...) for the CPU queue")
        unknown = [n for n in args.cpu_queue.instance_types if n not in ec2_instance_types()]
        if unknown or not args.cpu_queue.instance_types:
            raise ConfigError("cpu_queue.instance_types", unknown, "not EC2 instance types",
                              "use EC2 instance types such as m6i.large")
        if args.cpu_queue.max_vcpus < 1:
            raise ConfigError("cpu_queue.max_vcpus", args.cpu_queue.max_vcpus, "must be at least 1",
                              "set cpu_queue.max_vcpus")

    capacity = _capacity(rows, args.max_vcpus, args.capacity, multi_node)
    check_policy(args.fair_share_compute_reservation, args.fair_share_decay_seconds)
    return dataclasses.replace(capacity, shares=shares(args.teams, capacity.pools, args.overcommit_quotas))


MULTI_NODE_POOL = "multi-node"
"""The teams' name of the multi-node compute environment (the others by their ``capacity``)."""


def _capacity(rows: Sequence[catalog.GpuInstanceType], max_vcpus: int, environments: Sequence[str],
              multi_node: Optional[MultiNodePlan] = None) -> BatchCapacity:
    one = full_scale(rows, max_vcpus)
    gpus, dollars = one.gpus * len(environments), one.usd_per_hour * len(environments)
    pools = [Pool(kind, one.gpus) for kind in environments]
    everything = list(rows)
    if multi_node is not None:
        more = full_scale(multi_node.instances, multi_node.max_vcpus)
        gpus, dollars = gpus + more.gpus, dollars + more.usd_per_hour
        pools.append(Pool(MULTI_NODE_POOL, more.gpus))
        everything += [r for r in multi_node.instances if r not in everything]
    return BatchCapacity(
        instances=tuple(everything),
        max_gpus_per_instance=max(r.gpus for r in everything),
        max_vcpus_per_instance=max(r.vcpus for r in everything),
        max_memory_mib_per_instance=max(usable_memory_mib(r) for r in everything),
        max_total_gpus=gpus,
        max_usd_per_hour=round(dollars, 2),
        unpriced=tuple(r.name for r in everything if r.price_usd_hour is None),
        multi_node=multi_node,
        pools=tuple(pools),
    )


def _check_multi_node(mn: MultiNodeArgs, gpu_rows: Sequence[catalog.GpuInstanceType],
                      types: catalog.Catalog) -> MultiNodePlan:
    """Raise :class:`ConfigError` for a multi-node setup that cannot run; return what it resolves to."""
    if not isinstance(mn.nodes, int) or mn.nodes < 2:
        raise ConfigError("multi_node.nodes", mn.nodes, "a multi-node job needs at least 2 nodes",
                          "set multi_node.nodes >= 2, or turn multi_node off for single-node jobs")
    if mn.capacity != "on-demand":
        raise ConfigError("multi_node.capacity", mn.capacity, "AWS Batch runs multi-node parallel jobs on EC2 "
                          "on-demand capacity only (not on Spot, not on Fargate)",
                          "leave multi_node.capacity at on-demand (single-node jobs can still use Spot)")
    if isinstance(mn.subnet, (list, tuple)):
        _one_subnet("multi_node.subnet", mn.subnet)
    if mn.instance_types:
        rows = gpu_instances("multi_node.instance_types", mn.instance_types,
                             "multi-node jobs take GPU instance types", types)
    else:
        most = max(r.gpus for r in gpu_rows)
        rows = tuple(r for r in gpu_rows if r.gpus == most)
    counts = sorted({r.gpus for r in rows})
    if len(counts) > 1:
        raise ConfigError("multi_node.instance_types", [r.name for r in rows],
                          f"types with {' and '.join(map(str, counts))} GPUs: every node of a gang job must run the "
                          "same number of ranks",
                          "list types with the same GPU count")
    efa_counts = {r.efa_interfaces for r in rows}
    if 0 in efa_counts and len(efa_counts) > 1:
        with_efa = [r.name for r in rows if r.efa_interfaces]
        without = [r.name for r in rows if not r.efa_interfaces]
        raise ConfigError("multi_node.instance_types", [r.name for r in rows],
                          f"mixes EFA types ({', '.join(with_efa)}) with types without EFA ({', '.join(without)}): "
                          "one launch template cannot serve both, and NCCL would fall back to TCP on some nodes",
                          "list only EFA-capable types, or only types without EFA")
    available = min(efa_counts)
    efa = available if mn.efa_interfaces is None else mn.efa_interfaces
    if not isinstance(efa, int) or efa < 0:
        raise ConfigError("multi_node.efa_interfaces", efa, "must be 0 (no EFA) or more",
                          f"leave it unset for the types' {available}")
    if efa > available:
        fewest = min(rows, key=lambda r: r.efa_interfaces)
        raise ConfigError("multi_node.efa_interfaces", efa,
                          f"more EFA interfaces than {fewest.name} has ({fewest.efa_interfaces}), so its instances "
                          "would fail to launch", f"set multi_node.efa_interfaces to {available} or less, or leave "
                          "it unset")
    layouts = {r.name in ENA_ONLY_FIRST_CARD for r in rows}
    if efa and len(layouts) > 1:
        raise ConfigError("multi_node.instance_types", [r.name for r in rows],
                          f"types whose network card 0 is ENA only ({', '.join(sorted(ENA_ONLY_FIRST_CARD))}) "
                          "and types whose card 0 takes EFA need different launch templates",
                          "list types of one family")

    smallest = min(rows, key=lambda r: (r.vcpus, usable_memory_mib(r)))
    vcpus = smallest.vcpus if mn.vcpus is None else mn.vcpus
    memory = min(usable_memory_mib(r) for r in rows) if mn.memory_mib is None else mn.memory_mib
    needs = Needs(counts[0], vcpus, memory)
    too_small = [r for r in rows if r not in holding(needs, rows)]
    if vcpus < 1 or memory < 4 or too_small:
        field = "multi_node.vcpus" if vcpus < 1 or any(vcpus > r.vcpus for r in too_small) else "multi_node.memory_mib"
        raise ConfigError(field, vcpus if field.endswith("vcpus") else memory,
                          f"each node asks for {needs}, which {', '.join(offer(r) for r in too_small) or 'no type'} "
                          "cannot hold, so the job would sit in RUNNABLE forever",
                          "leave multi_node.vcpus and multi_node.memory_mib unset (all that fits the smallest type)")
    shm = memory // 4 if mn.shared_memory_mib is None else mn.shared_memory_mib
    if not isinstance(shm, int) or not facts.SHARED_MEMORY_MIN_MIB <= shm <= memory:
        raise ConfigError("multi_node.shared_memory_mib", shm,
                          f"must be between {facts.SHARED_MEMORY_MIN_MIB} MiB and the container's {memory} MiB",
                          "leave it unset for a quarter of the container's memory")
    largest = max(r.vcpus for r in rows)
    max_vcpus = mn.nodes * largest if mn.max_vcpus is None else mn.max_vcpus
    need = mn.nodes * smallest.vcpus
    if need > max_vcpus:
        raise ConfigError("multi_node.max_vcpus", max_vcpus,
                          f"{mn.nodes} nodes x {smallest.vcpus} vCPUs of {smallest.name} need {need} vCPUs, more than "
                          "the multi-node environment may run, so the job never starts",
                          f"raise multi_node.max_vcpus to at least {need}, or use fewer nodes")
    return MultiNodePlan(
        nodes=mn.nodes, instances=tuple(rows), max_vcpus=max_vcpus, gpus=counts[0], vcpus=vcpus, memory_mib=memory,
        shared_memory_mib=shm, efa_interfaces=efa,
        rdma=bool(efa) and all(r.name.split(".")[0] in facts.EFA_RDMA_FAMILIES for r in rows))
