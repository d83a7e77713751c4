"""Kueue v0.19.2's quota arithmetic and admission, as a pure simulator: the vendor's truth stand-in the tests check
gpuready's queues against. Written from Kueue's documentation and its cache (never from gpuready's own arithmetic):

- "Cluster Queue" concept page: a ClusterQueue admits a Workload within its ``nominalQuota`` plus what it borrows
  from its cohort; ``borrowingLimit`` caps what it may borrow (absent: everything the cohort has unused),
  ``lendingLimit`` caps how much of its unused nominal quota others may borrow (the rest stays guaranteed to it);
  flavors are tried in order (``flavorFungibility``: ``whenCanBorrow`` default ``MayStopSearch``, ``whenCanPreempt``
  default ``TryNextFlavor``, the v1beta2 CRD's defaults), preferring borrowing to preemption and preemption within
  the nominal quota to preemption while borrowing, skipping a flavor whose ``nodeLabels`` the pods' nodeSelector
  contradicts (on the label keys the group's flavors use; "Resource Flavor" page); its ``namespaceSelector`` (null:
  no namespace, ``{}``: every one) says whose workloads it takes.
- "Cohort" concept page: a v1beta2 Cohort's own ``resourceGroups`` quota is *additional* to its members', a shared
  pool they borrow from; a ClusterQueue borrows a flavor/resource only when it declares a ``nominalQuota`` for it
  (0 included); Cohorts nest (``spec.parentName``) with borrowing and lending limits of their own.
- The arithmetic itself as Kueue's cache computes it (``pkg/cache/resource_node.go``): a node's *subtree quota* is
  its own nominal quota plus, for a Cohort, each child's subtree quota less what the child keeps guaranteed
  (``subtree - lendingLimit``); a Cohort's usage is its children's usage beyond their guarantees; what a node may
  still take is its unused guarantee plus what its parent has left, capped by its ``borrowingLimit``.
- "Preemption" concept page: ``withinClusterQueue`` (``Never``, ``LowerPriority``, ``LowerOrNewerEqualPriority``),
  ``reclaimWithinCohort`` (``Never``, ``LowerPriority``, ``Any``: only when the preemptor fits within its nominal
  quota, only workloads of ClusterQueues that borrow), ``borrowWithinCohort``; as few victims as possible, preferring
  workloads of borrowing ClusterQueues, then the lowest priority, then the most recently admitted.
- DRA, the ResourceClaimTemplate path ("Set Up Dynamic Resource Allocation"; ``pkg/dra/claims.go``,
  tests/data/kueue-0.19.2-config): each ``ExactCount`` device request of a pod's claim is charged its ``count``
  units of the resource the Configuration's ``resources.deviceClassMappings`` maps its DeviceClass to, per pod like
  any request; a claim of a DeviceClass no mapping lists leaves the workload inadmissible (QuotaReserved False,
  reason ``Inadmissible`` while the ``UnadmittedWorkloadsObservability`` gate is off, as it is by default), never
  tried against a queue.
- "Fair Sharing" page: with the Configuration's ``fairSharing``, a ClusterQueue's share is the largest, over
  resources, of what it borrows per 1000 of what its cohort can lend, divided by its ``fairSharing.weight``; pending
  workloads of the lowest share go first; preemption across queues follows ``preemptionStrategies``
  (``LessThanOrEqualToFinalShare``, ``LessThanInitialShare``).

A preemption evicts its victims at once (their quota freed, as Kueue does once their pods are gone) and requeues
them; the preemptor is admitted in the same :meth:`Kueue.schedule`. Simplified, and said so: every pod set of a
workload gets the same flavors (one pod set is what the tests submit); fair sharing orders a preemptor's candidates
by their queues' shares once (Kueue picks the queue of the highest share again after each victim), and a preemptor
within its nominal quota reclaims with reason ``InCohortReclamation`` (the ``FairSharingPreemptWithinNominal``
behaviour); a workload's namespace is checked against ``namespaceSelector`` only when its Namespace is among the
objects; admission checks, topology, partial admission and waitForPodsReady are not modelled."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Iterable, Optional

API = "kueue.x-k8s.io/v1beta2"
EPOCH = datetime(2026, 11, 22, 10, 0, tzinfo=timezone.utc)
"""The simulator's clock starts here; each decision is a second later (deterministic timestamps)."""
GPU = "nvidia.com/gpu"
SUFFIXES = {"": 1, "m": Fraction(1, 1000), "k": 10 ** 3, "M": 10 ** 6, "G": 10 ** 9, "T": 10 ** 12, "P": 10 ** 15,
            "Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50}
STOP_SEARCH = ("MayStopSearch", "Borrow", "Preempt")
MODES = ("fit", "borrow", "reclaim", "preempt")
"""How a workload fits a flavor, best first: within its queue's nominal quota, by borrowing, by preempting while
staying within the nominal quota, by preempting and borrowing (Kueue's flavor assigner prefers them in this order)."""
PREEMPTING = ("reclaim", "preempt")
ROUNDS = 10_000
"""Scheduling attempts one :meth:`Kueue.schedule` makes before it calls the queues a preemption loop."""
"""``flavorFungibility`` values that stop the search at a flavor where the workload fits by borrowing or preempting
(``Borrow`` and ``Preempt``: the deprecated names)."""


def quantity(value: Any) -> Fraction:
    """A Kubernetes quantity (``2``, ``2.0``, ``"500m"``, ``"96Gi"``, ``"1e3"``) as an exact number."""
    if isinstance(value, (int, float)):
        return Fraction(value)
    match = re.fullmatch(r"([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)", str(value).strip())
    if not match or match.group(2) not in SUFFIXES:
        raise ValueError(f"not a quantity: {value!r}")
    return Fraction(match.group(1)) * SUFFIXES[match.group(2)]


@dataclass
class Quota:
    nominal: Fraction
    borrowing_limit: Optional[Fraction] = None
    lending_limit: Optional[Fraction] = None


@dataclass(eq=False)
class Node:
    """A ClusterQueue or a Cohort: its own quotas by (flavor, resource), its parent Cohort (None: a root)."""

    name: str
    kind: str
    spec: dict[str, Any]
    quotas: dict[tuple[str, str], Quota] = field(default_factory=dict)
    parent: Optional["Node"] = None
    children: list["Node"] = field(default_factory=list)

    @property
    def weight(self) -> Fraction:
        return quantity((self.spec.get("fairSharing") or {}).get("weight", 1))


@dataclass(eq=False)
class Workload:
    name: str
    namespace: str
    queue: str
    requests: dict[str, Fraction]
    """The whole workload's requests by resource (every pod set, every pod)."""
    priority: int
    created: int
    pod_sets: list[dict[str, Any]]
    node_selector: dict[str, str] = field(default_factory=dict)
    job_uid: str = "UNKNOWN"
    """The UID of the job that owns it (Kueue's ``kueue.x-k8s.io/job-uid`` label), quoted by a preemption."""
    cluster_queue: Optional[str] = None
    flavors: Optional[dict[str, str]] = None
    """Resource -> flavor while it holds quota (admitted); None while pending."""
    admitted_at: int = 0
    conditions: list[dict[str, Any]] = field(default_factory=list)
    evictions: int = 0
    message: str = ""
    refused: str = ""
    """Why Kueue refuses it before any queue sees it (a claim of an unmapped DeviceClass); empty: it does not."""

    @property
    def admitted(self) -> bool:
        return self.flavors is not None


def _quotas(spec: dict[str, Any]) -> dict[tuple[str, str], Quota]:
    found = {}
    for group in spec.get("resourceGroups") or ():
        for flavor in group["flavors"]:
            for resource in flavor["resources"]:
                limits = {k: quantity(resource[f]) for k, f in (("borrowing_limit", "borrowingLimit"),
                                                                ("lending_limit", "lendingLimit")) if f in resource}
                found[(flavor["name"], resource["name"])] = Quota(quantity(resource.get("nominalQuota", 0)), **limits)
    return found


class Kueue:
    """Kueue's admission over the given objects (ResourceFlavors, Cohorts, ClusterQueues, LocalQueues,
    WorkloadPriorityClasses, and the Namespaces whose labels ClusterQueues' ``namespaceSelector`` select, as the API
    server holds them; a workload's namespace not among them is not checked against the selector) with the controller's ``config`` (its Configuration;
    ``fairSharing`` present switches fair sharing on, as in v1beta2); ``now``: the time written on conditions
    (default: a second per decision from :data:`EPOCH`)."""

    def __init__(self, objects: Iterable[dict[str, Any]], config: Optional[dict[str, Any]] = None,
                 now: Optional[Callable[[], str]] = None):
        objects = list(objects)
        of = {kind: [o for o in objects if o["kind"] == kind] for kind in
              ("ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass", "Namespace")}
        self.namespaces = {o["metadata"]["name"]: dict(o["metadata"].get("labels") or {}) for o in of["Namespace"]}
        self.flavors = {o["metadata"]["name"]: o for o in of["ResourceFlavor"]}
        self.priorities = {o["metadata"]["name"]: int(o["value"]) for o in of["WorkloadPriorityClass"]}
        self.local_queues = {(o["metadata"]["namespace"], o["metadata"]["name"]): o["spec"]["clusterQueue"]
                             for o in of["LocalQueue"]}
        self.cohorts: dict[str, Node] = {}
        for o in of["Cohort"]:
            self.cohorts[o["metadata"]["name"]] = Node(o["metadata"]["name"], "Cohort", o.get("spec") or {},
                                                       _quotas(o.get("spec") or {}))
        for o in of["Cohort"]:
            parent = (o.get("spec") or {}).get("parentName")
            if parent:
                self._join(self.cohorts[o["metadata"]["name"]], parent)
        self.cluster_queues: dict[str, Node] = {}
        for o in of["ClusterQueue"]:
            node = Node(o["metadata"]["name"], "ClusterQueue", o["spec"], _quotas(o["spec"]))
            self.cluster_queues[node.name] = node
            if o["spec"].get("cohortName"):
                self._join(node, o["spec"]["cohortName"])
        self.device_classes = {c: m["name"] for m in ((config or {}).get("resources") or {}).get(
            "deviceClassMappings") or () for c in m["deviceClassNames"]}
        """DeviceClass -> the quota resource its claimed devices are charged to (``resources.deviceClassMappings``)."""
        fair = (config or {}).get("fairSharing")
        self.fair_sharing = fair is not None and fair.get("enable", True)
        self.strategies = list((fair or {}).get("preemptionStrategies") or
                               ["LessThanOrEqualToFinalShare", "LessThanInitialShare"])
        self.workloads: dict[tuple[str, str], Workload] = {}
        self.held: dict[tuple[str, str, str], Fraction] = {}
        """(ClusterQueue, flavor, resource) -> the requests of its workloads holding quota there."""
        self.clock = 0
        self.now = now or (lambda: (EPOCH + timedelta(seconds=self.clock)).strftime("%Y-%m-%dT%H:%M:%SZ"))
        self.seen: list[dict[str, Any]] = []
        """Every Workload as a watch sees it after each change Kueue writes (admitted, evicting, requeued)."""
        self.events: list[tuple[str, str, str]] = []
        """(what, workload, detail) in order: ``admitted``, ``preempted``, ``pending``."""

    def _join(self, node: Node, cohort: str) -> None:
        """A Cohort named but not created exists implicitly, with no quota of its own (Cohort concept page)."""
        parent = self.cohorts.setdefault(cohort, Node(cohort, "Cohort", {}))
        node.parent = parent
        parent.children.append(node)

    # The arithmetic (pkg/cache/resource_node.go).

    def subtree_quota(self, node: Node, fr: tuple[str, str]) -> Fraction:
        own = node.quotas[fr].nominal if fr in node.quotas else Fraction(0)
        if node.kind == "ClusterQueue":
            return own
        return own + sum((self.subtree_quota(c, fr) - self.guaranteed(c, fr) for c in node.children), Fraction(0))

    def guaranteed(self, node: Node, fr: tuple[str, str]) -> Fraction:
        """What ``node`` never lends its cohort: its subtree quota beyond its ``lendingLimit`` (none: nothing)."""
        limit = node.quotas[fr].lending_limit if fr in node.quotas else None
        return Fraction(0) if limit is None else max(Fraction(0), self.subtree_quota(node, fr) - limit)

    def usage(self, node: Node, fr: tuple[str, str]) -> Fraction:
        """A ClusterQueue's admitted requests in ``fr``; a Cohort's: its children's usage beyond their guarantees."""
        if node.kind == "ClusterQueue":
            return self.held.get((node.name, *fr), Fraction(0))
        return sum((max(Fraction(0), self.usage(c, fr) - self.guaranteed(c, fr)) for c in node.children), Fraction(0))

    def available(self, node: Node, fr: tuple[str, str]) -> Fraction:
        """What ``node`` may still take in ``fr`` now: its unused guarantee plus what its parent has left, the
        latter capped by its ``borrowingLimit``."""
        if node.parent is None:
            return self.subtree_quota(node, fr) - self.usage(node, fr)
        local = max(Fraction(0), self.guaranteed(node, fr) - self.usage(node, fr))
        parent = self.available(node.parent, fr)
        limit = node.quotas[fr].borrowing_limit if fr in node.quotas else None
        if limit is not None:
            stored = self.subtree_quota(node, fr) - self.guaranteed(node, fr)
            used = max(Fraction(0), self.usage(node, fr) - self.guaranteed(node, fr))
            parent = min(stored - used + limit, parent)
        return local + parent

    def potential(self, node: Node, fr: tuple[str, str]) -> Fraction:
        """The most ``node`` could ever hold in ``fr``, every other queue idle."""
        if node.parent is None:
            return self.subtree_quota(node, fr)
        found = self.guaranteed(node, fr) + self.potential(node.parent, fr)
        limit = node.quotas[fr].borrowing_limit if fr in node.quotas else None
        if limit is not None:
            found = min(self.subtree_quota(node, fr) + limit, found)
        return found

    def borrowing(self, cq: Node, fr: tuple[str, str], more: Fraction = Fraction(0)) -> bool:
        return self.usage(cq, fr) + more > self.subtree_quota(cq, fr)

    def max_holdable(self, cq_name: str, flavor: str, resource: str = GPU) -> Fraction:
        """What ClusterQueue ``cq_name`` can hold in ``flavor`` when every other queue is idle (0: no quota there)."""
        cq = self.cluster_queues[cq_name]
        return self.potential(cq, (flavor, resource)) if (flavor, resource) in cq.quotas else Fraction(0)

    def share(self, cq: Node, extra: Optional[tuple[Workload, dict[str, str]]] = None,
              without: Iterable[Workload] = ()) -> Fraction:
        """Fair sharing's dominant resource share: per resource, what ``cq`` borrows (summed over flavors) per 1000
        of what its cohort can lend, the largest, over its weight (weight 0: infinite); with ``extra`` (a workload
        and its flavors) admitted to it, ``without`` its workloads gone."""
        if cq.parent is None:
            return Fraction(0)
        borrowed: dict[str, Fraction] = {}
        lendable: dict[str, Fraction] = {}
        for fr in cq.quotas:
            used = self.usage(cq, fr) - sum((w.requests[fr[1]] for w in without if w.flavors.get(fr[1]) == fr[0]),
                                            Fraction(0))
            if extra is not None and extra[1].get(fr[1]) == fr[0]:
                used += extra[0].requests[fr[1]]
            borrowed[fr[1]] = borrowed.get(fr[1], Fraction(0)) + max(Fraction(0), used - self.subtree_quota(cq, fr))
            lendable[fr[1]] = lendable.get(fr[1], Fraction(0)) + self.subtree_quota(cq.parent, fr)
        ratio = max([b * 1000 / lendable[r] for r, b in borrowed.items() if b and lendable[r]] or [Fraction(0)])
        if not ratio:
            return Fraction(0)
        return Fraction(10 ** 18) if cq.weight == 0 else ratio / cq.weight

    # Admission.

    def submit(self, name: str, namespace: str, queue: str, requests: dict[str, Any], count: int = 1,
               priority_class: Optional[str] = None, priority: Optional[int] = None,
               node_selector: Optional[dict[str, str]] = None,
               claims: Optional[dict[str, dict[str, int]]] = None) -> Workload:
        """A Workload of ``count`` pods each requesting ``requests`` (and with ``node_selector``), through
        LocalQueue ``namespace/queue``, with ``priority`` or its WorkloadPriorityClass's; then a scheduling round.
        ``claims``: the ResourceClaimTemplates each pod claims, by name -> their ``ExactCount`` device requests
        (DeviceClass -> ``count``), charged as the module's docstring says."""
        if priority is None:
            priority = self.priorities[priority_class] if priority_class else 0
        pod_sets = [{"name": "main", "count": count, "template": {"spec": {**(
            {"nodeSelector": dict(node_selector)} if node_selector else {}), "containers": [
            {"name": "main", "image": "job",
             "resources": {"requests": {r: str(v) for r, v in requests.items()}}}], **(
            {"resourceClaims": [{"name": t, "resourceClaimTemplateName": t} for t in claims]} if claims else {})}}}]
        per_pod = {r: quantity(v) for r, v in requests.items()}
        refused = ""
        for j, devices in enumerate((claims or {}).values()):
            for device_class, n in devices.items():
                if device_class not in self.device_classes:
                    refused = refused or (
                        f"spec.podSets[0].template.spec.resourceClaims[{j}].resourceClaimTemplateName: Not found: "
                        f"\"DeviceClass {device_class} is not mapped in DRA configuration for podset main\"")
                    continue
                resource = self.device_classes[device_class]
                per_pod[resource] = per_pod.get(resource, Fraction(0)) + n
        workload = self.add(name, namespace, queue, {r: v * count for r, v in per_pod.items()},
                            priority, pod_sets, node_selector)
        workload.refused = refused
        self.schedule()
        return workload

    def add(self, name: str, namespace: str, queue: str, requests: dict[str, Fraction], priority: int,
            pod_sets: list[dict[str, Any]], node_selector: Optional[dict[str, str]] = None, job_uid: str = "UNKNOWN"
            ) -> Workload:
        """A Workload queued (the whole workload's ``requests``), not yet scheduled."""
        self.clock += 1
        workload = Workload(name, namespace, queue, dict(requests), priority, self.clock, pod_sets,
                            dict(node_selector or {}), job_uid=job_uid)
        self.workloads[(namespace, name)] = workload
        return workload

    def remove(self, workload: Workload) -> None:
        """A workload deleted: its quota freed (no scheduling round)."""
        self._hold(workload, None)
        self.workloads.pop((workload.namespace, workload.name), None)

    def finish(self, workload: Workload) -> None:
        """A workload done (or deleted): its quota freed, then a scheduling round."""
        self.remove(workload)
        self.schedule()

    def admitted_in(self, cq_name: str, flavor: str, resource: str = GPU) -> Fraction:
        return self.usage(self.cluster_queues[cq_name], (flavor, resource))

    def _queue(self, workload: Workload) -> tuple[Optional[Node], str]:
        target = self.local_queues.get((workload.namespace, workload.queue))
        if target is None:
            return None, f"LocalQueue {workload.queue} doesn't exist"
        cq = self.cluster_queues.get(target)
        if cq is None:
            return None, f"ClusterQueue {target} doesn't exist"
        if cq.spec.get("stopPolicy", "None") != "None":
            return None, f"ClusterQueue {target} is inactive"
        labels = {**self.namespaces.get(workload.namespace, {}), "kubernetes.io/metadata.name": workload.namespace}
        if workload.namespace in self.namespaces and not _selects(cq.spec.get("namespaceSelector"), labels):
            return None, "Workload namespace doesn't match ClusterQueue selector"
        return cq, ""

    def _order(self, pending: list[Workload]) -> list[Workload]:
        """Heads first: fair sharing by the share each queue would have with it; else those that need no borrowing,
        then by priority, then oldest (BestEffortFIFO)."""
        def key(w: Workload):
            cq, _ = self._queue(w)
            if cq is None or w.refused:
                return (2, 0, 0, w.created)
            assignment = self.assign(w, cq)
            if self.fair_sharing and assignment and cq.parent is not None:
                return (0, self.share(cq, extra=(w, assignment[0])), -w.priority, w.created)
            borrows = bool(assignment) and assignment[1] == "borrow"
            return (int(borrows), 0, -w.priority, w.created)
        return sorted(pending, key=key)

    def schedule(self) -> None:
        """Admit what fits, preempting where the policies allow, until nothing more changes."""
        for _ in range(ROUNDS):
            pending = [w for w in self.workloads.values() if not w.admitted]
            for workload in self._order(pending):
                if self._attempt(workload):
                    break
            else:
                return
        raise AssertionError(f"Kueue simulator: workloads preempt each other for ever: {self.events[-6:]}")

    def _attempt(self, workload: Workload) -> bool:
        if workload.refused:
            self._pending(workload, "Inadmissible", workload.refused)
            return False
        cq, blocked = self._queue(workload)
        if cq is None:
            self._pending(workload, "Inadmissible", blocked)
            return False
        assignment = self.assign(workload, cq)
        if assignment is None:
            self._pending(workload, "Pending", self._insufficient(workload, cq))
            return False
        flavors, mode = assignment
        if mode in PREEMPTING:
            targets = self.targets(workload, cq, flavors)
            if not targets:
                self._pending(workload, "Pending", self._insufficient(workload, cq))
                return False
            borrows = any(self.borrowing(cq, fr, workload.requests[fr[1]]) for fr in self._frs(workload, flavors))
            for victim in targets:
                self._evict(victim, workload, cq, borrows)
        self._admit(workload, cq, flavors)
        return True

    @staticmethod
    def _frs(workload: Workload, flavors: dict[str, str]) -> list[tuple[str, str]]:
        return [(flavor, r) for r, flavor in flavors.items() if r in workload.requests]

    def assign(self, workload: Workload, cq: Node) -> Optional[tuple[dict[str, str], str]]:
        """(resource -> flavor, the worst of its :data:`MODES`), the flavors tried in order as ``flavorFungibility``
        says, the best mode found kept; None: no flavor can take it."""
        fungibility = cq.spec.get("flavorFungibility") or {}
        when_borrow = fungibility.get("whenCanBorrow", "MayStopSearch")
        when_preempt = fungibility.get("whenCanPreempt", "TryNextFlavor")
        chosen: dict[str, str] = {}
        worst = "fit"
        for group in cq.spec.get("resourceGroups") or ():
            wanted = [r for r in group["coveredResources"] if r in workload.requests]
            if not wanted:
                continue
            best = None
            keys = {k for f in group["flavors"] for k in self._labels(f["name"])}
            for flavor in group["flavors"]:
                labels = self._labels(flavor["name"])
                if any(labels.get(k) != v for k, v in workload.node_selector.items() if k in keys):
                    continue  # the pods' nodeSelector rules this flavor's nodes out
                mode = self._mode(workload, cq, flavor["name"], wanted)
                if mode is None:
                    continue
                if mode == "fit" or (mode == "borrow" and when_borrow in STOP_SEARCH) or \
                        (mode in PREEMPTING and when_preempt in STOP_SEARCH):
                    best = (flavor["name"], mode)
                    break
                if best is None or MODES.index(mode) < MODES.index(best[1]):
                    best = (flavor["name"], mode)
            if best is None:
                return None
            chosen.update({r: best[0] for r in wanted})
            worst = max(worst, best[1], key=MODES.index)
        if set(chosen) != set(workload.requests):
            return None  # a resource no resource group of the queue covers
        return chosen, worst

    def _labels(self, flavor: str) -> dict[str, str]:
        return ((self.flavors.get(flavor) or {}).get("spec") or {}).get("nodeLabels") or {}

    def _mode(self, workload: Workload, cq: Node, flavor: str, resources: list[str]) -> Optional[str]:
        modes = []
        for r in resources:
            fr, value = (flavor, r), workload.requests[r]
            if fr not in cq.quotas:
                return None
            if value <= self.available(cq, fr):
                modes.append("borrow" if self.borrowing(cq, fr, value) else "fit")
            elif value <= self.potential(cq, fr):
                modes.append("preempt" if self.borrowing(cq, fr, value) else "reclaim")
            else:
                return None
        mode = max(modes, key=MODES.index)
        if mode in PREEMPTING:
            if not self.targets(workload, cq, {r: flavor for r in resources}):
                return None
        return mode

    def _fits(self, workload: Workload, cq: Node, flavors: dict[str, str], allow_borrowing: bool) -> bool:
        for fr in self._frs(workload, flavors):
            value = workload.requests[fr[1]]
            if value > self.available(cq, fr) or (not allow_borrowing and self.borrowing(cq, fr, value)):
                return False
        return True

    # Preemption (Preemption and Fair Sharing concept pages; pkg/scheduler/preemption).

    def _candidates(self, workload: Workload, cq: Node, frs: list[tuple[str, str]]) -> list[Workload]:
        preemption = cq.spec.get("preemption") or {}
        within = preemption.get("withinClusterQueue", "Never")
        reclaim = preemption.get("reclaimWithinCohort", "Never")
        borrow = preemption.get("borrowWithinCohort") or {}
        root = cq
        while root.parent is not None:
            root = root.parent
        found = []
        for other in self.workloads.values():
            if not other.admitted or other is workload or not any(other.flavors.get(r) == f for f, r in frs):
                continue
            if other.cluster_queue == cq.name:
                if within == "LowerPriority" and other.priority < workload.priority or \
                        within == "LowerOrNewerEqualPriority" and (other.priority < workload.priority or (
                            other.priority == workload.priority and other.created > workload.created)):
                    found.append(other)
                continue
            theirs = self.cluster_queues[other.cluster_queue]
            mine = theirs
            while mine.parent is not None:
                mine = mine.parent
            if mine is not root or cq.parent is None:
                continue
            if reclaim == "Any" or reclaim == "LowerPriority" and other.priority < workload.priority or \
                    borrow.get("policy", "Never") == "LowerPriority" and other.priority < workload.priority:
                found.append(other)

        def order(w: Workload):
            theirs = self.cluster_queues[w.cluster_queue]
            borrowing = w.cluster_queue != cq.name and any(self.borrowing(theirs, fr) for fr in frs)
            first = -self.share(theirs) if self.fair_sharing else 0
            return (first, not borrowing, w.priority, -w.admitted_at)
        return sorted(found, key=order)

    def targets(self, workload: Workload, cq: Node, flavors: dict[str, str]) -> list[Workload]:
        """The workloads to evict so that ``workload`` fits in ``flavors`` (none: it cannot)."""
        frs = [fr for fr in self._frs(workload, flavors) if workload.requests[fr[1]] > self.available(cq, fr)] or \
            self._frs(workload, flavors)
        candidates = self._candidates(workload, cq, frs)
        if not candidates:
            return []
        if self.fair_sharing and cq.parent is not None:
            return self._fair(workload, cq, flavors, candidates, frs)
        same = [c for c in candidates if c.cluster_queue == cq.name]
        if len(same) == len(candidates):
            return self._minimal(workload, cq, flavors, candidates, frs, True, None)
        borrow = (cq.spec.get("preemption") or {}).get("borrowWithinCohort") or {}
        if borrow.get("policy", "Never") != "Never":
            found = self._minimal(workload, cq, flavors, candidates, frs, True, borrow.get("maxPriorityThreshold"))
            if found:
                return found
        if not any(self.borrowing(cq, fr, workload.requests[fr[1]]) for fr in frs):
            reclaim = [c for c in candidates if c.cluster_queue == cq.name or self._reclaimable(c, workload, cq)]
            found = self._minimal(workload, cq, flavors, reclaim, frs, False, None)
            if found:
                return found
        return self._minimal(workload, cq, flavors, same, frs, True, None)

    def _reclaimable(self, other: Workload, workload: Workload, cq: Node) -> bool:
        reclaim = (cq.spec.get("preemption") or {}).get("reclaimWithinCohort", "Never")
        return reclaim == "Any" or reclaim == "LowerPriority" and other.priority < workload.priority

    def _minimal(self, workload, cq, flavors, candidates, frs, allow_borrowing, threshold) -> list[Workload]:
        """Classic preemption: candidates in order (another queue's only while it still borrows, and under
        ``borrowWithinCohort``'s threshold when borrowing)."""
        def allowed(candidate: Workload) -> bool:
            return threshold is None or not allow_borrowing or candidate.priority <= threshold
        return self._remove_until_fits(workload, cq, flavors, frs, candidates, allowed, allow_borrowing)

    def _fair(self, workload, cq, flavors, candidates, frs) -> list[Workload]:
        """Fair sharing: another queue's workload is preempted only as the strategies allow, comparing the
        preemptor queue's share with the workload admitted to the victim queue's (after or before)."""
        for strategy in self.strategies:
            def allowed(candidate: Workload) -> bool:
                theirs = self.cluster_queues[candidate.cluster_queue]
                mine = self.share(cq, extra=(workload, flavors))
                if strategy == "LessThanOrEqualToFinalShare":
                    return mine <= self.share(theirs, without=[candidate])
                return mine < self.share(theirs)
            found = self._remove_until_fits(workload, cq, flavors, frs, candidates, allowed, True)
            if found:
                return found
        return []

    def _remove_until_fits(self, workload, cq, flavors, frs, candidates, allowed, allow_borrowing) -> list[Workload]:
        """Remove candidates in order (of another queue: only while that queue still borrows in ``frs`` and as
        ``allowed`` says) until ``workload`` fits; then put back those not needed, last removed first. Nothing
        changes: the victims are returned (none: it does not fit)."""
        removed: list[tuple[Workload, dict[str, str]]] = []
        fits = False
        for candidate in candidates:
            if candidate.cluster_queue != cq.name and not (
                    any(self.borrowing(self.cluster_queues[candidate.cluster_queue], fr) for fr in frs)
                    and allowed(candidate)):
                continue
            removed.append((candidate, candidate.flavors))
            self._hold(candidate, None)
            if self._fits(workload, cq, flavors, allow_borrowing):
                fits = True
                break
        targets = []
        if fits:
            for candidate, held in reversed(removed[:-1]):
                self._hold(candidate, held)
                if not self._fits(workload, cq, flavors, allow_borrowing):
                    self._hold(candidate, None)
                    targets.append(candidate)
            targets.append(removed[-1][0])
        for candidate, held in removed:
            if not candidate.admitted:
                self._hold(candidate, held)
        return targets

    def _hold(self, workload: Workload, flavors: Optional[dict[str, str]]) -> None:
        """``workload`` holds quota in ``flavors`` (None: none), its queue's usage with it."""
        for held, sign in ((workload.flavors, -1), (flavors, 1)):
            for r, f in (held or {}).items():
                key = (workload.cluster_queue, f, r)
                self.held[key] = self.held.get(key, Fraction(0)) + sign * workload.requests[r]
        workload.flavors = flavors

    # Status, as Kueue writes it on the Workload.

    def _condition(self, workload: Workload, kind: str, status: str, reason: str, message: str) -> None:
        workload.conditions[:] = [c for c in workload.conditions if c["type"] != kind]
        workload.conditions.append({"type": kind, "status": status, "reason": reason, "message": message,
                                    "lastTransitionTime": self.now(),
                                    "observedGeneration": 1})

    def _pending(self, workload: Workload, reason: str, message: str) -> None:
        if workload.message != message:
            self.events.append(("pending", workload.name, message))
        workload.message = message
        self._condition(workload, "QuotaReserved", "False", reason, message)

    def _insufficient(self, workload: Workload, cq: Node) -> str:
        """Kueue's reason a pending workload got no flavors: each flavor tried, in order, and why it did not do."""
        reasons = []
        for group in cq.spec.get("resourceGroups") or ():
            wanted = [r for r in group["coveredResources"] if r in workload.requests]
            keys = {k for f in group["flavors"] for k in self._labels(f["name"])}
            for flavor in (f["name"] for f in group["flavors"]) if wanted else ():
                labels = self._labels(flavor)
                if any(labels.get(k) != v for k, v in workload.node_selector.items() if k in keys):
                    reasons.append(f"flavor {flavor} doesn't match node affinity")
                    continue
                for r in wanted:
                    more = workload.requests[r] - self.available(cq, (flavor, r))
                    if more > 0:
                        reasons.append(f"insufficient unused quota for {r} in flavor {flavor}, {_text(more)} more "
                                       "needed")
        missing = sorted(set(workload.requests) - {r for g in cq.spec.get("resourceGroups") or ()
                                                   for r in g["coveredResources"]})
        reasons += [f"resource {r} unavailable in ClusterQueue" for r in missing]
        return f"couldn't assign flavors to pod set main: {', '.join(reasons) or 'no flavor fits'}"

    def _admit(self, workload: Workload, cq: Node, flavors: dict[str, str]) -> None:
        self.clock += 1
        workload.cluster_queue, workload.admitted_at = cq.name, self.clock
        self._hold(workload, dict(flavors))
        workload.message = ""
        self.events.append(("admitted", workload.name, cq.name))
        message = f"Quota reserved in ClusterQueue {cq.name}"
        self._condition(workload, "QuotaReserved", "True", "QuotaReserved", message)
        self._condition(workload, "Admitted", "True", "Admitted", "The workload is admitted")
        for kind, reason in (("Evicted", "NoEviction"), ("Preempted", "NoPreemption")):
            if any(c["type"] == kind for c in workload.conditions):
                self._condition(workload, kind, "False", reason, "")
        self.seen.append(self.object(workload))

    def _evict(self, victim: Workload, preemptor: Workload, cq: Node, borrows: bool) -> None:
        """``victim`` preempted for ``preemptor`` (which ``borrows`` once admitted: fair sharing's reason)."""
        self.clock += 1
        theirs = self.cluster_queues[victim.cluster_queue]
        path = [cq.name]
        node = cq.parent
        while node is not None:
            path.insert(0, node.name)
            node = node.parent
        their_path = [theirs.name]
        node = theirs.parent
        while node is not None:
            their_path.insert(0, node.name)
            node = node.parent
        reclaim = victim.cluster_queue != cq.name
        reason = "InCohortReclamation" if reclaim else "InClusterQueue"
        why = "reclamation within the cohort" if reclaim else "prioritization in the ClusterQueue"
        if reclaim and self.fair_sharing and borrows:
            reason, why = "InCohortFairSharing", "Fair Sharing within the cohort"
        message = (f"Preempted to accommodate a workload (UID: uid-{preemptor.name}, JobUID: {preemptor.job_uid}) "
                   f"due to {why}; preemptor path: /{'/'.join(path)}; preemptee path: /{'/'.join(their_path)}")
        self._condition(victim, "Evicted", "True", "Preempted", message)
        self._condition(victim, "Preempted", "True", reason, message)
        self.seen.append(self.object(victim))  # evicted, still admitted until its pods are gone
        self._hold(victim, None)
        victim.evictions += 1
        self.events.append(("preempted", victim.name, preemptor.name))
        self._condition(victim, "Admitted", "False", "NoReservation", "The workload has no reservation")
        self._condition(victim, "QuotaReserved", "False", "Pending", "Preempted")
        victim.message = "Preempted"
        self.seen.append(self.object(victim))

    def object(self, workload: Workload) -> dict[str, Any]:
        """The Workload as the API server serves it (``kueue.x-k8s.io/v1beta2``)."""
        status: dict[str, Any] = {"conditions": [dict(c) for c in workload.conditions]}
        if workload.admitted:
            status["admission"] = {"clusterQueue": workload.cluster_queue, "podSetAssignments": [
                {"name": p["name"], "count": p["count"], "flavors": dict(workload.flavors),
                 "resourceUsage": {r: _text(v) for r, v in workload.requests.items()}} for p in workload.pod_sets]}
        if workload.evictions:
            status["requeueState"] = {"count": workload.evictions}
        return {"apiVersion": API, "kind": "Workload",
                "metadata": {"name": workload.name, "namespace": workload.namespace, "uid": f"uid-{workload.name}"},
                "spec": {"queueName": workload.queue, "priority": workload.priority, "active": True,
                         "podSets": [dict(p) for p in workload.pod_sets]},
                "status": status}


def _selects(selector: Optional[dict[str, Any]], labels: dict[str, str]) -> bool:
    """A metav1.LabelSelector against ``labels`` (``{}`` selects everything; a missing one, as Kueue reads a
    ClusterQueue's, nothing)."""
    if selector is None:
        return False
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for e in selector.get("matchExpressions") or ():
        has, value = e["key"] in labels, labels.get(e["key"])
        if not {"In": has and value in e.get("values", ()), "NotIn": not has or value not in e.get("values", ()),
                "Exists": has, "DoesNotExist": not has}[e["operator"]]:
            return False
    return True


def _text(value: Fraction) -> str:
    """A quantity as Kubernetes writes a whole or milli value."""
    if value.denominator == 1:
        return str(value.numerator)
    return f"{int(value * 1000)}m"
