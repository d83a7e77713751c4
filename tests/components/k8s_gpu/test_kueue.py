"""Kueue's objects and chart values, checked against Kueue 0.19.2 itself: each object against its CRD's schema
(strict), the values against the chart's values.yaml and a real Helm rendering, the controller's configuration as the
rendered ConfigMap hands it over, and the rendered controller's placement with the scheduler's rules."""

from __future__ import annotations

import copy

import jsonschema
import pytest
import yaml

from gpuready_components import catalog
from gpuready_components.k8s_gpu import facts, kueue
from gpuready_components.k8s_gpu.scheduling import schedulable
from gpuready_components.errors import ConfigError
from gpuready_components.teams import TeamArgs, check as team_check

from . import kueue_schemas

GPU = facts.Taint("nvidia.com/gpu", "true", "NoSchedule")


def _rows(*names: str) -> list[catalog.GpuInstanceType]:
    return [catalog.declared("aws", ()).find("aws", n) for n in names]


FLAVORS = (
    kueue.flavor("gpu", 4, {"nvidia.com/gpu.present": "true", facts.POOL_LABEL: "gpu"}, [GPU],
                 _rows("g6.xlarge", "g6.2xlarge")),
    kueue.flavor("gpu-4x", 16, {"nvidia.com/gpu.present": "true", facts.POOL_LABEL: "gpu-4x"}, [GPU],
                 _rows("g6.12xlarge")),
)
TEAMS = (TeamArgs("research", 12, borrow=8), TeamArgs("inference", 4, lend=0, weight=2, pools=("gpu",)))


def test_every_object_validates_against_its_crd():
    objects = kueue.objects(TEAMS, FLAVORS)
    kinds = [o["kind"] for o in objects]
    assert set(kueue_schemas.KINDS) <= set(kinds) and kinds.count("ClusterQueue") == 3  # the teams', the operators'
    for obj in objects:
        if obj["kind"] != "Namespace":
            kueue_schemas.validate(obj)
            assert kueue_schemas.cel_violations(obj) == [], obj["metadata"]["name"]


@pytest.mark.parametrize("change, says", [
    (lambda spec: spec.pop("cohortName"), "ClusterQueue.spec: borrowingLimit must be nil when cohort is empty"),
    (lambda spec: spec["resourceGroups"][0]["flavors"][0]["resources"].pop(),
     "ClusterQueue.spec.resourceGroups[0]: flavors must have the same number of resources as the coveredResources"),
    (lambda spec: spec["preemption"].update(reclaimWithinCohort="Never",
                                            borrowWithinCohort={"policy": "LowerPriority"}),
     "ClusterQueue.spec.preemption: reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never"),
])
def test_the_cel_check_refuses_what_the_api_server_would(change, says):
    """Each ClusterQueue CEL rule fails when broken (research borrows, so it has borrowing limits), after defaults."""
    queue = copy.deepcopy(kueue.cluster_queue(TEAMS[0], FLAVORS))
    assert kueue_schemas.cel_violations(queue) == []
    change(queue["spec"])
    assert kueue_schemas.cel_violations(queue) == [says]


@pytest.mark.parametrize("kind, path, key", [
    ("ResourceFlavor", ("spec",), "nodeLabel"),
    ("ClusterQueue", ("spec", "resourceGroups", 0, "flavors", 0, "resources", 0), "borrowLimit"),
    ("ClusterQueue", ("spec", "preemption"), "borrowWithinCohorts"),
    ("LocalQueue", ("spec",), "clusterQueueName"),
    ("WorkloadPriorityClass", (), "priority"),
])
def test_an_unknown_field_fails(kind, path, key):
    obj = copy.deepcopy(next(o for o in kueue.objects(TEAMS, FLAVORS) if o["kind"] == kind))
    node = obj
    for part in path:
        node = node[part]
    node[key] = 1
    with pytest.raises(jsonschema.ValidationError, match=key):
        kueue_schemas.validate(obj)


def test_quotas_split_by_pool_size_and_add_up():
    assert kueue.split(12, FLAVORS) == [2, 10]  # 12 x 4/20 = 2.4, 12 x 16/20 = 9.6: the larger remainder
    assert kueue.split(8, FLAVORS) == [2, 6]
    assert kueue.split(None, FLAVORS) == [None, None]
    for total in range(21):
        shares = kueue.split(total, FLAVORS)
        assert sum(shares) == total and all(s <= f.gpus for s, f in zip(shares, FLAVORS))


def test_a_team_gets_only_its_pools_and_its_limits():
    research, inference = (kueue.cluster_queue(t, FLAVORS) for t in TEAMS)
    flavors = inference["spec"]["resourceGroups"][0]["flavors"]
    assert [f["name"] for f in flavors] == ["gpu"]
    gpu = flavors[0]["resources"][0]
    assert gpu == {"name": "nvidia.com/gpu", "nominalQuota": 4, "lendingLimit": 0}
    assert inference["spec"]["fairSharing"] == {"weight": 2}
    limits = [f["resources"][0].get("borrowingLimit") for f in research["spec"]["resourceGroups"][0]["flavors"]]
    assert limits == [2, 6] and "lendingLimit" not in research["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    assert research["spec"]["cohortName"] == facts.COHORT
    assert research["spec"]["preemption"] == {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}


def test_cpu_and_memory_never_bind_before_gpus():
    """A pod may ask for all of a node's cpu and memory per GPU it takes: the quota of every flavor holds as many
    such pods as GPUs, on the most generous type of the pool (from the catalog, not from the flavor)."""
    for team in TEAMS:
        for entry in kueue.cluster_queue(team, FLAVORS)["spec"]["resourceGroups"][0]["flavors"]:
            quota = {r["name"]: r["nominalQuota"] for r in entry["resources"]}
            pool = next(f for f in FLAVORS if f.name == entry["name"])
            types = _rows("g6.xlarge", "g6.2xlarge") if pool.pool == "gpu" else _rows("g6.12xlarge")
            gpus = quota["nvidia.com/gpu"]
            for t in types:
                assert quota["cpu"] >= gpus * t.vcpus / t.gpus, (team.name, entry["name"], t.name)
                assert int(quota["memory"].removesuffix("Gi")) >= gpus * t.memory_gib / t.gpus


def test_each_flavor_lands_a_team_pod_on_its_pool_and_not_the_other():
    for mine in FLAVORS:
        spec = kueue.resource_flavor(mine)["spec"]
        # Kueue's flavor injection: nodeLabels into the pod's nodeSelector, tolerations appended
        pod = {"nodeSelector": {**spec["nodeLabels"]}, "tolerations": spec["tolerations"]}
        for pool in FLAVORS:
            assert schedulable(pod, dict(pool.node_labels), pool.taints) == (pool is mine), (mine.name, pool.name)


def test_the_chart_keys_we_set_exist_and_it_renders():
    values = kueue.chart_values({"eks.amazonaws.com/nodegroup": "eks-system"})
    assert list(kueue_schemas.unknown_keys(values)) == []
    assert list(kueue_schemas.unknown_keys({"controllerManager": {"nodeSelectors": {"a": "b"}}})) == [
        "controllerManager.nodeSelectors.a"]
    objects = kueue_schemas.render(values)
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "registry.k8s.io/kueue/kueue:v0.19.2"


@pytest.mark.parametrize("system, gpu_node", [
    ({"eks.amazonaws.com/nodegroup": "eks-system-1"}, ({"nvidia.com/gpu.present": "true"}, [GPU])),
    ({"cloud.google.com/gke-nodepool": "gke-system"},
     ({"cloud.google.com/gke-accelerator": "nvidia-l4"}, [facts.Taint("nvidia.com/gpu", "present", "NoSchedule")])),
    ({"kubernetes.azure.com/mode": "system"},
     ({"kubernetes.azure.com/accelerator": "nvidia", "kubernetes.azure.com/mode": "user"},
      [facts.Taint("sku", "gpu", "NoSchedule")])),
    ({}, ({"nvidia.com/gpu.present": "true"}, [GPU])),
])
def test_the_controller_runs_on_system_nodes_never_on_gpu_nodes(system, gpu_node):
    objects = kueue_schemas.render(kueue.chart_values(system))
    pods = [o["spec"]["template"]["spec"] for o in objects if o["kind"] in ("Deployment", "DaemonSet", "StatefulSet")]
    assert pods
    critical = facts.Taint("CriticalAddonsOnly", "true", "NoSchedule")  # EKS Auto Mode's system pool
    for pod in pods:
        assert schedulable(pod, system, [])
        assert schedulable(pod, system, [critical])
        assert not schedulable(pod, *gpu_node)


def test_the_controller_config_switches_on_what_the_queues_need():
    config = kueue_schemas.manager_config(kueue_schemas.render(kueue.chart_values({})))
    assert config["apiVersion"] == facts.KUEUE_CONFIG_API
    assert {"batch/job", "jobset.x-k8s.io/jobset"} <= set(config["integrations"]["frameworks"])
    wait = config["waitForPodsReady"]
    assert wait["blockAdmission"] is True and wait["timeout"] and wait["requeuingStrategy"]["timestamp"] == "Eviction"
    assert config["fairSharing"]["preemptionStrategies"]
    assert config["manageJobsWithoutQueueName"] is True
    selector = config["managedJobsNamespaceSelector"]
    for namespace in (o for o in kueue.objects(TEAMS, FLAVORS) if o["kind"] == "Namespace"):
        assert kueue_schemas.label_selector_matches(selector, namespace["metadata"]["labels"])
    for other in ({"kubernetes.io/metadata.name": "kube-system"}, {"kubernetes.io/metadata.name": "default"}):
        assert not kueue_schemas.label_selector_matches(selector, other)


def test_the_chart_own_config_is_kept_whole():
    """A values document replaces the chart's Configuration: what we do not change must be the chart's."""
    chart = yaml.safe_load(kueue_schemas.chart_defaults()["managerConfig"]["controllerManagerConfigYaml"])
    ours = kueue.config()
    for key, value in chart.items():
        if key != "integrations":
            assert ours[key] == value, key


def test_each_team_cluster_queue_admits_its_namespace_only():
    objects = kueue.objects(TEAMS, FLAVORS)
    namespaces = {o["metadata"]["name"]: o["metadata"]["labels"] for o in objects if o["kind"] == "Namespace"}
    queues = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ClusterQueue"}
    for local in (o for o in objects if o["kind"] == "LocalQueue"):
        cq = queues[local["spec"]["clusterQueue"]]
        for name, labels in namespaces.items():
            admitted = kueue_schemas.label_selector_matches(cq["spec"]["namespaceSelector"], labels)
            assert admitted == (name == local["metadata"]["namespace"])


def test_team_outputs_name_the_queue_in_the_metaflow_profile():
    (research, inference) = kueue.team_outputs(TEAMS, FLAVORS, kueue.Profile("gpu-jobs", {"a": "b"}, ()))
    assert inference["flavors"] == ["gpu"] and research["flavors"] == ["gpu", "gpu-4x"]
    profile = inference["metaflowProfile"]
    assert profile["METAFLOW_KUBERNETES_NAMESPACE"] == "inference"
    assert f"{facts.QUEUE_LABEL}=inference" in profile["METAFLOW_KUBERNETES_LABELS"].split(",")
    assert {k: research[k] for k in ("localQueue", "clusterQueue", "cohort", "gpus", "borrow", "lend", "weight")} == {
        "localQueue": "research", "clusterQueue": "research", "cohort": "gpuready", "gpus": 12, "borrow": 8,
        "lend": None, "weight": 1}


def test_a_pool_with_a_provisioning_check_gets_its_config_check_and_only_its_flavor_checked():
    provisioning = kueue.Provisioning("queued-provisioning.gke.io", {"maxRunDurationSeconds": "3600"})
    flavors = (kueue.flavor("gpu", 4, {facts.POOL_LABEL: "gpu"}, [GPU], _rows("g6.xlarge"), provisioning), FLAVORS[1])
    objects = kueue.objects(TEAMS, flavors)
    for obj in objects:
        if obj["kind"] != "Namespace":
            kueue_schemas.validate(obj)
            assert kueue_schemas.cel_violations(obj) == [], obj["metadata"]["name"]
    assert [o["kind"] for o in objects].count("AdmissionCheck") == 1
    (check,) = [o for o in objects if o["kind"] == "AdmissionCheck"]
    (config,) = [o for o in objects if o["kind"] in kueue_schemas.PROVISIONING_KINDS and o is not check]
    assert check["spec"]["parameters"]["name"] == config["metadata"]["name"]
    assert check["spec"]["controllerName"] == facts.PROVISIONING_CONTROLLER
    queues = {o["metadata"]["name"]: o["spec"] for o in objects if o["kind"] == "ClusterQueue"}
    for spec in queues.values():  # research uses both pools, inference only gpu: each checks gpu only
        assert spec["admissionChecksStrategy"] == {"admissionChecks": [
            {"name": check["metadata"]["name"], "onFlavors": ["gpu"]}]}
    assert "admissionChecksStrategy" not in kueue.cluster_queue(TEAMS[0], FLAVORS)["spec"]
    bad = copy.deepcopy(config)
    bad["spec"]["provisioningClass"] = bad["spec"].pop("provisioningClassName")
    with pytest.raises(jsonschema.ValidationError):
        kueue_schemas.validate(bad)


def _operators():
    objects = kueue.objects(TEAMS, FLAVORS)
    (queue,) = [o for o in objects if o["kind"] == "ClusterQueue"
                and o["metadata"]["labels"].get(facts.ROLE_LABEL) == facts.OPERATORS_ROLE]
    (local,) = [o for o in objects if o["kind"] == "LocalQueue" and o["metadata"]["name"] == facts.OPERATORS_QUEUE]
    (home,) = [o for o in objects if o["kind"] == "Namespace" and o["metadata"]["name"] == facts.OPERATORS_NAMESPACE]
    return objects, queue, local, home


def test_the_operators_queue_borrows_every_pool_and_guarantees_nothing():
    """Nominal 0 in every pool's flavor, for every resource a check's pod asks for, and no borrowing limit: all it
    runs is borrowed from what the teams and the Cohort leave idle, and no team's guarantee shrinks."""
    _, queue, _, _ = _operators()
    spec = queue["spec"]
    assert spec["cohortName"] == facts.COHORT and queue["metadata"]["name"] == facts.OPERATORS_QUEUE
    (group,) = spec["resourceGroups"]
    assert [f["name"] for f in group["flavors"]] == [f.name for f in FLAVORS]
    for entry in group["flavors"]:
        assert {r["name"]: r for r in entry["resources"]} == {
            "nvidia.com/gpu": {"name": "nvidia.com/gpu", "nominalQuota": 0},
            "cpu": {"name": "cpu", "nominalQuota": 0}, "memory": {"name": "memory", "nominalQuota": "0Gi"}}
    assert spec["fairSharing"] == {"weight": facts.OPERATORS_WEIGHT}
    # Fair sharing: it takes back only what teams borrowed for lower-priority jobs; borrowWithinCohort is classical.
    assert spec["preemption"] == {"reclaimWithinCohort": "LowerPriority", "withinClusterQueue": "Never"}


def test_the_operators_jobs_outrank_every_team_job():
    assert facts.PRIORITY_CLASSES[facts.OPERATORS_PRIORITY_CLASS] == max(facts.PRIORITY_CLASSES.values())
    assert facts.PRIORITY_CLASSES[facts.OPERATORS_PRIORITY_CLASS] > facts.PRIORITY_CLASSES[
        facts.DEFAULT_PRIORITY_CLASS]
    assert kueue.operators_output()["priorityClass"] in {o["metadata"]["name"] for o in kueue.priority_classes()}


def test_only_the_operators_namespace_feeds_the_operators_queue_and_kueue_manages_it():
    objects, queue, local, home = _operators()
    labels = home["metadata"]["labels"]
    assert local["metadata"]["namespace"] == facts.OPERATORS_NAMESPACE
    assert local["spec"]["clusterQueue"] == queue["metadata"]["name"]
    config = kueue_schemas.manager_config(kueue_schemas.render(kueue.chart_values({})))
    assert kueue_schemas.label_selector_matches(config["managedJobsNamespaceSelector"], labels)
    for cq in (o for o in objects if o["kind"] == "ClusterQueue"):
        feeds = kueue_schemas.label_selector_matches(cq["spec"]["namespaceSelector"], labels)
        assert feeds == (cq is queue), cq["metadata"]["name"]
    for team in (o for o in objects if o["kind"] == "Namespace" and o is not home):
        assert not kueue_schemas.label_selector_matches(queue["spec"]["namespaceSelector"], team["metadata"]["labels"])
    assert kueue.operators_output() == {
        "namespace": facts.OPERATORS_NAMESPACE, "localQueue": local["metadata"]["name"],
        "clusterQueue": queue["metadata"]["name"], "cohort": facts.COHORT, "priorityClass": "gpuready-high"}


def test_the_operators_queue_waits_on_the_pools_admission_checks():
    prov = kueue.Provisioning("queued-provisioning.gke.io", {"maxRunDurationSeconds": "3600"})
    flavors = (FLAVORS[0], kueue.flavor("dws", 8, {facts.POOL_LABEL: "dws"}, [GPU], _rows("g6.12xlarge"), prov))
    queue = kueue.operators_cluster_queue(flavors)
    assert queue["spec"]["admissionChecksStrategy"] == {"admissionChecks": [
        {"name": flavors[1].check, "onFlavors": [flavors[1].name]}]}
    kueue_schemas.validate(queue)


def _gpu_limits(obj):
    """A ClusterQueue's or Cohort's nvidia.com/gpu limits by flavor."""
    return {f["name"]: {k: v for k, v in f["resources"][0].items() if k != "name"}
            for f in obj["spec"]["resourceGroups"][0]["flavors"]}


def _made(teams, flavors=FLAVORS):
    made = kueue.objects(teams, flavors)
    cohort = next(o for o in made if o["kind"] == "Cohort")
    queues = {o["metadata"]["name"]: o for o in made if o["kind"] == "ClusterQueue"}
    return made, cohort, queues


EKS_TEAMS = (TeamArgs("research", 4, borrow=8), TeamArgs("inference", 4, lend=0, weight=2))


@pytest.mark.parametrize("teams", [(TeamArgs("research", 12, borrow=4), TEAMS[1]), EKS_TEAMS, (TeamArgs("solo", 0),),
                                   (TeamArgs("all", 20, borrow=0),)])
def test_the_teams_quotas_and_the_cohorts_add_up_to_every_pool(teams):
    made, cohort, queues = _made(teams)
    kueue_schemas.validate(cohort)
    for f in FLAVORS:
        given = sum(_gpu_limits(q).get(f.name, {}).get("nominalQuota", 0) for q in queues.values())
        assert given + _gpu_limits(cohort)[f.name]["nominalQuota"] == f.gpus, (teams, f.pool)
        cpu = next(r for r in cohort["spec"]["resourceGroups"][0]["flavors"] if r["name"] == f.name)["resources"][1]
        assert cpu == {"name": "cpu", "nominalQuota": _gpu_limits(cohort)[f.name]["nominalQuota"] * f.vcpus_per_gpu}
    assert kueue.check(teams, FLAVORS).unadmittable == {f.name: 0 for f in FLAVORS}


def test_the_eks_teams_get_what_the_docs_say():
    """docs/queues/kubernetes.md works these numbers out."""
    _, cohort, queues = _made(EKS_TEAMS)
    assert _gpu_limits(cohort) == {"gpu": {"nominalQuota": 2}, "gpu-4x": {"nominalQuota": 10}}
    assert _gpu_limits(queues["research"]) == {"gpu": {"nominalQuota": 1, "borrowingLimit": 1},
                                               "gpu-4x": {"nominalQuota": 3, "borrowingLimit": 7}}
    assert _gpu_limits(queues["inference"]) == {"gpu": {"nominalQuota": 1, "lendingLimit": 0},
                                                "gpu-4x": {"nominalQuota": 3, "lendingLimit": 0}}
    found = kueue.check(EKS_TEAMS, FLAVORS)
    assert (found.most("research"), found.most("inference"), found.most_in_one("research")) == (12, 20, 10)


def test_a_team_held_to_one_pool_gets_its_guarantee_there_first():
    _, cohort, queues = _made(TEAMS)
    assert _gpu_limits(queues["inference"]) == {"gpu": {"nominalQuota": 4, "lendingLimit": 0}}
    assert [v["nominalQuota"] for v in _gpu_limits(queues["research"]).values()] == [0, 12]
    assert _gpu_limits(cohort) == {"gpu": {"nominalQuota": 0}, "gpu-4x": {"nominalQuota": 4}}


def test_borrow_zero_is_a_borrowing_limit_of_zero_everywhere():
    teams = (TeamArgs("research", 4, borrow=0), TeamArgs("inference", 4))
    _, _, queues = _made(teams)
    assert [v["borrowingLimit"] for v in _gpu_limits(queues["research"]).values()] == [0, 0]
    found = kueue.check(teams, FLAVORS)
    assert found.most("research") == found.guaranteed("research") == 4
    assert found.most("inference") == 20


@pytest.mark.parametrize("lend", [0, 1, 3, 4])
def test_lend_is_spread_within_the_quota_of_each_pool_and_adds_up(lend):
    teams = (TeamArgs("research", 4, lend=lend), TeamArgs("inference", 4))
    _, _, queues = _made(teams)
    limits = _gpu_limits(queues["research"]).values()
    assert sum(v["lendingLimit"] for v in limits) == lend
    assert all(v["lendingLimit"] <= v["nominalQuota"] for v in limits)
    assert kueue.check(teams, FLAVORS).most("inference") == 20 - (4 - lend)


def test_a_lend_above_the_quota_is_refused_naming_it():
    with pytest.raises(ConfigError, match=r"^teams\[0\]\.lend = 5: more than the team's own 4 GPUs"):
        team_check((TeamArgs("research", 4, lend=5),), [f.as_pool for f in FLAVORS])


def test_borrow_at_the_reachable_most_is_taken_and_one_more_refused():
    """research may borrow the Cohort's 12 GPUs; inference lends none of its 4."""
    at_most = (TeamArgs("research", 4, borrow=12), TeamArgs("inference", 4, lend=0))
    assert kueue.check(at_most, FLAVORS).most("research") == 16
    over = (TeamArgs("research", 4, borrow=13), TeamArgs("inference", 4, lend=0))
    with pytest.raises(ConfigError) as raised:
        kueue.check(over, FLAVORS)
    assert str(raised.value).startswith("teams[0].borrow = 13: team research can borrow at most 12 GPUs while the "
                                        "others idle")
    assert "\n" not in str(raised.value)


def test_a_guarantee_beyond_what_its_pools_have_left_is_refused_unless_overcommitted():
    teams = (TeamArgs("inference", 4, pools=("gpu",)), TeamArgs("batch", 1, pools=("gpu",)), TeamArgs("research", 4))
    with pytest.raises(ConfigError, match=r"^teams\[1\]\.gpus = 1: its pools \(gpu\) have 0 GPUs left"):
        kueue.check(teams, FLAVORS)
    assert kueue.check(teams, FLAVORS, overcommit=True).guaranteed("batch") == 1


def test_a_pool_no_queue_can_hold_a_whole_node_of_is_refused():
    """Every team held to the 1-GPU pool: no queue lists the 4-GPU pool's flavor."""
    teams = (TeamArgs("research", 1, pools=("gpu",)),)
    with pytest.raises(ConfigError, match="no queue can hold one whole node of GPU pool gpu-4x \\(4 GPUs\\)"):
        kueue.check(teams, FLAVORS)
