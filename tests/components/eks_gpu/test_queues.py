"""EksGpuCluster with teams: a flavor per GPU node group (or the NodePool) selecting the labels that group's nodes
get, the Kueue release on the system node group, and no Kueue without teams."""

from __future__ import annotations

import pytest

from gpuready_components.eks_gpu import AutoscalerArgs
from gpuready_components.errors import ConfigError
from gpuready_components.k8s_gpu import GpuSoftwareOptions, MigArgs, facts, gpu_hours
from gpuready_components.teams import TeamArgs
from tests.conftest import one

from tests.components.k8s_gpu import kueue_schemas

from .helpers import NODE_GROUP, RELEASE, build

TEAMS = (TeamArgs("research", 8, borrow=4), TeamArgs("inference", 2, pools=("gpu",)))
KUEUE = f"kubernetes:{facts.KUEUE_API}:"


def _flavors(rendering):
    return {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in rendering.of_type(KUEUE + "ResourceFlavor")}


def test_each_node_group_has_a_flavor_its_nodes_carry(render):
    rendering, eks = build(render, teams=TEAMS)
    flavors = _flavors(rendering)
    assert set(flavors) == {"gpu", "gpu-4x"}
    for pool in ("gpu", "gpu-4x"):
        labels = one(rendering, NODE_GROUP, f"ml-{pool}").inputs["labels"]
        assert flavors[pool]["nodeLabels"] == labels and labels[facts.POOL_LABEL] == pool
    (release,) = [r for r in rendering.of_type(RELEASE) if r.name == "ml-kueue"]
    assert list(release.inputs["values"]["controllerManager"]["nodeSelector"]) == ["eks.amazonaws.com/nodegroup"]
    assert [t["name"] for t in eks.outputs["teams"]] == ["research", "inference"]


def test_karpenter_has_one_flavor_for_its_node_pool(render):
    rendering, _ = build(render, teams=(TeamArgs("research", 2),), autoscaler=AutoscalerArgs(mode="karpenter"))
    assert set(_flavors(rendering)) == {"gpuready-gpu"}


def test_without_teams_nothing_of_kueue_and_no_pool_label(render):
    rendering, eks = build(render)
    assert not [r for r in rendering.resources if r.type.startswith(KUEUE)]
    assert "ml-kueue" not in {r.name for r in rendering.of_type(RELEASE)}
    assert facts.POOL_LABEL not in one(rendering, NODE_GROUP, "ml-gpu").inputs["labels"]
    assert "teams" not in eks.outputs


def test_a_team_beyond_its_pool_fails_naming_it(render):
    with pytest.raises(ConfigError) as raised:
        build(render, teams=(TeamArgs("a", 4, pools=("gpu",)),))  # the 1-GPU group reaches 3
    assert raised.value.field == "teams[0].gpus"


RULE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"


def test_with_teams_and_the_prometheus_operator_the_gpu_hours_rules_sit_beside_the_alerts(render):
    software = GpuSoftwareOptions(prometheus_operator=True, prometheus_labels={"release": "monitoring"})
    rendering, _ = build(render, teams=TEAMS, software=software)
    rules = {r.name: r.inputs for r in rendering.of_type(RULE)}
    assert set(rules) == {"ml-gpu-software-gpu-alerts", "ml-gpu-hours"}
    alerts, hours = rules["ml-gpu-software-gpu-alerts"], rules["ml-gpu-hours"]
    assert hours["metadata"] == {**alerts["metadata"], "name": gpu_hours.PROMETHEUS_RULE_NAME}
    (group,) = hours["spec"]["groups"]
    teams = [r.get("labels", {}).get("team") for r in group["rules"]]
    assert teams == ["research"] * 2 + ["inference"] * 2 + [None] * 2
    assert 'exported_namespace="research"' in group["rules"][0]["expr"]
    assert 'job="dcgm-exporter"' in group["rules"][0]["expr"]
    # no teams: the alerts alone; no Prometheus Operator: neither
    alone, _ = build(render, software=software)
    assert [r.name for r in alone.of_type(RULE)] == ["ml-gpu-software-gpu-alerts"]
    off, _ = build(render, teams=TEAMS)
    assert off.of_type(RULE) == []


def test_with_mig_no_gpu_hours_rules(render):
    """DCGM reports no utilisation of a MIG instance: the rules would record nothing."""
    software = GpuSoftwareOptions(install="gpu-operator", prometheus_operator=True, mig=MigArgs())
    rendering, _ = build(render, {"instance_types": ["p4d.24xlarge"]}, teams=(TeamArgs("research", 2),),
                         software=software)
    assert [r.name for r in rendering.of_type(RULE)] == ["ml-gpu-software-gpu-alerts"]


def test_the_operators_queue_is_made_and_exported_with_teams(render):
    rendering, eks = build(render, teams=TEAMS)
    queues = {r.inputs["metadata"]["name"]: r.inputs for r in rendering.of_type(KUEUE + "ClusterQueue")}
    assert set(queues) == {"research", "inference", facts.OPERATORS_QUEUE}
    assert [f["name"] for f in queues[facts.OPERATORS_QUEUE]["spec"]["resourceGroups"][0]["flavors"]] == list(
        _flavors(rendering))  # every pool's
    (local,) = [r.inputs for r in rendering.of_type(KUEUE + "LocalQueue")
                if r.inputs["metadata"]["namespace"] == facts.OPERATORS_NAMESPACE]
    assert eks.outputs["operatorsQueue"] == {
        "namespace": facts.OPERATORS_NAMESPACE, "localQueue": local["metadata"]["name"],
        "clusterQueue": facts.OPERATORS_QUEUE, "cohort": facts.COHORT, "priorityClass": "gpuready-high"}
    assert "operatorsQueue" not in build(render)[1].outputs


@pytest.mark.parametrize("team, field", [
    (TeamArgs(facts.OPERATORS_QUEUE, 2), "teams[0].name"),
    (TeamArgs(facts.OPERATORS_NAMESPACE, 2), "teams[0].name"),
    (TeamArgs("research", 2, namespace=facts.OPERATORS_NAMESPACE), "teams[0].namespace"),
])
def test_a_team_taking_the_operators_names_fails_naming_it(render, team, field):
    with pytest.raises(ConfigError) as raised:
        build(render, teams=(team,))
    assert raised.value.field == field


EFA_FIXED = {"instance_types": ["p5.48xlarge"], "efa": True, "min_size": 4, "max_size": 4}



def _topologies(rendering):
    return {r.inputs["metadata"]["name"]: r.inputs for r in rendering.of_type(KUEUE + "Topology")}


def test_a_fixed_efa_group_gangs_are_placed_by_ekss_network_layers(render):
    rendering, eks = build(render, EFA_FIXED, teams=(TeamArgs("research", 16),))
    (topology,) = _topologies(rendering).values()
    assert [level["nodeLabel"] for level in topology["spec"]["levels"]] == [
        "topology.k8s.aws/network-node-layer-1", "topology.k8s.aws/network-node-layer-2",
        "topology.k8s.aws/network-node-layer-3", "kubernetes.io/hostname"]
    assert _flavors(rendering)["gpu"]["topologyName"] == topology["metadata"]["name"] == "gpu"
    (flavor,) = rendering.of_type(KUEUE + "ResourceFlavor")
    for obj in (topology, flavor.inputs):
        kueue_schemas.validate(obj)
        assert kueue_schemas.cel_violations(obj) == []
    assert "gpuready.io/block-nodes" not in topology["metadata"]["annotations"]  # AWS states no size
    assert eks.outputs["teams"][0]["gangLevels"] == {"gpu": [
        "topology.k8s.aws/network-node-layer-3", "topology.k8s.aws/network-node-layer-2",
        "topology.k8s.aws/network-node-layer-1"]}


def test_a_four_layer_type_adds_layer_4_and_its_gangs_ask_for_it(render):
    rendering, _ = build(render, {**EFA_FIXED, "instance_types": ["p6-b200.48xlarge"]},
                         teams=(TeamArgs("research", 16),))
    (topology,) = _topologies(rendering).values()
    assert topology["spec"]["levels"][-2:] == [{"nodeLabel": "topology.k8s.aws/network-node-layer-4"},
                                               {"nodeLabel": "kubernetes.io/hostname"}]
    assert topology["metadata"]["annotations"]["gpuready.io/gang-level"] == "topology.k8s.aws/network-node-layer-4"


@pytest.mark.parametrize("node_group", [
    {**EFA_FIXED, "min_size": 0},  # scales from zero: Kueue's TAS would see no node and admit nothing
    {**EFA_FIXED, "efa": False},  # no EFA: not a multi-node pool
    {**EFA_FIXED, "instance_types": ["g6.12xlarge"]},  # EFA, but EC2 describes no topology of g6: no labels
    {**EFA_FIXED, "min_size": 1, "max_size": 1},  # one node: no gang
])
def test_no_topology_where_it_would_not_place_a_gang(render, node_group):
    rendering, eks = build(render, node_group, teams=(TeamArgs("research", node_group["max_size"] * 4),))
    assert not _topologies(rendering)
    assert all("topologyName" not in spec for spec in _flavors(rendering).values())
    assert "gangLevels" not in eks.outputs["teams"][0] and "gangLevels" not in eks.outputs["operatorsQueue"]


def _ultraserver(min_size: int) -> dict:
    """One u-p6e-gb200x72 UltraServer (18 p6e-gb200.36xlarge) on its Capacity Block, without EFA (refused there)."""
    from gpuready_components.eks_gpu import CapacityReservationArgs

    block = CapacityReservationArgs(kind="capacity-block", id="cr-0123456789abcdef0",
                                    instance_type="p6e-gb200.36xlarge", count=18)
    return {"instance_types": ["p6e-gb200.36xlarge"], "ami_type": "AL2023_ARM_64_NVIDIA", "capacity_type": "ON_DEMAND",
            "min_size": min_size, "max_size": 18, "reservation": block}


@pytest.mark.parametrize("min_size, placed", [(18, True), (0, False)])
def test_an_ultraserver_group_is_multi_node_without_efa_and_placed_when_kept_at_its_size(render, min_size, placed):
    from gpuready_components.eks_gpu import ClusterArgs

    rendering, eks = build(render, _ultraserver(min_size), teams=(TeamArgs("training", 72),),
                           software=GpuSoftwareOptions(install="dra", compute_domains=True),
                           cluster=ClusterArgs(version="1.34"))
    topologies = _topologies(rendering)
    assert bool(topologies) is placed
    if placed:
        (topology,) = topologies.values()
        assert [level["nodeLabel"] for level in topology["spec"]["levels"]][-2:] == [
            "topology.k8s.aws/network-node-layer-3", "kubernetes.io/hostname"]
        kueue_schemas.validate(topology)
        assert kueue_schemas.cel_violations(topology) == []
        assert _flavors(rendering)["gpu"]["topologyName"] == topology["metadata"]["name"]
