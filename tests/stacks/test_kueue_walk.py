"""Every reference Kubernetes stack with teams, walked through Kueue's own arithmetic (tests/kueue_sim.py, the
vendor's truth stand-in, never gpuready's): the ResourceFlavors, Cohort, ClusterQueues, LocalQueues and priority
classes the stack renders, with the Kueue Configuration its chart gets, against the pools' GPUs at full scale as
the plan counts them. Jobs ask for GPUs as a team's Metaflow profile makes them (its queue and priority labels).

- Each team's jobs reach its ClusterQueue through a LocalQueue in its own namespace.
- Filling every queue with 1-GPU jobs admits every GPU of every pool: nothing is out of the queues' reach.
- Each team alone holds what the issue's contract says: its guarantee plus ``min(borrow, what the others lend +
  what the teams' guarantees leave over)``.
- A team borrowing everything it may gives back what another team then asks for within its guarantee (preemption),
  and keeps its own guarantee.
- A job for one whole node of each pool is admitted through some queue, and through every queue of no team (the
  operators').

The same checks pass an eks-shaped stack written by hand whose quotas add up, and catch it broken as issue 39
found the reference stacks (a Cohort holding nothing, a borrowing limit short of ``borrow``, no reclaim)."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import re
from fractions import Fraction
from typing import Any

import pytest
import yaml

from gpuready.plan import planned
from gpuready.plan.describe import capacities
from gpuready_components import platforms
from gpuready_components.k8s_gpu import facts
from tests.conftest import ROOT
from tests.gpuready.policy.helpers import render_stack
from tests.kueue_sim import GPU, Kueue

from .test_kueue_stacks import _nodes

RELEASE = "kubernetes:helm.sh/v3:Release"
NAMESPACE = "kubernetes:core/v1:Namespace"


def _stacks_with_teams() -> list[str]:
    kubernetes = {p.name for p in platforms.every(kubernetes=True)}
    found = []
    for path in sorted((ROOT / "stacks").glob("Pulumi.*.yaml")):
        config = yaml.safe_load(path.read_text())["config"]
        if config.get("gpuready:teams") and config.get("gpuready:platform") in kubernetes:
            found.append(path.name.removeprefix("Pulumi.").removesuffix(".yaml"))
    return found


STACKS = _stacks_with_teams()


@functools.lru_cache(maxsize=None)
def stack_kueue(name: str) -> dict[str, Any]:
    """What the walk needs of stack ``name``: its Kueue objects (and Namespaces) and controller config, its outputs
    and teams (as exported), and per pool its flavor, GPUs at full scale and GPUs per node."""
    rendering = render_stack(name)
    platform = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{name}.yaml").read_text())["config"]["gpuready:platform"]
    nodes = _nodes(dataclasses.replace(rendering, stack=platform))  # the nodes as the platform registers them
    objects = [r.inputs for r in rendering.resources if r.type.startswith(f"kubernetes:{facts.KUEUE_API}:")
               or r.type == NAMESPACE]  # a ClusterQueue's namespaceSelector selects the namespaces' labels
    (release,) = [r for r in rendering.of_type(RELEASE) if r.inputs["chart"] == facts.KUEUE_CHART.name]
    config = yaml.safe_load(release.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])
    flavors = {o["metadata"]["name"]: o["spec"].get("nodeLabels") or {} for o in objects
               if o["kind"] == "ResourceFlavor"}
    per_node = {n: max(row.gpus for row in c.rows) for n, c, _ in capacities(rendering)}
    pools = {}
    for pool in planned(rendering, name, policies=False).capacity.pools:
        (label,) = {node.labels[facts.POOL_LABEL] for node in nodes if node.pool == pool.resource}
        matching = [f for f, wanted in flavors.items() if wanted.get(facts.POOL_LABEL) == label]
        assert len(matching) == 1, f"{name}: pool {pool.resource} is the nodes of flavors {matching}"
        pools[pool.resource] = {"flavor": matching[0], "gpus": pool.max_gpus, "per_node": per_node[pool.resource],
                                "selector": {facts.POOL_LABEL: label}}
    return {"objects": objects, "config": config, "outputs": rendering.outputs, "teams": rendering.outputs["teams"],
            "pools": pools}


def _kueue(stack: dict[str, Any]) -> Kueue:
    return Kueue(stack["objects"], stack["config"])


def _labels(team: dict[str, Any]) -> dict[str, str]:
    text = team["metaflowProfile"]["METAFLOW_KUBERNETES_LABELS"]
    return dict(kv.split("=", 1) for kv in text.split(","))


def _job(kueue: Kueue, team: dict[str, Any], gpus: int = 1, selector=None):
    """A job of ``team`` as its Metaflow profile labels it: in its namespace, through its queue, at its priority."""
    labels = _labels(team)
    return kueue.submit(f"{team['name']}-{len(kueue.workloads)}", team["metaflowProfile"][
        "METAFLOW_KUBERNETES_NAMESPACE"], labels[facts.QUEUE_LABEL], {GPU: gpus},
        priority_class=labels.get(facts.PRIORITY_LABEL), node_selector=selector)


def _held(kueue: Kueue, team: dict[str, Any], flavor: str | None = None) -> Fraction:
    """The GPUs ``team``'s ClusterQueue holds (in ``flavor``, or in all)."""
    flavors = [flavor] if flavor else list(kueue.flavors)
    return sum((kueue.admitted_in(team["clusterQueue"], f) for f in flavors), Fraction(0))


def _fill(kueue: Kueue, teams: list[dict[str, Any]]) -> None:
    """1-GPU jobs from ``teams`` in turn until a round admits none (each left pending once)."""
    while True:
        before = sum(_held(kueue, t) for t in teams)
        for team in teams:
            _job(kueue, team)
        if sum(_held(kueue, t) for t in teams) == before:
            return


def _admitted(kueue: Kueue, flavor: str) -> Fraction:
    return sum((kueue.admitted_in(cq, flavor) for cq in kueue.cluster_queues), Fraction(0))


def check_queues(name: str, stack: dict[str, Any]) -> None:
    """Each team's jobs, as its Metaflow profile makes them, reach its ClusterQueue through a LocalQueue in the
    team's own namespace, which no other team shares and the ClusterQueue's namespaceSelector selects."""
    kueue = _kueue(stack)
    namespaces = [t["metaflowProfile"]["METAFLOW_KUBERNETES_NAMESPACE"] for t in stack["teams"]]
    assert len(set(namespaces)) == len(namespaces), f"{name}: teams share a namespace: {namespaces}"
    for team, namespace in zip(stack["teams"], namespaces):
        queue = _labels(team)[facts.QUEUE_LABEL]
        assert namespace == team["namespace"] and kueue.local_queues.get((namespace, queue)) == team["clusterQueue"], (
            f"{name}: {team['name']}'s jobs in namespace {namespace} name queue {queue}, which is not a LocalQueue "
            f"there pointing at ClusterQueue {team['clusterQueue']}")
        assert namespace in kueue.namespaces, f"{name}: the stack makes no namespace {namespace} for {team['name']}"
        job = _job(kueue, team)
        refused = [c["message"] for c in job.conditions if c["reason"] == "Inadmissible"]
        assert not refused, f"{name}: {team['name']}'s job: {refused[0]}"


def check_fill(name: str, stack: dict[str, Any]) -> None:
    """Filling the queues with 1-GPU jobs admits every GPU of every pool."""
    kueue = _kueue(stack)
    _fill(kueue, stack["teams"])
    admitted = {pool: int(_admitted(kueue, p["flavor"])) for pool, p in stack["pools"].items()}
    capacity = {pool: p["gpus"] for pool, p in stack["pools"].items()}
    assert admitted == capacity, (f"{name}: {sum(admitted.values())} of {sum(capacity.values())} GPUs admitted "
                                  f"through the queues (per pool {admitted}, capacity {capacity})")


def _contract(stack: dict[str, Any], team: dict[str, Any]) -> int:
    """The most ``team`` may hold with the others idle (issue 39): its guarantee, plus its ``borrow`` (none:
    unbounded) within what the others lend (their ``lend``, else their whole guarantee) and what the guarantees
    leave over of the pools' GPUs (the Cohort's)."""
    total = sum(p["gpus"] for p in stack["pools"].values())
    others = [t for t in stack["teams"] if t["name"] != team["name"]]
    lent = sum(t["gpus"] if t.get("lend") is None else min(t["lend"], t["gpus"]) for t in others)
    left_over = max(0, total - sum(t["gpus"] for t in stack["teams"]))
    borrow = lent + left_over if team.get("borrow") is None else min(team["borrow"], lent + left_over)
    return int(team["gpus"] + borrow)


def check_alone(name: str, stack: dict[str, Any]) -> None:
    """Each team alone holds what the contract says, and every positive ``borrow`` is reachable (a stack that
    plans promises it)."""
    held = {}
    for team in stack["teams"]:
        kueue = _kueue(stack)
        _fill(kueue, [team])
        held[team["name"]] = int(_held(kueue, team))
    expected = {team["name"]: _contract(stack, team) for team in stack["teams"]}
    assert held == expected, f"{name}: each team alone holds {held} GPUs; the contract says {expected}"
    short = [f"{t['name']} may borrow {t['borrow']} GPUs but can borrow {held[t['name']] - t['gpus']}"
             for t in stack["teams"] if t.get("borrow") and held[t["name"]] < t["gpus"] + t["borrow"]]
    assert not short, f"{name} plans, so every borrow must be reachable: {'; '.join(short)}"


def check_preempt_back(name: str, stack: dict[str, Any]) -> None:
    """Each team borrowing all it may gives each other team its guarantee back, and keeps its own."""
    for borrower, owner in itertools.permutations(stack["teams"], 2):
        kueue = _kueue(stack)
        _fill(kueue, [borrower])
        before = _held(kueue, borrower)
        for _ in range(int(owner["gpus"])):
            _job(kueue, owner)
        preempted = [e for e in kueue.events if e[0] == "preempted"]
        assert _held(kueue, owner) == owner["gpus"], (
            f"{name}: {owner['name']} got {_held(kueue, owner)} of its {owner['gpus']} guaranteed GPUs back from "
            f"{borrower['name']} ({len(preempted)} preempted)")
        assert _held(kueue, borrower) >= min(before, borrower["gpus"]), (name, borrower["name"])
        if before + owner["gpus"] > sum(p["gpus"] for p in stack["pools"].values()):
            assert preempted, f"{name}: {owner['name']} got its GPUs back without preempting {borrower['name']}"


def check_whole_node(name: str, stack: dict[str, Any]) -> None:
    """A job for one whole node of each pool (its pods pinned to the pool), the cluster idle, is admitted through
    some queue, and through every queue of no team (the operators', which smoke and sweep use without ``--team``)."""
    teams = {(t["namespace"], t["localQueue"]): t for t in stack["teams"]}
    for pool, p in stack["pools"].items():
        landed = []
        for namespace, queue in sorted(_kueue(stack).local_queues):
            kueue = _kueue(stack)
            team = teams.get((namespace, queue))
            job = _job(kueue, team, p["per_node"], p["selector"]) if team else kueue.submit(
                "whole-node", namespace, queue, {GPU: p["per_node"]}, node_selector=p["selector"])
            if job.admitted and job.flavors[GPU] == p["flavor"]:
                landed.append((namespace, queue))
            else:
                assert team, f"{name}: the queue {namespace}/{queue} of no team admits no {p['per_node']}-GPU " \
                             f"job for one node of pool {pool}: {job.message}"
        assert landed, f"{name}: no queue admits a {p['per_node']}-GPU job for one node of pool {pool}"


CHECKS = (check_queues, check_fill, check_alone, check_preempt_back, check_whole_node)


def test_the_walk_covers_every_reference_kubernetes_stack_with_teams():
    assert {"eks", "gke", "aks"} <= set(STACKS)


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("name", STACKS)
def test_the_reference_stack_walks_through_kueue(name, check):
    check(name, stack_kueue(name))


def _shaped(cohort=(("small", 4), ("big", 12)), research_big=(2, 6), research_small=2, research_borrow=8,
            inference_lend=(0, 0), reclaim="Any", local_queues=None, selector=None, operators=()):
    """An eks-shaped stack, written by hand: a 1-GPU pool of 4 and a 4-GPU pool of 16; research guaranteed 2 and
    borrowing ``research_borrow`` (``research_big``: quota 2 and a borrowing limit of 6 on the big pool,
    ``research_small``: the borrowing limit on the small one; None: no limit), inference guaranteed 2 (on the big
    pool) lending ``inference_lend`` (declared, and its lendingLimit there); the Cohort holding ``cohort``;
    ``local_queues``: namespace -> team of each LocalQueue (named for the team); ``selector``: every ClusterQueue's
    namespaceSelector; ``operators``: the pools a queue of no team (``ops``, nominal quota 0) covers."""
    def gpu(nominal, **limits):
        return {"name": GPU, "nominalQuota": nominal, **{k: v for k, v in limits.items() if v is not None}}

    def cq(team, small, big, weight):
        flavors = [{"name": f, "resources": [q]} for f, q in (("small", small), ("big", big)) if q]
        return {"apiVersion": facts.KUEUE_API, "kind": "ClusterQueue", "metadata": {"name": team}, "spec": {
            "cohortName": "gpuready", "namespaceSelector": selector or {}, "fairSharing": {"weight": weight},
            "preemption": {"reclaimWithinCohort": reclaim, "withinClusterQueue": "LowerPriority"},
            "resourceGroups": [{"coveredResources": [GPU], "flavors": flavors}]}}

    def team(name, borrow, lend):
        return {"name": name, "namespace": name, "localQueue": name, "clusterQueue": name, "gpus": 2,
                "borrow": borrow, "lend": lend, "metaflowProfile": {
                    "METAFLOW_KUBERNETES_NAMESPACE": name,
                    "METAFLOW_KUBERNETES_LABELS": f"{facts.QUEUE_LABEL}={name},{facts.PRIORITY_LABEL}=normal"}}

    objects = [*({"apiVersion": facts.KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": f},
                  "spec": {"nodeLabels": {facts.POOL_LABEL: f}}} for f in ("small", "big")),
               {"apiVersion": facts.KUEUE_API, "kind": "Cohort", "metadata": {"name": "gpuready"}, "spec": {
                   "resourceGroups": [{"coveredResources": [GPU], "flavors": [
                       {"name": f, "resources": [gpu(n)]} for f, n in cohort]}]} if cohort else {}},
               cq("research", gpu(0, borrowingLimit=research_small),
                  gpu(research_big[0], borrowingLimit=research_big[1]), 1),
               cq("inference", gpu(0, lendingLimit=0), gpu(2, lendingLimit=inference_lend[1]), 2),
               *({"apiVersion": facts.KUEUE_API, "kind": "LocalQueue", "metadata": {"name": t, "namespace": ns},
                  "spec": {"clusterQueue": t}}
                 for ns, t in (local_queues or {"research": "research", "inference": "inference"}).items()),
               {"apiVersion": facts.KUEUE_API, "kind": "WorkloadPriorityClass", "metadata": {"name": "normal"},
                "value": 100},
               *({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": t, "labels": {facts.TEAM_LABEL: t}}}
                 for t in ("research", "inference"))]
    if operators:
        objects += [cq("ops", gpu(0) if "small" in operators else None, gpu(0) if "big" in operators else None, 1),
                    {"apiVersion": facts.KUEUE_API, "kind": "LocalQueue",
                     "metadata": {"name": "ops", "namespace": "ops"}, "spec": {"clusterQueue": "ops"}}]
    return {"objects": objects, "config": {"fairSharing": {"preemptionStrategies": [
                "LessThanOrEqualToFinalShare", "LessThanInitialShare"]}},
            "teams": [team("research", research_borrow, None), team("inference", None, inference_lend[0])],
            "pools": {f: {"flavor": f, "gpus": g, "per_node": n, "selector": {facts.POOL_LABEL: f}}
                      for f, g, n in (("small", 4, 1), ("big", 16, 4))}}


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("change", [
    {},
    {"research_borrow": 0, "research_small": 0, "research_big": (2, 0)},  # borrow: 0 is no borrowing
    {"research_borrow": None, "research_small": None, "research_big": (2, None), "inference_lend": (2, 2)},
    {"operators": ("small", "big")},
], ids=["eks", "borrow-0", "lend-equal-to-quota", "operators"])
def test_the_walk_passes_queues_whose_quotas_add_up(check, change):
    check("shaped", _shaped(**change))


@pytest.mark.parametrize("change, check, says", [
    ({"cohort": ()}, check_fill, "shaped: 4 of 20 GPUs admitted through the queues"),
    ({"cohort": ()}, check_alone, "'research': 2, 'inference': 4} GPUs; the contract says {'research': 10, "
                                  "'inference': 20}"),
    ({"cohort": ()}, check_whole_node, "no queue admits a 1-GPU job for one node of pool small"),
    ({"research_big": (2, 5)}, check_alone, "each team alone holds {'research': 9, 'inference': 20} GPUs; the "
                                            "contract says {'research': 10, 'inference': 20}"),
    ({"research_borrow": 20, "research_small": 4, "research_big": (2, 12)}, check_alone,
     "shaped plans, so every borrow must be reachable: research may borrow 20 GPUs but can borrow 16"),
    ({"research_borrow": 0, "research_small": None, "research_big": (2, None)}, check_alone,
     "each team alone holds {'research': 18, 'inference': 20} GPUs; the contract says {'research': 2, "),
    ({"research_borrow": None, "research_small": None, "research_big": (2, None), "inference_lend": (2, 1)},
     check_alone, "each team alone holds {'research': 19, 'inference': 20} GPUs; the contract says {'research': 20"),
    ({"operators": ("big",)}, check_whole_node,
     "the queue ops/ops of no team admits no 1-GPU job for one node of pool small"),
    ({"reclaim": "Never"}, check_preempt_back, "research got 0 of its 2 guaranteed GPUs back from inference"),
    ({"local_queues": {"research": "research", "default": "inference"}}, check_queues,
     "inference's jobs in namespace inference name queue inference, which is not a LocalQueue there"),
    ({"selector": {"matchLabels": {facts.TEAM_LABEL: "research"}}}, check_queues,
     "inference's job: Workload namespace doesn't match ClusterQueue selector"),
])
def test_the_walk_catches_queues_that_do_not_add_up(change, check, says):
    with pytest.raises(AssertionError, match=re.escape(says)):
        check("shaped", _shaped(**change))
