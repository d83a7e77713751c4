"""Kueue for the teams that share a Kubernetes stack's GPUs: pure data, no Pulumi.

From the teams (:mod:`~gpuready_components.teams`) and the stack's GPU pools (:class:`Flavor`, built by each platform
component from the labels and taints it gives the pool), :func:`objects` makes every Kueue object (a ResourceFlavor
per pool, the Cohort, a ClusterQueue per team, the WorkloadPriorityClasses) and the teams' namespaces and
LocalQueues, and the operators' queue for the platform's own checks (:func:`operators_queue`); :func:`chart_values`
the values of Kueue's chart. Tests check each object against Kueue's CRDs and the
values against the chart.

How the quotas add up (:func:`quotas`, docs/queues/kubernetes.md), every number exact (largest remainder, so the
per-pool numbers add up to the team's):

- a team's ``gpus`` (its guarantee) spread over its pools in proportion to the GPUs each has left after the
  guarantees of the teams held to fewer pools (those first, then in the stack's order): on pools of one size that is
  in proportion to their size (:func:`split`); where the guarantees add up to more than the pools reach
  (``overcommitQuotas``), in proportion to their size;
- its ``lend`` spread over its pools in proportion to its quota there, so it never exceeds the quota of a pool;
- what the teams' quotas leave of each pool belongs to the Cohort (its own ``resourceGroups``): any team may borrow
  it, so the queues together admit every GPU the pools reach;
- its ``borrow`` spread over its pools in proportion to what it can borrow there (the Cohort's quota and what the
  other teams lend), so that all of it can be borrowed: a ``borrow`` beyond that is refused (:func:`check`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping, Optional, Sequence

import yaml

from .. import catalog, metaflow
from ..errors import ConfigError
from ..queue_arithmetic import Admission, Capacity, Limits, Queue, admission
from ..teams import Pool, TeamArgs, reachable
from . import facts, topology as tas
from .install import gpu_toleration


@dataclass(frozen=True)
class Provisioning:
    """Kueue's ProvisioningRequest admission check on a pool, as its platform gives it: Kueue admits a workload on the
    pool's flavor only once the cluster autoscaler has provisioned the nodes a ProvisioningRequest of
    ``provisioning_class`` asked for (GKE: ``queued-provisioning.gke.io``, served by the Dynamic Workload Scheduler)."""

    provisioning_class: str
    """The ProvisioningRequest class (``provisioningClassName``)."""
    parameters: Mapping[str, str] = field(default_factory=dict)
    """Parameters of the class every ProvisioningRequest carries (GKE: ``maxRunDurationSeconds``)."""
    managed_resources: tuple[str, ...] = (facts.GPU_RESOURCE,)
    """Only the pod sets asking for these are provisioned this way (the others need no such nodes)."""


@dataclass(frozen=True)
class Flavor:
    """One GPU pool of the stack, as Kueue sees it: a ResourceFlavor."""

    pool: str
    """The pool's name as the stack names it (``teams[].pools`` names it)."""
    gpus: int
    """GPUs the pool reaches at full scale."""
    node_labels: Mapping[str, str]
    """Labels every node of the pool carries from boot, as the component sets them on the pool."""
    taints: tuple[facts.Taint, ...]
    """Taints every ready node of the pool carries (not startup taints, which pods never tolerate)."""
    vcpus_per_gpu: int
    """Most vCPUs per GPU among the pool's types (rounded up)."""
    memory_gib_per_gpu: int
    """Most memory (GiB) per GPU among the pool's types (rounded up)."""
    provisioning: Optional[Provisioning] = None
    """Kueue's ProvisioningRequest admission check on the pool, when its nodes come only for a ProvisioningRequest."""
    node_gpus: int = 0
    """GPUs of the pool's largest node (what a job for one whole node asks); 0: not known."""
    topology: Optional[tas.Placement] = None
    """How its cloud labels its nodes' place in the network, for a multi-node pool whose gangs Kueue places by it
    (:mod:`.topology`); ``None``: no Topology."""

    @property
    def name(self) -> str:
        """The ResourceFlavor's name: the pool's."""
        return self.pool

    @property
    def check(self) -> str:
        """The name of its AdmissionCheck and ProvisioningRequestConfig (with :attr:`provisioning`)."""
        return f"{self.name}-provisioning"

    @property
    def as_pool(self) -> Pool:
        return Pool(self.pool, self.gpus)


def flavor(pool: str, gpus: int, node_labels: Mapping[str, str], taints: Sequence[facts.Taint],
           types: Sequence[catalog.GpuInstanceType], provisioning: Optional[Provisioning] = None,
           topology: Optional[tas.Placement] = None) -> Flavor:
    """The Flavor of a pool of ``types`` (its catalog rows): cpu and memory per GPU from the most generous type, so
    that a team's cpu and memory quotas never bind before its GPU quota; ``provisioning``: the platform's admission
    check on the pool, if any; ``topology``: how its gangs are placed, if they are (:mod:`.topology`)."""
    return Flavor(pool, gpus, MappingProxyType(dict(node_labels)), tuple(taints),
                  max(math.ceil(t.vcpus / t.gpus) for t in types),
                  max(math.ceil(t.memory_gib / t.gpus) for t in types), provisioning, max(t.gpus for t in types),
                  topology)


def apportion(total: Optional[int], weights: Sequence[int]) -> list[Optional[int]]:
    """``total`` spread over ``weights`` in proportion (largest remainder; ties to the first): whole numbers that add
    up to ``total``, none above its exact share rounded up, so none above its weight while ``total`` is at most their
    sum; ``None`` (no limit) stays ``None`` on each; nothing to spread over (weights all 0): zeros."""
    if total is None:
        return [None] * len(weights)
    whole = sum(weights)
    if not whole:
        return [0] * len(weights)
    shares = [total * w // whole for w in weights]
    order = sorted(range(len(weights)), key=lambda i: (-(total * weights[i] % whole), i))
    for i in order[:total - sum(shares)]:
        shares[i] += 1
    return shares


def split(total: Optional[int], flavors: Sequence[Flavor]) -> list[Optional[int]]:
    """``total`` GPUs spread over ``flavors`` in proportion to their GPUs at full scale (:func:`apportion`)."""
    return apportion(total, [f.gpus for f in flavors])


def team_flavors(team: TeamArgs, flavors: Sequence[Flavor]) -> tuple[Flavor, ...]:
    """The flavors of the pools ``team`` may use."""
    names = {p.name for p in reachable(team, [f.as_pool for f in flavors])}
    return tuple(f for f in flavors if f.pool in names)


def _meta(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "labels": {"app.kubernetes.io/managed-by": "gpuready"}, **extra}


def resource_flavor(f: Flavor) -> dict[str, Any]:
    """The pool's ResourceFlavor: Kueue adds its ``nodeLabels`` to an admitted pod's nodeSelector and its
    ``tolerations`` to its tolerations, so the pod lands on that pool's nodes; with a topology it names the pool's
    Topology (:func:`topologies`), by the pool's name."""
    return {"apiVersion": facts.KUEUE_API, "kind": "ResourceFlavor", "metadata": _meta(f.name),
            "spec": {"nodeLabels": dict(f.node_labels), "tolerations": [gpu_toleration(t) for t in f.taints],
                     **({"topologyName": f.name} if f.topology is not None else {})}}


def topologies(flavors: Sequence[Flavor]) -> list[dict[str, Any]]:
    """The Topology of each pool with one (:func:`.topology.topology`), named after the pool."""
    return [tas.topology(f.name, f.topology) for f in flavors if f.topology is not None]


def provisioning_objects(f: Flavor) -> list[dict[str, Any]]:
    """The ProvisioningRequestConfig and the AdmissionCheck of a pool with :attr:`Flavor.provisioning` (none
    without): the check Kueue's provisioning controller runs, with the class and parameters its requests carry."""
    p = f.provisioning
    if p is None:
        return []
    config = {"apiVersion": facts.KUEUE_API, "kind": facts.PROVISIONING_CONFIG_KIND, "metadata": _meta(f.check),
              "spec": {"provisioningClassName": p.provisioning_class, "managedResources": list(p.managed_resources),
                       **({"parameters": dict(p.parameters)} if p.parameters else {})}}
    check = {"apiVersion": facts.KUEUE_API, "kind": "AdmissionCheck", "metadata": _meta(f.check), "spec": {
        "controllerName": facts.PROVISIONING_CONTROLLER,
        "parameters": {"apiGroup": facts.KUEUE_API.split("/")[0], "kind": facts.PROVISIONING_CONFIG_KIND,
                       "name": f.check}}}
    return [config, check]


@dataclass(frozen=True)
class Quotas:
    """The GPU quotas of a stack's queues (:func:`quotas`): each team's limits by pool, and the Cohort's own quota
    by pool (what the teams' guarantees leave of it)."""

    teams: Mapping[str, Mapping[str, Limits]]
    """Team -> pool -> its ``nominalQuota``, ``borrowingLimit``, ``lendingLimit`` there."""
    cohort: Mapping[str, int]
    """Pool -> the Cohort's own GPUs there."""
    crowded: Mapping[str, int] = field(default_factory=dict)
    """Team -> the GPUs its pools had left for it, for each team whose guarantee is more (quotas above the GPUs)."""


def quotas(teams: Sequence[TeamArgs], flavors: Sequence[Flavor]) -> Quotas:
    """Every team's GPU limits on each of its pools and the Cohort's own quota, as the module's docstring says:
    guarantees by the room left on each pool, lending by the team's quota, the rest of each pool to the Cohort,
    borrowing by what the team can borrow on each pool (at most that: :func:`check` refuses a ``borrow`` beyond
    it)."""
    nominal: dict[str, dict[str, int]] = {}
    lend: dict[str, dict[str, Optional[int]]] = {}
    left = {f.pool: f.gpus for f in flavors}
    crowded = {}
    for t in sorted(teams, key=lambda t: len(team_flavors(t, flavors))):  # teams held to fewer pools first
        mine = team_flavors(t, flavors)
        room = [left[f.pool] for f in mine]
        given = apportion(t.gpus, room) if t.gpus <= sum(room) else split(t.gpus, mine)  # overcommit: by size
        if t.gpus > sum(room):
            crowded[t.name] = sum(room)
        nominal[t.name] = {f.pool: n for f, n in zip(mine, given)}
        for f, n in zip(mine, given):
            left[f.pool] = max(0, left[f.pool] - n)
        lend[t.name] = dict(zip(nominal[t.name], apportion(t.lend, given)))
    own = {f.pool: max(0, f.gpus - sum(n.get(f.pool, 0) for n in nominal.values())) for f in flavors}
    found = {}
    for t in teams:  # in the stack's order
        pools = list(nominal[t.name])
        free = [own[p] + sum(n[p] if lend[u][p] is None else lend[u][p]
                             for u, n in nominal.items() if u != t.name and p in n) for p in pools]
        borrow = apportion(None if t.borrow is None else min(t.borrow, sum(free)), free)
        found[t.name] = {p: Limits(nominal[t.name][p], b, lend[t.name][p]) for p, b in zip(pools, borrow)}
    return Quotas(MappingProxyType(found), MappingProxyType(own), MappingProxyType(crowded))


def covered(channels: bool = False) -> list[str]:
    """The ``coveredResources`` of every queue's one resource group: GPUs, cpu, memory, and with ``channels``
    (``compute_domains``) the ComputeDomains' IMEX channels (:data:`facts.IMEX_CHANNEL_RESOURCE`). Kueue's CRD wants
    each flavor to list the same resources (CEL: as many as ``coveredResources``), at most 64 of them."""
    return [facts.GPU_RESOURCE, "cpu", "memory", *((facts.IMEX_CHANNEL_RESOURCE,) if channels else ())]


def _resources(f: Flavor, gpus: Any, borrow: Any = None, lend: Any = None,
               channels: bool = False) -> list[dict[str, Any]]:
    """The quota of ``gpus`` GPUs of ``f`` and the cpu and memory they come with (limits likewise), in the order of
    :func:`covered`; with ``channels`` one IMEX channel per GPU, limits likewise: a ComputeDomain gang's pods each
    claim one channel and at least one GPU, and every queue's channel limits mirror its GPU limits, so no queue's
    channels run out before its GPUs (:data:`facts.DRA_CHANNEL_KUEUE_MAPPINGS`)."""
    return [_quota(facts.GPU_RESOURCE, gpus, borrow, lend),
            _quota("cpu", _scaled(gpus, f.vcpus_per_gpu), _scaled(borrow, f.vcpus_per_gpu),
                   _scaled(lend, f.vcpus_per_gpu)),
            _quota("memory", _scaled(gpus, f.memory_gib_per_gpu, "Gi"), _scaled(borrow, f.memory_gib_per_gpu, "Gi"),
                   _scaled(lend, f.memory_gib_per_gpu, "Gi")),
            *((_quota(facts.IMEX_CHANNEL_RESOURCE, gpus, borrow, lend),) if channels else ())]


def cohort(overcommit: bool = False, flavors: Sequence[Flavor] = (), teams: Sequence[TeamArgs] = (),
           channels: bool = False) -> dict[str, Any]:
    """The Cohort the teams' ClusterQueues lend and borrow in, holding what the teams' quotas leave of each pool
    (:attr:`Quotas.cohort`, with its cpu and memory, and with ``channels`` its IMEX channels), which every member may
    borrow; with ``overcommit`` (``gpuready:overcommitQuotas``) annotated so that the policy pack and ``gpuready
    plan`` take quotas above the GPUs as meant."""
    extra = {"annotations": {facts.OVERCOMMIT_ANNOTATION: "true"}} if overcommit else {}
    own = quotas(teams, flavors).cohort
    spec = {"resourceGroups": [{"coveredResources": covered(channels), "flavors": [
        {"name": f.name, "resources": _resources(f, own[f.pool], channels=channels)} for f in flavors]}]} \
        if flavors else {}
    return {"apiVersion": facts.KUEUE_API, "kind": "Cohort", "metadata": _meta(facts.COHORT, **extra), "spec": spec}


def priority_classes() -> list[dict[str, Any]]:
    """The WorkloadPriorityClasses a job names with ``kueue.x-k8s.io/priority-class``."""
    return [{"apiVersion": facts.KUEUE_API, "kind": "WorkloadPriorityClass", "metadata": _meta(name),
             "value": value, "description": f"gpuready: {name.rsplit('-', 1)[1]} priority"}
            for name, value in facts.PRIORITY_CLASSES.items()]


def _quota(name: str, nominal: Any, borrow: Any, lend: Any) -> dict[str, Any]:
    return {"name": name, "nominalQuota": nominal, **({"borrowingLimit": borrow} if borrow is not None else {}),
            **({"lendingLimit": lend} if lend is not None else {})}


def _scaled(gpus: Optional[int], per_gpu: int, unit: str = "") -> Any:
    if gpus is None:
        return None
    return f"{gpus * per_gpu}{unit}" if unit else gpus * per_gpu


def cluster_queue(team: TeamArgs, flavors: Sequence[Flavor], teams: Sequence[TeamArgs] = (),
                  channels: bool = False) -> dict[str, Any]:
    """The team's ClusterQueue among ``teams`` (default: it alone): in the Cohort, admitting workloads of its
    namespace, one flavor per pool it may use with its limits there (:func:`quotas`) and the cpu and memory (with
    ``channels``, the IMEX channels: :func:`_resources`) those GPUs come with; it lends its idle quota and reclaims
    it by preemption; within the team, higher priority preempts lower."""
    mine = team_flavors(team, flavors)
    limits = quotas(teams or (team,), flavors).teams[team.name]
    entries = [{"name": f.name, "resources": _resources(f, limits[f.pool].nominal, limits[f.pool].borrowing,
                                                        limits[f.pool].lending, channels)} for f in mine]
    checks = [{"name": f.check, "onFlavors": [f.name]} for f in mine if f.provisioning is not None]
    return {"apiVersion": facts.KUEUE_API, "kind": "ClusterQueue", "metadata": _meta(team.name), "spec": {
        "cohortName": facts.COHORT,
        # A pool whose nodes come only for a ProvisioningRequest: its workloads wait for them before admission.
        **({"admissionChecksStrategy": {"admissionChecks": checks}} if checks else {}),
        "namespaceSelector": {"matchLabels": {facts.TEAM_LABEL: team.name}},
        "resourceGroups": [{"coveredResources": covered(channels), "flavors": entries}],
        # borrowWithinCohort is left out: Kueue allows it with classical preemption only, not with fair sharing.
        "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
        "fairSharing": {"weight": team.weight},
    }}


def namespace(team: TeamArgs) -> dict[str, Any]:
    """The team's namespace, labelled so that Kueue manages its jobs and its ClusterQueue admits them."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": team.home, "labels": {"app.kubernetes.io/managed-by": "gpuready", facts.TEAM_LABEL: team.name}}}


def local_queue(team: TeamArgs) -> dict[str, Any]:
    """The team's LocalQueue, in its namespace, named after the team, feeding its ClusterQueue."""
    return {"apiVersion": facts.KUEUE_API, "kind": "LocalQueue",
            "metadata": _meta(team.name, namespace=team.home), "spec": {"clusterQueue": team.name}}


def operators_namespace() -> dict[str, Any]:
    """The operators' namespace (:data:`facts.OPERATORS_NAMESPACE`), labelled as a team's is (value: the operators'
    queue) so that Kueue manages its jobs (``managedJobsNamespaceSelector``) and the operators' ClusterQueue alone
    admits them."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": facts.OPERATORS_NAMESPACE,
        "labels": {"app.kubernetes.io/managed-by": "gpuready", facts.TEAM_LABEL: facts.OPERATORS_QUEUE}}}


def operators_cluster_queue(flavors: Sequence[Flavor], channels: bool = False) -> dict[str, Any]:
    """The operators' ClusterQueue: in the teams' Cohort, marked ``gpuready.io/role: operators`` (the readers of the
    teams leave it out), a nominal quota of 0 on every pool's flavor and no borrowing limit, so all it runs is what
    the teams and the Cohort leave idle and it guarantees nothing; the admission checks of the pools with one.

    Preemption under the stack's fair sharing (Kueue v0.19.2, "Preemption" concept page): a pending Workload may
    preempt in other ClusterQueues of the Cohort only where that ClusterQueue uses more than its nominal quota
    (Kueue prunes queues whose share is 0), and only while the preemption strategies hold (the operators' share,
    its own job admitted, at most the target's: :data:`facts.OPERATORS_WEIGHT` keeps it low).
    ``reclaimWithinCohort: LowerPriority`` then lets a check (:data:`facts.OPERATORS_PRIORITY_CLASS`) take back GPUs
    a team borrowed for a job of lower priority, never a team's guaranteed GPUs nor its high-priority jobs;
    ``withinClusterQueue: Never``: one check never evicts another. ``borrowWithinCohort`` is left out (classical
    preemption only). With ``channels``, the IMEX channels likewise (0, borrowed as its GPUs are)."""
    mine = [{"name": f.name, "resources": _resources(f, 0, channels=channels)} for f in flavors]
    checks = [{"name": f.check, "onFlavors": [f.name]} for f in flavors if f.provisioning is not None]
    return {"apiVersion": facts.KUEUE_API, "kind": "ClusterQueue", "metadata": {
        "name": facts.OPERATORS_QUEUE, "labels": {"app.kubernetes.io/managed-by": "gpuready",
                                                  facts.ROLE_LABEL: facts.OPERATORS_ROLE}}, "spec": {
        "cohortName": facts.COHORT,
        **({"admissionChecksStrategy": {"admissionChecks": checks}} if checks else {}),
        "namespaceSelector": {"matchLabels": {facts.TEAM_LABEL: facts.OPERATORS_QUEUE}},
        "resourceGroups": [{"coveredResources": covered(channels), "flavors": mine}],
        "preemption": {"reclaimWithinCohort": "LowerPriority", "withinClusterQueue": "Never"},
        "fairSharing": {"weight": facts.OPERATORS_WEIGHT},
    }}


def operators_local_queue() -> dict[str, Any]:
    """The operators' LocalQueue, in their namespace, feeding their ClusterQueue (both named
    :data:`facts.OPERATORS_QUEUE`)."""
    return {"apiVersion": facts.KUEUE_API, "kind": "LocalQueue",
            "metadata": _meta(facts.OPERATORS_QUEUE, namespace=facts.OPERATORS_NAMESPACE),
            "spec": {"clusterQueue": facts.OPERATORS_QUEUE}}


def operators_queue(flavors: Sequence[Flavor], channels: bool = False) -> list[dict[str, Any]]:
    """The operators' queue, for the platform's own checks (``gpuready smoke``, ``sweep``, ``sweep --repair``
    without ``--team``): its namespace, ClusterQueue (covering the IMEX channels with ``channels``) and LocalQueue,
    in the order they can be created."""
    return [operators_namespace(), operators_cluster_queue(flavors, channels), operators_local_queue()]


def gang_levels(flavors: Sequence[Flavor]) -> dict[str, list[str]]:
    """The ``gangLevels`` of a queue's output: each of its ``flavors`` with a topology -> the levels a gang there may
    ask for, finest first (:attr:`.topology.Placement.gang_levels`); what the multi-node smoke asks Kueue by."""
    return {f.name: list(f.topology.gang_levels) for f in flavors if f.topology is not None}


def operators_output(flavors: Sequence[Flavor] = ()) -> dict[str, Any]:
    """The ``operatorsQueue`` stack output (keys of the Kubernetes platforms' contract): where ``gpuready smoke`` and
    ``gpuready sweep`` send their Jobs without ``--team``, and the priority class those Jobs name; with pools placed
    by a topology, their ``gangLevels`` (:func:`gang_levels`)."""
    levels = gang_levels(flavors)
    return {"namespace": facts.OPERATORS_NAMESPACE, "localQueue": facts.OPERATORS_QUEUE,
            "clusterQueue": facts.OPERATORS_QUEUE, "cohort": facts.COHORT,
            "priorityClass": facts.OPERATORS_PRIORITY_CLASS, **({"gangLevels": levels} if levels else {})}


def objects(teams: Sequence[TeamArgs], flavors: Sequence[Flavor], overcommit: bool = False,
            channels: bool = False) -> list[dict[str, Any]]:
    """Every object the teams need, in the order they can be created: namespaces, the pools' Topologies,
    ResourceFlavors, the
    ProvisioningRequestConfigs and AdmissionChecks of pools with one, the Cohort (marked when ``overcommit``), the
    WorkloadPriorityClasses, ClusterQueues, LocalQueues, then the operators' queue (:func:`operators_queue`); with
    ``channels`` (``compute_domains``, whose channel claims Kueue charges to :data:`facts.IMEX_CHANNEL_RESOURCE`)
    every queue and the Cohort cover the channels too (:func:`covered`). Empty without teams."""
    if not teams:
        return []
    return [*(namespace(t) for t in teams), *topologies(flavors), *(resource_flavor(f) for f in flavors),
            *(o for f in flavors for o in provisioning_objects(f)), cohort(overcommit, flavors, teams, channels),
            *priority_classes(),
            *(cluster_queue(t, flavors, teams, channels) for t in teams), *(local_queue(t) for t in teams),
            *operators_queue(flavors, channels)]


def _limits(spec: Mapping[str, Any]) -> dict[str, Limits]:
    """The GPU limits by flavor of a ClusterQueue's or Cohort's ``spec`` as this module writes them."""
    found = {}
    for group in spec.get("resourceGroups") or ():
        for entry in group.get("flavors") or ():
            for r in entry.get("resources") or ():
                if r.get("name") == facts.GPU_RESOURCE:
                    found[entry["name"]] = Limits(int(r["nominalQuota"]), r.get("borrowingLimit"),
                                                  r.get("lendingLimit"))
    return found


def admitted(made: Sequence[Mapping[str, Any]], flavors: Sequence[Flavor]) -> Admission:
    """What Kueue admits with the objects ``made`` (:func:`objects`, and any other queue added to them) on
    ``flavors``: :func:`~gpuready_components.queue_arithmetic.admission` on every team's ClusterQueue and Cohort.
    The operators' queue (:func:`operators_queue`, a queue with a role) is left out: it guarantees nothing and
    borrows only what the teams leave idle, so a pool that only it reaches is a pool no team's job can use."""
    queues = [Queue(o["metadata"]["name"], o["spec"].get("cohortName"), _limits(o["spec"]))
              for o in made if o["kind"] == "ClusterQueue" and not o["metadata"]["labels"].get(facts.ROLE_LABEL)]
    cohorts = {o["metadata"]["name"]: _limits(o["spec"]) for o in made if o["kind"] == "Cohort"}
    return admission(queues, cohorts, {f.name: Capacity(f.gpus, f.node_gpus) for f in flavors})


def check(teams: Sequence[TeamArgs], flavors: Sequence[Flavor], overcommit: bool = False,
          field_name: str = "teams") -> Admission:
    """What the queues of :func:`objects` admit (:func:`admitted`), after raising :class:`ConfigError` for a
    promise they cannot keep: a guarantee beyond what its pools have left (unless ``overcommit``), a team's
    ``borrow`` beyond what it can borrow while the others idle (the Cohort's quota and what the other teams lend, on
    its pools), a pool on which no queue can hold one whole node."""
    crowded = quotas(teams, flavors).crowded
    for i, team in enumerate(teams):
        if team.name in crowded and not overcommit:
            pools = ", ".join(f.pool for f in team_flavors(team, flavors))
            raise ConfigError(f"{field_name}[{i}].gpus", team.gpus,
                              f"its pools ({pools}) have {crowded[team.name]} GPUs left after the guarantees of the "
                              "teams held to fewer pools", "lower it or theirs, let it use more pools, or set "
                              "overcommitQuotas if quotas above the GPUs are meant")
    found = admitted(objects(teams, flavors, overcommit), flavors)
    for i, team in enumerate(teams):
        reach = found.most(team.name) - found.guaranteed(team.name)
        if team.borrow and team.borrow > reach:
            raise ConfigError(f"{field_name}[{i}].borrow", team.borrow,
                              f"team {team.name} can borrow at most {reach} GPUs while the others idle (the Cohort's "
                              "quota and what the other teams lend, on its pools)",
                              f"borrow at most {reach}, or leave more of the pools to the Cohort (lower the "
                              "teams' gpus) or raise the other teams' lend")
    for f in flavors:
        if found.largest.get(f.name, 0) < f.node_gpus:
            raise ConfigError(field_name, [t.name for t in teams],
                              f"no queue can hold one whole node of GPU pool {f.pool} ({f.node_gpus} GPUs): the most "
                              f"one queue holds there is {found.largest.get(f.name, 0)}",
                              f"give a team that may use {f.pool} a borrow of at least {f.node_gpus} (or none, no "
                              "limit), or quota there")
    return found


def child_name(stack: str, obj: Mapping[str, Any]) -> str:
    """The Pulumi name of the child resource holding ``obj`` (one of :func:`objects`, not a Namespace): ``<stack>-
    <kind>-<name>``, ``<stack>-<kind>-<namespace>-<name>`` for a namespaced one, and for a pool's ResourceFlavor,
    AdmissionCheck and ProvisioningRequestConfig the name it had when flavors were ``gpu-<pool>``
    (:data:`facts.FLAVOR_PREFIX`: a renamed child would be replaced)."""
    kind, meta = obj["kind"], obj["metadata"]
    name = f"{facts.FLAVOR_PREFIX}{meta['name']}" if kind in facts.PREFIXED_KINDS else meta["name"]
    return f"{stack}-{kind.lower()}-{meta['namespace']}-{name}" if meta.get("namespace") else \
        f"{stack}-{kind.lower()}-{name}"


def config(device_classes: Mapping[str, Sequence[str]] = MappingProxyType({})) -> dict[str, Any]:
    """The controller's Configuration: the chart's own, with the Job and JobSet integrations, waitForPodsReady,
    fair sharing, and every job of a team namespace managed whether or not it names a queue; with
    ``device_classes`` (quota resource -> the DRA DeviceClasses it counts, :data:`facts.DRA_KUEUE_MAPPINGS`), the
    ``resources.deviceClassMappings`` by which Kueue charges a job's ResourceClaimTemplates to its quota."""
    mappings = [{"name": name, "deviceClassNames": list(classes)} for name, classes in device_classes.items()]
    return {"apiVersion": facts.KUEUE_CONFIG_API, "kind": "Configuration", **facts.KUEUE_CONFIG_BASE,
            "manageJobsWithoutQueueName": True,
            "managedJobsNamespaceSelector": {"matchExpressions": [{"key": facts.TEAM_LABEL, "operator": "Exists"}]},
            "waitForPodsReady": dict(facts.KUEUE_WAIT_FOR_PODS_READY),
            "integrations": {"frameworks": list(facts.KUEUE_FRAMEWORKS)},
            "fairSharing": dict(facts.KUEUE_FAIR_SHARING),
            **({"resources": {"deviceClassMappings": mappings}} if mappings else {})}


def chart_values(system_node_selector: Mapping[str, Any],
                 device_classes: Mapping[str, Sequence[str]] = MappingProxyType({})) -> dict[str, Any]:
    """Values of Kueue's chart: the released image, the controller on the system nodes (``system_node_selector``;
    it tolerates no GPU taint, so never lands on a GPU node), and :func:`config` (with ``device_classes``)."""
    return {
        "controllerManager": {
            "manager": {"image": dict(facts.KUEUE_IMAGE)},
            "nodeSelector": dict(system_node_selector),
            "tolerations": [dict(facts.CRITICAL_ADDONS_TOLERATION)],
        },
        "managerConfig": {"controllerManagerConfigYaml": yaml.safe_dump(config(device_classes), sort_keys=False)},
    }


def labels(team: TeamArgs) -> dict[str, str]:
    """The labels a job of ``team`` carries: its LocalQueue, and the normal priority."""
    return {facts.QUEUE_LABEL: team.name, facts.PRIORITY_LABEL: facts.DEFAULT_PRIORITY_CLASS}


@dataclass(frozen=True)
class Profile:
    """What each team's Metaflow profile shares with the stack's: the service account and the GPU nodes' common
    labels and taints (Kueue adds the pool's own when it admits the job)."""

    service_account: Any
    node_labels: Mapping[str, str]
    taints: Sequence[Mapping[str, str]] = field(default_factory=tuple)


def team_outputs(teams: Sequence[TeamArgs], flavors: Sequence[Flavor], profile: Profile) -> list[dict[str, Any]]:
    """The ``teams`` stack output: one map per team (keys of the Kubernetes platforms' contract), with what its queue
    admits (:func:`admitted`): ``mostGpus``, the most it holds at once while the others idle, and ``mostGpusPerJob``,
    the most one job gets (Kueue gives a job's pods one flavor)."""
    out = []
    found = admitted(objects(teams, flavors), flavors) if teams else None
    for team in teams:
        base = metaflow.kubernetes_profile(namespace=team.home, service_account=profile.service_account,
                                           node_labels=profile.node_labels, taints=profile.taints)
        out.append({
            "name": team.name, "namespace": team.home, "localQueue": team.name, "clusterQueue": team.name,
            "cohort": facts.COHORT, "gpus": team.gpus, "borrow": team.borrow, "lend": team.lend,
            "weight": team.weight, "flavors": [f.name for f in team_flavors(team, flavors)],
            "mostGpus": found.most(team.name), "mostGpusPerJob": found.most_in_one(team.name),
            **({"gangLevels": levels} if (levels := gang_levels(team_flavors(team, flavors))) else {}),
            "metaflowProfile": {**base, "METAFLOW_KUBERNETES_LABELS": ",".join(
                f"{k}={v}" for k, v in labels(team).items())},
        })
    return out
