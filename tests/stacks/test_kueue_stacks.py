"""The eks, gke and aks reference stacks with their two teams, read as the cluster would: every Kueue object against
Kueue 0.19.2's CRDs, each ResourceFlavor against the nodes of its pool as the cloud registers them, a team's pod
admitted to a flavor scheduled on that pool, the controller on system nodes; and each teams mistake one line naming
the ``gpuready:teams`` key the user typed."""

from __future__ import annotations

import pytest

from gpuready_components.k8s_gpu import facts
from gpuready_components.k8s_gpu.scheduling import schedulable, tolerates
from tests.components.k8s_gpu import kueue_schemas

from .test_config_messages import PYTHON_NAME, _plan
from .test_real_charts import UNMODELLED, chart_objects, gpu_nodes, rendered

STACKS = ("eks", "gke", "aks", "eks-karpenter")
KUEUE = f"kubernetes:{facts.KUEUE_API}:"
ACCELERATOR = "cloud.google.com/gke-accelerator"


def _kueue(rendering) -> list[dict]:
    return [r.inputs for r in rendering.resources if r.type.startswith(KUEUE)]


def _flavors(rendering) -> dict[str, dict]:
    return {o["metadata"]["name"]: o for o in _kueue(rendering) if o["kind"] == "ResourceFlavor"}


def _nodes(rendering):
    """The GPU nodes as the cloud registers them; on GKE with the accelerator label's value, which GKE sets to the
    pool's accelerator type (About GPUs in GKE)."""
    nodes = gpu_nodes(rendering)
    for node in nodes:
        if node.labels.get(ACCELERATOR) == UNMODELLED:
            (pool,) = [r for r in rendering.resources if r.name == node.pool]
            node.labels[ACCELERATOR] = pool.inputs["nodeConfig"]["guestAccelerators"][0]["type"]
    return nodes


def _pool(node) -> str:
    return node.labels[facts.POOL_LABEL]


@pytest.mark.parametrize("variant", STACKS)
def test_every_kueue_object_validates_against_its_crd(variant):
    objects = _kueue(rendered(variant))
    assert {o["kind"] for o in objects} == set(kueue_schemas.KINDS)
    assert sorted(o["metadata"]["name"] for o in objects if o["kind"] == "ClusterQueue") == sorted(
        ["inference", "research", facts.OPERATORS_QUEUE])
    for obj in objects:
        kueue_schemas.validate(obj)


@pytest.mark.parametrize("variant", STACKS)
def test_each_pool_has_a_flavor_carried_by_its_nodes_and_a_team_pod_lands_there(variant):
    rendering = rendered(variant)
    flavors = _flavors(rendering)
    nodes = _nodes(rendering)
    assert {_pool(n) for n in nodes} == set(flavors)
    teams = {t["name"]: t for t in rendering.outputs["teams"]}
    for node in nodes:
        spec = flavors[_pool(node)]["spec"]
        assert spec["nodeLabels"].items() <= node.labels.items(), node.pool
        steady = [t for t in node.taints if t.effect in ("NoSchedule", "NoExecute")]
        assert all(tolerates(spec["tolerations"], t) for t in steady), node.pool
        for team in teams.values():
            if _pool(node) not in team["flavors"]:
                continue
            profile = team["metaflowProfile"]
            # The team's job as Metaflow makes it, then Kueue's flavor injection on admission.
            selector = dict(kv.split("=", 1) for kv in profile["METAFLOW_KUBERNETES_NODE_SELECTOR"].split(","))
            pod = {"nodeSelector": {**selector, **spec["nodeLabels"]}, "tolerations": spec["tolerations"]}
            assert schedulable(pod, node.labels, node.taints), (team["name"], node.pool)
            for other in nodes:
                if _pool(other) != _pool(node):
                    assert not schedulable(pod, other.labels, other.taints), (node.pool, other.pool)


@pytest.mark.parametrize("variant", STACKS)
def test_the_kueue_controller_never_lands_on_a_gpu_node(variant):
    rendering = rendered(variant)
    pods = [o["spec"]["template"]["spec"] for release, o in chart_objects(rendering)
            if release.endswith("-kueue") and o["kind"] == "Deployment"]
    assert pods
    for node in _nodes(rendering):
        for pod in pods:
            assert not schedulable(pod, node.labels, node.taints), node.pool


@pytest.mark.parametrize("variant", STACKS)
def test_quotas_within_capacity_and_teams_output(variant):
    rendering = rendered(variant)
    teams = rendering.outputs["teams"]
    assert [t["name"] for t in teams] == ["research", "inference"]
    assert sum(t["gpus"] for t in teams) <= rendering.outputs["maxGpus"]
    for team in teams:
        assert f"{facts.QUEUE_LABEL}={team['localQueue']}" in team["metaflowProfile"]["METAFLOW_KUBERNETES_LABELS"]
        assert team["metaflowProfile"]["METAFLOW_KUBERNETES_NAMESPACE"] == team["namespace"]


TEAM = {"name": "research", "gpus": 1}
MISTAKES = [
    ([{"name": "ML_Research", "gpus": 1}], "gpuready:teams[0].name"),
    ([TEAM, TEAM], "gpuready:teams[1].name"),
    ([{"name": "a", "gpus": -1}], "gpuready:teams[0].gpus"),
    ([{"name": "a", "gpus": 1.5}], "gpuready:teams[0].gpus"),
    ([{"name": "a", "gpus": 1, "pools": ["reserved"]}], "gpuready:teams[0].pools"),
    ([{"name": "a", "gpus": 1000}], "gpuready:teams[0].gpus"),
    ([{"name": "a", "gpus": 4}, {"name": "b", "gpus": 4}], "gpuready:teams"),
    ([{"name": "a"}], "gpuready:teams[0].gpus"),
]


@pytest.mark.parametrize("stack", ["eks", "gke", "aks"])
@pytest.mark.parametrize("teams, key", MISTAKES)
def test_each_teams_mistake_is_one_line_naming_its_key(tmp_path, capsys, stack, teams, key):
    if key == "gpuready:teams" and stack != "aks":
        teams = [{"name": "a", "gpus": 16}, {"name": "b", "gpus": 16}]  # above eks's 20 and gke's 8
    code, _ = _plan(tmp_path, stack, {"gpuready:teams": teams})
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith(f"gpuready: plan: {key}") and err.count("\n") == 1, err
    assert not PYTHON_NAME.findall(err.replace("--path", "")), err


def test_overcommit_lets_quotas_pass_capacity(tmp_path, capsys):
    over = [{"name": "a", "gpus": 4}, {"name": "b", "gpus": 4}]
    code, _ = _plan(tmp_path, "aks", {"gpuready:teams": over})
    err = capsys.readouterr().err
    assert code == 2 and err.endswith("or set gpuready:overcommitQuotas: true if quotas above capacity are meant (jobs "
                                      "then wait for GPUs their quota allows)\n"), err
    code, _ = _plan(tmp_path, "aks", {"gpuready:teams": over, "gpuready:overcommitQuotas": True})  # the fix, followed
    assert code == 0, capsys.readouterr().err


def _plan_json(tmp_path, changes: dict) -> tuple[int, dict]:
    import json

    import yaml

    from gpuready.cli import main
    from tests.conftest import ROOT

    data = yaml.safe_load((ROOT / "stacks" / "Pulumi.eks.yaml").read_text())
    data["config"].update(changes)
    path = tmp_path / "Pulumi.custom.yaml"
    path.write_text(yaml.safe_dump(data))
    return main(["plan", "--stack-file", str(path), "--json"]), path


@pytest.mark.parametrize("overcommit", [False, True])
def test_quotas_above_the_gpus_are_refused_unless_declared_then_plan_and_policy_take_them_as_meant(
        tmp_path, capsys, overcommit):
    """The stack's ``overcommitQuotas`` reaches the cluster as the Cohort's marker, which the plan's Queues section
    and the ``queue-quota-within-capacity`` rule read: declared, the plan says so and no rule fails; undeclared, the
    component refuses at preview."""
    import json

    teams = [{"name": "research", "gpus": 400}, {"name": "inference", "gpus": 400}]
    code, path = _plan_json(tmp_path, {"gpuready:teams": teams, "gpuready:overcommitQuotas": overcommit,
                                       "gpuready:maxSize": 100})
    out = capsys.readouterr()
    if not overcommit:
        assert code == 2 and out.err.startswith("gpuready: plan: gpuready:teams") and "overcommit" in out.err, out.err
        return
    plan = json.loads(out.out)
    assert plan["queues"]["overcommitted"] and plan["queues"]["overcommit_declared"], plan["queues"]
    assert "queue-quota-within-capacity" not in {v["policy"] for v in plan["policy"]["violations"]}
    cohort = next(r for r in plan["resources"] if r["type"].endswith(":Cohort"))
    assert cohort["inputs"]["metadata"]["annotations"] == {facts.OVERCOMMIT_ANNOTATION: "true"}


@pytest.mark.parametrize("namespace", [*facts.KUBERNETES_NAMESPACES, *facts.STACK_NAMESPACES])
def test_a_team_in_a_namespace_of_kubernetes_or_of_the_stack_is_one_line_naming_its_key(tmp_path, capsys, namespace):
    code, _ = _plan(tmp_path, "eks", {"gpuready:teams": [{"name": "research", "gpus": 1, "namespace": namespace}]})
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith(f"gpuready: plan: gpuready:teams[0].namespace = '{namespace}': a namespace of Kubernetes "
                          "or of what the stack installs"), err


def test_a_team_named_after_a_reserved_namespace_without_one_of_its_own_is_refused_by_name(tmp_path, capsys):
    code, _ = _plan(tmp_path, "eks", {"gpuready:teams": [{"name": "kube-system", "gpus": 1}]})
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("gpuready: plan: gpuready:teams[0].name = 'kube-system'") and \
        err.count("\n") == 1, err


@pytest.mark.parametrize("borrow, refused", [(12, False), (13, True)])
def test_borrow_at_the_most_the_cohort_gives_is_taken_and_one_more_is_one_line(tmp_path, capsys, borrow, refused):
    """eks: research and inference guaranteed 4 each, inference lends none: research may borrow the cohort's 12."""
    teams = [{"name": "research", "gpus": 4, "borrow": borrow}, {"name": "inference", "gpus": 4, "lend": 0}]
    code, _ = _plan(tmp_path, "eks", {"gpuready:teams": teams})
    err = capsys.readouterr().err
    if not refused:
        assert code == 0, err
        return
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith("gpuready: plan: gpuready:teams[0].borrow = 13: team research can borrow at most 12 "
                          "GPUs"), err


def test_a_team_with_its_own_namespace_gets_its_local_queue_and_profile_there():
    import json

    from gpuready.plan.render import render
    from gpuready.project import find_project, load_stack_config
    from tests.conftest import ROOT

    project = find_project(ROOT)
    config = load_stack_config(ROOT / "stacks" / "Pulumi.aks.yaml", project.name)
    config[f"{project.name}:teams"] = json.dumps(
        [{"name": "research", "gpus": 1, "namespace": "ml-research"}, {"name": "inference", "gpus": 1}])
    rendering = render(project.main, project.name, "aks", config)
    local = {o["metadata"]["name"]: o["metadata"]["namespace"] for o in _kueue(rendering) if o["kind"] == "LocalQueue"}
    assert local == {"research": "ml-research", "inference": "inference",
                     facts.OPERATORS_QUEUE: facts.OPERATORS_NAMESPACE}
    (research, _) = rendering.outputs["teams"]
    assert research["metaflowProfile"]["METAFLOW_KUBERNETES_NAMESPACE"] == "ml-research"
    assert rendering.outputs["metaflowProfile"] == research["metaflowProfile"]


@pytest.mark.parametrize("variant", STACKS)
def test_the_queues_admit_every_gpu_and_each_team_its_promise(variant):
    """By Kueue's arithmetic on the rendered ClusterQueues and Cohort as the plan reads them: the queues together
    admit every GPU the stack reaches (its ``maxGpus`` output, from the component's capacity), each team reaches its
    guarantee plus its whole borrow, and the ``teams`` output says the same."""
    from gpuready.resources.queues import kueue_admission
    from gpuready.resources.scaling import from_rendering

    rendering = rendered(variant)
    found, flavors = kueue_admission(from_rendering(rendering.resources))
    assert sum(f.admissible for f in flavors) == rendering.outputs["maxGpus"]
    assert {f.unadmittable for f in flavors} == {0}
    for team in rendering.outputs["teams"]:
        assert found.guaranteed(team["name"]) == team["gpus"]
        if team["borrow"] is not None:
            assert found.most(team["name"]) == team["gpus"] + team["borrow"]
        assert team["mostGpus"] == found.most(team["name"])
        assert team["mostGpusPerJob"] == found.most_in_one(team["name"])
