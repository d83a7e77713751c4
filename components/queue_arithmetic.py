"""Kueue's quota arithmetic (v0.19.2, ``kueue.x-k8s.io/v1beta2``), one function for everyone who must tell what the
queues admit: the component's checks at preview, ``gpuready plan``'s Queues section, the policy pack and ``gpuready
smoke --team``'s refusal. Pure data: no Pulumi, no Kubernetes.

What Kueue documents ("Cluster Queue" and "Cohort" concept pages; ``pkg/cache`` ``resource_node.go``), per flavor
and resource:

- A ClusterQueue's ``nominalQuota`` is its own. With a ``lendingLimit`` L, ``nominalQuota - L`` of it is kept for
  the queue alone (Kueue's *guaranteed quota*); without one, all of it is lent to the cohort while idle.
- A Cohort's pool (its *subtree quota*) is its own ``resourceGroups`` quota plus what each member lends: every
  member may borrow from it while the others leave it idle.
- A member's usage may reach what it keeps plus the cohort's pool, and with a ``borrowingLimit`` B no more than
  ``nominalQuota + B``; ``borrowingLimit: 0`` means no borrowing at all. A queue outside any cohort: its
  ``nominalQuota``.
- Quota lent is reclaimed by preemption (``reclaimWithinCohort``): a queue always gets its ``nominalQuota`` back.

So, the others idle, a queue holds at most ``kept + min(pool, lendable + B)`` GPUs of a flavor (:attr:`Share.most`);
all queues together at most ``sum(kept) + min(pool, sum(lendable + B))``, and the GPUs of a flavor beyond that no
queue can admit (:attr:`Admission.unadmittable`). A Cohort with a parent is counted on its own (what a parent lends
it is not added): the numbers never promise more than Kueue gives.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Mapping, Optional, Sequence, Union

Number = Union[int, Decimal]


@dataclass(frozen=True)
class Limits:
    """A queue's (or a Cohort's) GPU quota in one flavor: ``nominalQuota``, ``borrowingLimit``, ``lendingLimit``
    (``None``: unset, no limit)."""

    nominal: Number
    borrowing: Optional[Number] = None
    lending: Optional[Number] = None

    @property
    def lendable(self) -> Number:
        """What it lends the cohort while idle: all its quota, or at most its ``lendingLimit``."""
        return self.nominal if self.lending is None else max(0, min(self.lending, self.nominal))

    @property
    def kept(self) -> Number:
        """What only it may use (Kueue's guaranteed quota): its quota beyond what it lends."""
        return self.nominal - self.lendable


@dataclass(frozen=True)
class Queue:
    """A ClusterQueue as the arithmetic sees it: its name, its cohort (``None``: none) and its GPU limits by
    flavor (the flavors its resource groups list)."""

    name: str
    cohort: Optional[str]
    quotas: Mapping[str, Limits]


@dataclass(frozen=True)
class Capacity:
    """A flavor's GPUs: what the pools it selects reach at full scale, and the GPUs of their largest node (what a
    job for one whole node asks; 0: not known)."""

    gpus: Number
    node_gpus: int = 0


@dataclass(frozen=True)
class Share:
    """What one queue gets of one flavor."""

    guaranteed: Number
    """Its ``nominalQuota``: admitted whenever it asks (lent quota comes back by preemption)."""
    most: Number
    """The most it can hold at once while every other queue is idle."""


@dataclass(frozen=True)
class Admission:
    """What Kueue admits on a stack: per queue and flavor (:class:`Share`), per cohort and flavor (its pool), per
    flavor the most all queues hold at once and the GPUs beyond it."""

    shares: Mapping[str, Mapping[str, Share]]
    """Queue name -> flavor -> its share (only the flavors it lists)."""
    pools: Mapping[str, Mapping[str, Number]]
    """Cohort -> flavor -> what its members may borrow: its own quota plus what they lend."""
    admissible: Mapping[str, Number]
    """Flavor -> the most GPUs all queues hold at once."""
    unadmittable: Mapping[str, Number] = field(default_factory=dict)
    """Flavor -> its GPUs at full scale that no queue can admit (0 when the queues admit them all)."""
    largest: Mapping[str, Number] = field(default_factory=dict)
    """Flavor -> the most one queue can hold of it (the largest job it can ever run there)."""

    def guaranteed(self, queue: str) -> Number:
        """The queue's GPUs over all its flavors."""
        return sum((s.guaranteed for s in self.shares.get(queue, {}).values()), 0)

    def most(self, queue: str) -> Number:
        """The most GPUs the queue holds at once over all its flavors, the others idle."""
        return sum((s.most for s in self.shares.get(queue, {}).values()), 0)

    def most_in_one(self, queue: str) -> Number:
        """The most GPUs one job of the queue can get: Kueue gives each pod set a single flavor, so the largest of
        its flavors."""
        return max((s.most for s in self.shares.get(queue, {}).values()), default=0)


def _unbounded_sum(values: Sequence[Optional[Number]]) -> Optional[Number]:
    return None if any(v is None for v in values) else sum(values, 0)


def admission(queues: Sequence[Queue], cohorts: Mapping[str, Mapping[str, Limits]],
              capacity: Mapping[str, Capacity]) -> Admission:
    """Apply Kueue's arithmetic to ``queues``, the Cohorts' own quotas (``cohorts``: name -> flavor -> limits; a
    cohort no queue names holds nothing anyone can borrow) and the flavors' ``capacity`` (flavors it does not name
    have none)."""
    pools: dict[str, dict[str, Number]] = {}
    for name in dict.fromkeys(q.cohort for q in queues if q.cohort):
        members = [q for q in queues if q.cohort == name]
        flavors = dict.fromkeys([*(f for q in members for f in q.quotas), *cohorts.get(name, {})])
        pools[name] = {f: cohorts.get(name, {}).get(f, Limits(0)).nominal +
                       sum((q.quotas[f].lendable for q in members if f in q.quotas), 0) for f in flavors}
    shares: dict[str, dict[str, Share]] = {}
    admissible: dict[str, Number] = {f: 0 for f in capacity}
    for q in queues:
        mine = shares.setdefault(q.name, {})
        for f, lim in q.quotas.items():
            if q.cohort is None:
                most = lim.nominal
            else:
                pool = pools[q.cohort][f]
                most = lim.kept + (pool if lim.borrowing is None else min(pool, lim.lendable + lim.borrowing))
            mine[f] = Share(lim.nominal, max(most, lim.nominal))
    for f in dict.fromkeys([*capacity, *(f for q in queues for f in q.quotas)]):
        alone = sum((q.quotas[f].nominal for q in queues if q.cohort is None and f in q.quotas), 0)
        together = alone
        for name, pool in pools.items():
            members = [q.quotas[f] for q in queues if q.cohort == name and f in q.quotas]
            if not members:
                continue
            reach = _unbounded_sum([m.lendable + m.borrowing if m.borrowing is not None else None for m in members])
            together += sum((m.kept for m in members), 0) + (pool[f] if reach is None else min(pool[f], reach))
        admissible[f] = together
    unadmittable = {f: max(0, c.gpus - admissible.get(f, 0)) for f, c in capacity.items()}
    largest = {f: max((s[f].most for s in shares.values() if f in s), default=0) for f in admissible}
    return Admission(shares, pools, admissible, unadmittable, largest)


__all__ = ["Admission", "Capacity", "Limits", "Queue", "Share", "admission"]
