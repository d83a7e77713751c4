"""Kueue for the teams that share a Kubernetes stack's GPUs: pure data, no Pulumi.

From the teams (:mod:`~gpuready_components.teams`) and the stack's GPU pools (:class:`Flavor`, built by each platform
component from the labels and taints it gives the pool), :func:`objects` makes every Kueue object (a ResourceFlavor
per pool, the Cohort, a ClusterQueue per team, the WorkloadPriorityClasses) and the teams' namespaces and
LocalQueues, and the operators' queue for the platform's own checks (:func:`operators_queue`); :func:`chart_values`
the values of Kueue's chart. Tests check each object against Kueue's CRDs and the
values against the chart.

How a number of GPUs is spread over a team's pools (:func:`split`): in proportion to the GPUs each pool reaches at
full scale, rounded by largest remainder, so the per-pool numbers add up to the team's exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping, Optional, Sequence

import yaml

from .. import catalog, metaflow
from ..teams import Pool, TeamArgs, reachable
from . import facts
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

    @property
    def name(self) -> str:
        """The ResourceFlavor's name."""
        return f"{facts.FLAVOR_PREFIX}{self.pool}"

    @property
    def check(self) -> str:
        """The name of its AdmissionCheck and ProvisioningRequestConfig (with :attr:`provisioning`)."""
        return f"{self.name}-provisioning"

    @property
    def as_pool(self) -> Pool:
        return Pool(self.pool, self.gpus)


def flavor(pool: str, gpus: int, node_labels: Mapping[str, str], taints: Sequence[facts.Taint],
           types: Sequence[catalog.GpuInstanceType], provisioning: Optional[Provisioning] = None) -> Flavor:
    """The Flavor of a pool of ``types`` (its catalog rows): cpu and memory per GPU from the most generous type, so
    that a team's cpu and memory quotas never bind before its GPU quota; ``provisioning``: the platform's admission
    check on the pool, if any."""
    return Flavor(pool, gpus, MappingProxyType(dict(node_labels)), tuple(taints),
                  max(math.ceil(t.vcpus / t.gpus) for t in types),
                  max(math.ceil(t.memory_gib / t.gpus) for t in types), provisioning)


def split(total: Optional[int], flavors: Sequence[Flavor]) -> list[Optional[int]]:
    """``total`` GPUs spread over ``flavors`` in proportion to their GPUs (largest remainder; ties to the first);
    ``None`` (no limit) stays ``None`` on each."""
    if total is None:
        return [None] * len(flavors)
    whole = sum(f.gpus for f in flavors)
    if not whole:
        return [0] * len(flavors)
    exact = [total * f.gpus / whole for f in flavors]
    shares = [math.floor(x) for x in exact]
    order = sorted(range(len(flavors)), key=lambda i: (-(exact[i] - shares[i]), i))
    for i in order[:total - sum(shares)]:
        shares[i] += 1
    return shares


def team_flavors(team: TeamArgs, flavors: Sequence[Flavor]) -> tuple[Flavor, ...]:
    """The flavors of the pools ``team`` may use."""
    names = {p.name for p in reachable(team, [f.as_pool for f in flavors])}
    return tuple(f for f in flavors if f.pool in names)


def _meta(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "labels": {"app.kubernetes.io/managed-by": "gpuready"}, **extra}


def resource_flavor(f: Flavor) -> dict[str, Any]:
    """The pool's ResourceFlavor: Kueue adds its ``nodeLabels`` to an admitted pod's nodeSelector and its
    ``tolerations`` to its tolerations, so the pod lands on that pool's nodes."""
    return {"apiVersion": facts.KUEUE_API, "kind": "ResourceFlavor", "metadata": _meta(f.name),
            "spec": {"nodeLabels": dict(f.node_labels), "tolerations": [gpu_toleration(t) for t in f.taints]}}


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


def cohort(overcommit: bool = False) -> dict[str, Any]:
    """The Cohort the teams' ClusterQueues lend and borrow in; with ``overcommit`` (``gpuready:overcommitQuotas``)
    annotated so that the policy pack and ``gpuready plan`` take quotas above the GPUs as meant."""
    extra = {"annotations": {facts.OVERCOMMIT_ANNOTATION: "true"}} if overcommit else {}
    return {"apiVersion": facts.KUEUE_API, "kind": "Cohort", "metadata": _meta(facts.COHORT, **extra), "spec": {}}


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


def cluster_queue(team: TeamArgs, flavors: Sequence[Flavor]) -> dict[str, Any]:
    """The team's ClusterQueue: in the Cohort, admitting workloads of its namespace, one flavor per pool it may use
    with its GPUs (:func:`split`) and the cpu and memory those GPUs come with; it lends its idle quota and
    reclaims it by preemption; within the team, higher priority preempts lower."""
    mine = team_flavors(team, flavors)
    nominal, borrow, lend = split(team.gpus, mine), split(team.borrow, mine), split(team.lend, mine)
    entries = []
    for f, gpus, b, l in zip(mine, nominal, borrow, lend):
        l = None if l is None else min(l, gpus)  # Kueue refuses a lending limit above the nominal quota
        entries.append({"name": f.name, "resources": [
            _quota(facts.GPU_RESOURCE, gpus, b, l),
            _quota("cpu", _scaled(gpus, f.vcpus_per_gpu), _scaled(b, f.vcpus_per_gpu), _scaled(l, f.vcpus_per_gpu)),
            _quota("memory", _scaled(gpus, f.memory_gib_per_gpu, "Gi"), _scaled(b, f.memory_gib_per_gpu, "Gi"),
                   _scaled(l, f.memory_gib_per_gpu, "Gi")),
        ]})
    checks = [{"name": f.check, "onFlavors": [f.name]} for f in mine if f.provisioning is not None]
    return {"apiVersion": facts.KUEUE_API, "kind": "ClusterQueue", "metadata": _meta(team.name), "spec": {
        "cohortName": facts.COHORT,
        # A pool whose nodes come only for a ProvisioningRequest: its workloads wait for them before admission.
        **({"admissionChecksStrategy": {"admissionChecks": checks}} if checks else {}),
        "namespaceSelector": {"matchLabels": {facts.TEAM_LABEL: team.name}},
        "resourceGroups": [{"coveredResources": [facts.GPU_RESOURCE, "cpu", "memory"], "flavors": entries}],
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


def operators_cluster_queue(flavors: Sequence[Flavor]) -> dict[str, Any]:
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
    preemption only)."""
    mine = [{"name": f.name, "resources": [_quota(facts.GPU_RESOURCE, 0, None, None), _quota("cpu", 0, None, None),
                                           _quota("memory", "0Gi", None, None)]} for f in flavors]
    checks = [{"name": f.check, "onFlavors": [f.name]} for f in flavors if f.provisioning is not None]
    return {"apiVersion": facts.KUEUE_API, "kind": "ClusterQueue", "metadata": {
        "name": facts.OPERATORS_QUEUE, "labels": {"app.kubernetes.io/managed-by": "gpuready",
                                                  facts.ROLE_LABEL: facts.OPERATORS_ROLE}}, "spec": {
        "cohortName": facts.COHORT,
        **({"admissionChecksStrategy": {"admissionChecks": checks}} if checks else {}),
        "namespaceSelector": {"matchLabels": {facts.TEAM_LABEL: facts.OPERATORS_QUEUE}},
        "resourceGroups": [{"coveredResources": [facts.GPU_RESOURCE, "cpu", "memory"], "flavors": mine}],
        "preemption": {"reclaimWithinCohort": "LowerPriority", "withinClusterQueue": "Never"},
        "fairSharing": {"weight": facts.OPERATORS_WEIGHT},
    }}


def operators_local_queue() -> dict[str, Any]:
    """The operators' LocalQueue, in their namespace, feeding their ClusterQueue (both named
    :data:`facts.OPERATORS_QUEUE`)."""
    return {"apiVersion": facts.KUEUE_API, "kind": "LocalQueue",
            "metadata": _meta(facts.OPERATORS_QUEUE, namespace=facts.OPERATORS_NAMESPACE),
            "spec": {"clusterQueue": facts.OPERATORS_QUEUE}}


def operators_queue(flavors: Sequence[Flavor]) -> list[dict[str, Any]]:
    """The operators' queue, for the platform's own checks (``gpuready smoke``, ``sweep``, ``sweep --repair``
    without ``--team``): its namespace, ClusterQueue and LocalQueue, in the order they can be created."""
    return [operators_namespace(), operators_cluster_queue(flavors), operators_local_queue()]


def operators_output() -> dict[str, str]:
    """The ``operatorsQueue`` stack output (keys of the Kubernetes platforms' contract): where ``gpuready smoke`` and
    ``gpuready sweep`` send their Jobs without ``--team``, and the priority class those Jobs name."""
    return {"namespace": facts.OPERATORS_NAMESPACE, "localQueue": facts.OPERATORS_QUEUE,
            "clusterQueue": facts.OPERATORS_QUEUE, "cohort": facts.COHORT,
            "priorityClass": facts.OPERATORS_PRIORITY_CLASS}


def objects(teams: Sequence[TeamArgs], flavors: Sequence[Flavor], overcommit: bool = False) -> list[dict[str, Any]]:
    """Every object the teams need, in the order they can be created: namespaces, ResourceFlavors, the
    ProvisioningRequestConfigs and AdmissionChecks of pools with one, the Cohort (marked when ``overcommit``), the
    WorkloadPriorityClasses, ClusterQueues, LocalQueues, then the operators' queue (:func:`operators_queue`). Empty
    without teams."""
    if not teams:
        return []
    return [*(namespace(t) for t in teams), *(resource_flavor(f) for f in flavors),
            *(o for f in flavors for o in provisioning_objects(f)), cohort(overcommit),
            *priority_classes(),
            *(cluster_queue(t, flavors) for t in teams), *(local_queue(t) for t in teams),
            *operators_queue(flavors)]


def config() -> dict[str, Any]:
    """The controller's Configuration: the chart's own, with the Job and JobSet integrations, waitForPodsReady,
    fair sharing, and every job of a team namespace managed whether or not it names a queue."""
    return {"apiVersion": facts.KUEUE_CONFIG_API, "kind": "Configuration", **facts.KUEUE_CONFIG_BASE,
            "manageJobsWithoutQueueName": True,
            "managedJobsNamespaceSelector": {"matchExpressions": [{"key": facts.TEAM_LABEL, "operator": "Exists"}]},
            "waitForPodsReady": dict(facts.KUEUE_WAIT_FOR_PODS_READY),
            "integrations": {"frameworks": list(facts.KUEUE_FRAMEWORKS)},
            "fairSharing": dict(facts.KUEUE_FAIR_SHARING)}


def chart_values(system_node_selector: Mapping[str, Any]) -> dict[str, Any]:
    """Values of Kueue's chart: the released image, the controller on the system nodes (``system_node_selector``;
    it tolerates no GPU taint, so never lands on a GPU node), and :func:`config`."""
    return {
        "controllerManager": {
            "manager": {"image": dict(facts.KUEUE_IMAGE)},
            "nodeSelector": dict(system_node_selector),
            "tolerations": [dict(facts.CRITICAL_ADDONS_TOLERATION)],
        },
        "managerConfig": {"controllerManagerConfigYaml": yaml.safe_dump(config(), sort_keys=False)},
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
    """The ``teams`` stack output: one map per team (keys of the Kubernetes platforms' contract)."""
    out = []
    for team in teams:
        base = metaflow.kubernetes_profile(namespace=team.home, service_account=profile.service_account,
                                           node_labels=profile.node_labels, taints=profile.taints)
        out.append({
            "name": team.name, "namespace": team.home, "localQueue": team.name, "clusterQueue": team.name,
            "cohort": facts.COHORT, "gpus": team.gpus, "borrow": team.borrow, "lend": team.lend,
            "weight": team.weight, "flavors": [f.name for f in team_flavors(team, flavors)],
            "metaflowProfile": {**base, "METAFLOW_KUBERNETES_LABELS": ",".join(
                f"{k}={v}" for k, v in labels(team).items())},
        })
    return out
