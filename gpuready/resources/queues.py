"""The teams' job queues of a rendered stack and the GPU capacity behind each, read from its resources alone (so any
program is read, not only gpuready's stacks): Kueue ClusterQueues and the pools their flavors' node labels select, and
AWS Batch fair-share policies and the compute environments of the job queues that schedule by them.

Reads resources in the neutral shape of :class:`gpuready.resources.scaling.Item`, so that ``gpuready plan`` (a
rendering) and the policy pack (``PolicyResource``) share it. A value a preview does not know raises where it is read
(the policy engine's ``UnknownValueError``).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Optional, Sequence

from gpuready_components.k8s_gpu.facts import POOL_LABEL
from gpuready_components.k8s_gpu.scheduling import tolerates
from gpuready_components.queue_arithmetic import Admission, Capacity, Limits, Queue, admission
from gpuready_components.queue_facts import GPU_RESOURCE

from . import capacity_readers
from .aws import BatchJobQueue, BatchSchedulingPolicy
from .base import PoolCapacity
from .kubernetes import INSTANCE_TYPE_LABEL, ClusterQueue, Cohort, KarpenterNodePool, LocalQueue, ResourceFlavor
from .scaling import Item

KUEUE = "kueue"
BATCH = "batch"
PRICE_BASIS = "the mean $/GPU-hour of the pools each flavor selects (Batch: of the queues' compute environments), " \
              "weighted by their GPUs at full scale, on-demand list prices"
"""How a team's $/h at full use is priced, the same way for every team and platform."""


@dataclass(frozen=True)
class GpuPoolFacts:
    """A resource that launches GPU nodes, with the most it reaches at full scale."""

    item: Item
    capacity: PoolCapacity

    @property
    def name(self) -> str:
        return self.item.name

    @property
    def pool_name(self) -> str:
        """The pool's name as the stack's ``teams[].pools`` names it: the value of the label gpuready puts on its
        nodes for Kueue (``gpuready.io/gpu-pool``), else the resource's name."""
        return str(getattr(self.item.facts, "node_labels", {}).get(POOL_LABEL) or self.item.name)

    @property
    def usd_per_gpu_hour(self) -> float:
        return self.capacity.max_usd_per_hour / self.capacity.max_gpus if self.capacity.max_gpus else 0.0


@dataclass(frozen=True)
class Team:
    """One team's queue: a Kueue ClusterQueue, or a share of an AWS Batch fair-share policy."""

    name: str
    system: str
    """``kueue`` or ``batch``."""
    item: Item
    """The ClusterQueue, or the scheduling policy."""
    gpus: Decimal
    """Kueue: its nominal ``nvidia.com/gpu`` quota over its flavors. Batch: its fair share of the GPUs of the queues
    scheduling by the policy while every share is active."""
    borrow: Optional[Decimal]
    """Most GPUs it may borrow beyond ``gpus`` (``None``: no limit; Kueue outside a cohort: 0)."""
    lend: Optional[Decimal]
    """Most of its GPUs others may borrow (``None``: all)."""
    weight: Decimal
    """Kueue: its fair-sharing weight. Batch: the share's weight factor (lower is more)."""
    flavors: tuple[str, ...]
    """Kueue: the flavors that give it GPUs. Batch: none."""
    pools: tuple[GpuPoolFacts, ...]
    """The GPU pools it may use: those its GPU flavors select (Kueue), the queues' compute environments (Batch)."""
    queues: tuple[str, ...]
    """Where its jobs are submitted: ``namespace/localqueue`` (Kueue), the job queues (Batch)."""
    usd_per_hour: float
    """What its ``gpus`` cost at full use (:data:`PRICE_BASIS`: each flavor's quota at the mean rate of the pools
    that flavor selects)."""
    overcommit: bool = False
    """Kueue: the queue (or its cohort) carries the overcommit marker."""
    share: Optional[float] = None
    """Batch: the fraction of the queues' capacity it gets while every share is active."""
    most: Optional[Decimal] = None
    """Kueue: the most GPUs it holds at once while every other queue is idle (:func:`kueue_admission`). Batch: the
    GPUs of its queues (an idle share's GPUs go to the active ones)."""
    usd_per_hour_most: float = 0.0
    """What ``most`` costs at full use, priced as ``usd_per_hour``."""

    @property
    def usd_per_gpu_hour(self) -> float:
        """The rate its GPUs cost on average (0 without GPUs)."""
        return self.usd_per_hour / float(self.gpus) if self.gpus else 0.0


def rate(pools: Sequence[GpuPoolFacts]) -> float:
    """The mean $/GPU-hour of ``pools``, weighted by their GPUs at full scale (0 for none)."""
    gpus = sum(p.capacity.max_gpus for p in pools)
    return sum(p.capacity.max_usd_per_hour for p in pools) / gpus if gpus else 0.0


def gpu_pools(items: Sequence[Item]) -> list[GpuPoolFacts]:
    """Every resource with GPU capacity (node groups, node pools, Karpenter NodePools, compute environments)."""
    readers = capacity_readers()
    found = []
    for item in items:
        reader = item.facts
        capacity = reader.capacity() if isinstance(reader, readers) else None
        if capacity:
            found.append(GpuPoolFacts(item, capacity))
    return found


def kubernetes_gpu_pools(pools: Sequence[GpuPoolFacts]) -> list[GpuPoolFacts]:
    """The pools whose nodes join a Kubernetes cluster (what a ResourceFlavor can select)."""
    from . import kubernetes_pools

    readers = (*kubernetes_pools(), KarpenterNodePool)
    return [p for p in pools if isinstance(p.item.facts, readers)]


def selects(flavor: ResourceFlavor, pool: GpuPoolFacts) -> bool:
    """Whether Kueue's node selector for ``flavor`` (its ``nodeLabels``) matches the nodes of ``pool``: each label is
    one the pool sets, the platform's pool-name label with the pool's name, or the instance-type label with a type it
    launches. A flavor without labels selects every node."""
    reader = pool.item.facts
    labels = getattr(reader, "node_labels", {})
    return all(labels.get(key) == value or (key == INSTANCE_TYPE_LABEL and value in reader.instance_types)
               for key, value in flavor.node_labels.items())


def is_gpu_flavor(flavor: ResourceFlavor, pools: Sequence[GpuPoolFacts]) -> bool:
    """Whether ``flavor`` stands for GPU nodes: its labels select a GPU pool, or its tolerations tolerate a GPU pool's
    NoSchedule taint."""
    return any((flavor.node_labels and selects(flavor, p)) or
               any(t.effect == "NoSchedule" and tolerates(flavor.tolerations, t)
                   for t in getattr(p.item.facts, "taints", ())) for p in pools)


def _sum(values: Sequence[Optional[Decimal]]) -> Optional[Decimal]:
    """The sum, ``None`` when any is ``None`` (no limit)."""
    return None if any(v is None for v in values) else sum(values, Decimal(0))


def flavors(items: Sequence[Item]) -> dict[str, tuple[Item, ResourceFlavor]]:
    """ResourceFlavors by their Kubernetes name."""
    return {f.name: (i, f) for i in items if isinstance(f := i.facts, ResourceFlavor) and f.name}


@dataclass(frozen=True)
class FlavorFacts:
    """A GPU flavor some ClusterQueue gives quota on: the pools it selects and what the queues admit of them."""

    name: str
    pools: tuple[GpuPoolFacts, ...]
    gpus: int
    """What its pools reach at full scale."""
    guaranteed: Decimal
    """The queues' nominal quotas on it added up."""
    cohort: Decimal
    """The Cohorts' own quota on it."""
    admissible: Decimal
    """The most all queues hold of it at once."""
    unadmittable: Decimal
    """Its GPUs at full scale that no queue can admit."""
    listed: bool = True
    """A ClusterQueue or Cohort gives quota on it (0 or more)."""


def _limits(quotas: Sequence[Any]) -> dict[str, Limits]:
    return {q.flavor: Limits(q.nominal, q.borrowing, q.lending) for q in quotas if q.resource == GPU_RESOURCE}


def kueue_admission(items: Sequence[Item], pools: Optional[Sequence[GpuPoolFacts]] = None
                    ) -> tuple[Admission, list[FlavorFacts]]:
    """What the stack's ClusterQueues and Cohorts admit, by Kueue's arithmetic
    (:func:`gpuready_components.queue_arithmetic.admission`), built from the rendered objects alone, and each GPU
    flavor (named by a queue or Cohort, or not: then no queue admits its GPUs) with the pools it selects (a flavor
    selecting no GPU pool is left out). A queue with a role (the operators' queue) is left out: it guarantees
    nothing and borrows only what the teams leave idle, so a pool only it reaches is one no team can use."""
    pools = gpu_pools(items) if pools is None else pools
    by_name = flavors(items)
    queues = [Queue(q.name or i.name, q.cohort, _limits(q.quotas)) for i in items
              if isinstance(q := i.facts, ClusterQueue) and not q.role]  # the operators' queue: no team's GPUs
    cohorts = {c.name: _limits(c.quotas) for i in items if isinstance(c := i.facts, Cohort) and c.name}
    listed = dict.fromkeys([f for q in queues for f in q.quotas] + [f for c in cohorts.values() for f in c])
    named = dict.fromkeys([*by_name, *listed])  # the stack's order of its ResourceFlavors
    selected = {f: tuple(p for p in pools if f in by_name and selects(by_name[f][1], p)) for f in named}
    capacity = {f: Capacity(sum(p.capacity.max_gpus for p in found),
                            max((r.gpus for p in found for r in p.capacity.rows), default=0))
                for f, found in selected.items() if found}
    found = admission(queues, cohorts, capacity)
    facts = [FlavorFacts(f, selected[f], int(capacity[f].gpus),
                         sum((q.quotas[f].nominal for q in queues if f in q.quotas), Decimal(0)),
                         sum((c[f].nominal for c in cohorts.values() if f in c), Decimal(0)),
                         Decimal(found.admissible.get(f, 0)), Decimal(found.unadmittable.get(f, 0)), f in listed)
             for f in capacity]
    return found, facts


def kueue_teams(items: Sequence[Item], pools: Optional[Sequence[GpuPoolFacts]] = None) -> list[Team]:
    """One team per ClusterQueue, in the order the stack has them; a queue with a role (``gpuready.io/role``: the
    operators' queue, which guarantees nothing and borrows what the teams leave idle) is no team."""
    pools = gpu_pools(items) if pools is None else pools
    admitted, _ = kueue_admission(items, pools)
    by_name = flavors(items)
    cohorts = {c.name: c for i in items if isinstance(c := i.facts, Cohort) and c.name}
    local = [q for i in items if isinstance(q := i.facts, LocalQueue)]
    teams = []
    for item in items:
        queue = item.facts
        if not isinstance(queue, ClusterQueue) or queue.role:  # the operators' queue is no team's
            continue
        quotas = queue.gpu_quotas()
        selected = {q.flavor: [p for p in pools if q.flavor in by_name and selects(by_name[q.flavor][1], p)]
                    for q in quotas}
        reached = [p for found in selected.values() for p in found]
        cohort = cohorts.get(queue.cohort or "")
        name = queue.name or item.name
        teams.append(Team(
            name, KUEUE, item, sum((q.nominal for q in quotas), Decimal(0)),
            _sum([q.borrowing for q in quotas]) if queue.cohort else Decimal(0),
            _sum([q.lending for q in quotas]) if queue.cohort else Decimal(0),
            queue.fair_sharing_weight, tuple(dict.fromkeys(q.flavor for q in quotas)),
            tuple({p.item.urn: p for p in reached}.values()),
            tuple(f"{q.namespace}/{q.name}" for q in local if q.cluster_queue == name),
            sum(float(q.nominal) * rate(selected[q.flavor]) for q in quotas),
            queue.overcommit or bool(cohort and cohort.overcommit),
            most=Decimal(admitted.most(name)),
            usd_per_hour_most=sum(float(share.most) * rate(selected.get(f, ()))
                                  for f, share in admitted.shares.get(name, {}).items())))
    return teams


def batch_teams(items: Sequence[Item], pools: Optional[Sequence[GpuPoolFacts]] = None) -> list[Team]:
    """One team per share of each fair-share scheduling policy a job queue schedules by (a policy no queue uses
    gives no team: it schedules nothing)."""
    pools = gpu_pools(items) if pools is None else pools
    by_urn = {p.item.urn: p for p in pools}
    queues: dict[str, list[Item]] = {}
    for item in items:
        if isinstance(item.facts, BatchJobQueue):
            for urn in item.deps.get(BatchJobQueue.SCHEDULING_POLICY_INPUT) or ():
                queues.setdefault(urn, []).append(item)
    teams = []
    for item in items:
        policy = item.facts
        if not isinstance(policy, BatchSchedulingPolicy) or item.urn not in queues:
            continue
        members = [by_urn[u] for q in queues[item.urn] for u in q.deps.get(BatchJobQueue.ENVIRONMENTS_INPUT) or ()
                   if u in by_urn]
        reached = tuple({p.item.urn: p for p in members}.values())
        capacity = sum(p.capacity.max_gpus for p in reached)
        fractions = policy.fractions()
        for share in policy.shares:
            fraction = fractions.get(share.identifier, 0.0)
            gpus = Decimal(str(round(capacity * fraction, 2)))
            teams.append(Team(share.identifier, BATCH, item, gpus, None, None, Decimal(str(share.weight_factor)), (),
                              reached, tuple(q.name for q in queues[item.urn]), float(gpus) * rate(reached),
                              share=fraction, most=Decimal(capacity),
                              usd_per_hour_most=capacity * rate(reached)))
    return teams


def teams(items: Sequence[Item]) -> list[Team]:
    """Every team's queue of the stack: Kueue's, then Batch's."""
    pools = gpu_pools(items)
    return kueue_teams(items, pools) + batch_teams(items, pools)


__all__ = ["BATCH", "KUEUE", "PRICE_BASIS", "FlavorFacts", "GpuPoolFacts", "Team", "batch_teams", "flavors",
           "gpu_pools", "is_gpu_flavor", "kubernetes_gpu_pools", "kueue_admission", "kueue_teams", "rate", "selects",
           "teams"]
