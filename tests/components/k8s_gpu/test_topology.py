"""Topology-aware gangs: the Topology and ResourceFlavor Kueue 0.19.2 takes (schema and CEL rules), the levels its CRD
refuses, when a pool's nodes are seen at admission, the arithmetic of a gang in one block, and what a gang asks."""

from __future__ import annotations

import copy

import pytest

from gpuready_components import catalog
from gpuready_components.k8s_gpu import facts, kueue
from gpuready_components.k8s_gpu import topology as tas
from gpuready_components.queue_facts import TOPOLOGY_PREFERRED_ANNOTATION
from gpuready_components.teams import TeamArgs

from . import kueue_schemas

GPU = facts.Taint("nvidia.com/gpu", "true", "NoSchedule")
EKS_LIKE = tas.Placement(("example.com/layer-1", "example.com/layer-2", "example.com/layer-3"),
                         "example.com/layer-3", "https://example.com/doc")
WITH_BLOCK = tas.Placement(("example.com/block", "example.com/subblock", "example.com/host"), "example.com/subblock",
                           "https://example.com/doc", tas.Block(18, "https://example.com/terms"))


def _rows(*names: str) -> list[catalog.GpuInstanceType]:
    return [catalog.declared("aws", ()).find("aws", n) for n in names]


def _flavors(placement=EKS_LIKE):
    return (kueue.flavor("gpu", 4, {"nvidia.com/gpu.present": "true", facts.POOL_LABEL: "gpu"}, [GPU],
                         _rows("g6.xlarge")),
            kueue.flavor("efa", 32, {"nvidia.com/gpu.present": "true", facts.POOL_LABEL: "efa"}, [GPU],
                         _rows("p5.48xlarge"), topology=placement))


TEAMS = (TeamArgs("research", 16, borrow=8),)


@pytest.mark.parametrize("placement", [EKS_LIKE, WITH_BLOCK])
def test_the_topology_and_the_flavor_naming_it_are_what_kueue_takes(placement):
    objects = kueue.objects(TEAMS, _flavors(placement))
    (topology,) = [o for o in objects if o["kind"] == "Topology"]
    flavors = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ResourceFlavor"}
    for obj in (topology, *flavors.values()):
        kueue_schemas.validate(obj)
        assert kueue_schemas.cel_violations(obj) == [], obj["metadata"]["name"]
    assert [level["nodeLabel"] for level in topology["spec"]["levels"]] == [*placement.levels, tas.HOSTNAME]
    assert flavors["efa"]["spec"]["topologyName"] == topology["metadata"]["name"] == "efa"
    assert "topologyName" not in flavors["gpu"]["spec"]  # a pool with no topology keeps its flavor as it was
    kinds = [o["kind"] for o in objects]
    assert kinds.index("Topology") < kinds.index("ResourceFlavor")  # created before the flavor that names it


def test_the_cel_check_refuses_what_kueue_refuses_of_a_topology():
    topology = tas.topology("efa", EKS_LIKE)
    moved = copy.deepcopy(topology)
    moved["spec"]["levels"].insert(0, moved["spec"]["levels"].pop())  # hostname first
    twice = copy.deepcopy(topology)
    twice["spec"]["levels"].insert(1, {"nodeLabel": "example.com/layer-1"})
    assert kueue_schemas.cel_violations(moved) == [
        "Topology.spec.levels: the kubernetes.io/hostname label can only be used at the lowest level of topology"]
    assert kueue_schemas.cel_violations(twice) == ["Topology.spec.levels: must be unique"]


@pytest.mark.parametrize("levels, says", [
    ((tas.HOSTNAME, "example.com/rack"), "can only be a Topology's last level"),
    (("example.com/rack", "example.com/rack"), "appears twice"),
    (tuple(f"example.com/l{n}" for n in range(17)), "1 to 16 levels"),
    ((), "1 to 16 levels"),
    (("not a label",), "not a node label key"),
])
def test_levels_the_crd_refuses_are_refused_before_rendering(levels, says):
    with pytest.raises(ValueError, match=says):
        tas.check_levels(levels)


def test_sixteen_levels_with_the_hostname_last_are_taken():
    levels = (*(f"example.com/l{n}" for n in range(15)), tas.HOSTNAME)
    tas.check_levels(levels)
    obj = tas.topology("t", tas.Placement(levels[:-1], levels[-2], "x"))
    kueue_schemas.validate(obj)
    assert kueue_schemas.cel_violations(obj) == []


@pytest.mark.parametrize("min_nodes, max_nodes, provisioning, seen", [
    (0, 4, False, False),  # scales from zero: Kueue would see no node and never admit
    (2, 4, False, False),  # a gang above 2 nodes would never be admitted either
    (4, 4, False, True),  # every node there
    (0, 0, False, False),
    (0, 4, True, True),  # a ProvisioningRequest check: topology assigned once the nodes came
])
def test_a_pool_gets_a_topology_only_where_kueue_sees_its_nodes(min_nodes, max_nodes, provisioning, seen):
    assert tas.visible(min_nodes, max_nodes, provisioning) is seen


@pytest.mark.parametrize("gang, block, fits", [(17, 18, True), (18, 18, True), (19, 18, False), (1, 1, True),
                                               (2, 1, False), (5, None, None)])
def test_a_gang_fits_one_block_up_to_its_size_and_not_one_node_more(gang, block, fits):
    assert tas.fits(gang, block) is fits


def test_the_largest_gang_is_the_whole_nodes_one_queue_holds_at_most_the_pool():
    assert tas.largest_gang(most_gpus_one_queue=150, node_gpus=8, pool_nodes=40) == 18  # 18 whole nodes (144)
    assert tas.largest_gang(most_gpus_one_queue=800, node_gpus=8, pool_nodes=20) == 20  # the pool is smaller
    assert tas.largest_gang(most_gpus_one_queue=7, node_gpus=8, pool_nodes=4) == 0
    assert tas.largest_gang(most_gpus_one_queue=8, node_gpus=0, pool_nodes=4) == 0


def test_the_plan_says_whether_the_gang_fits_or_that_the_size_is_not_published():
    block = tas.Block(18, "https://example.com/terms")
    assert tas.verdict(18, "example.com/subblock", block) == (
        "largest gang 18 nodes fits one example.com/subblock domain (18 nodes, https://example.com/terms)")
    assert tas.verdict(19, "example.com/subblock", block).startswith(
        "largest gang 19 nodes does not fit one example.com/subblock domain")
    assert tas.verdict(4, "example.com/layer-3", None) == "largest gang 4 nodes: block size not published"


def test_the_block_the_topology_states_is_read_back():
    assert tas.block_of(tas.topology("x", WITH_BLOCK)["metadata"]["annotations"]) == WITH_BLOCK.block
    assert tas.block_of(tas.topology("x", EKS_LIKE)["metadata"]["annotations"]) is None


def test_a_gang_asks_preferably_for_the_finest_level_every_pool_of_its_queue_has():
    four = tas.Placement(("l1", "l2", "l3", "l4"), "l4", "x")
    three = tas.Placement(("l1", "l2", "l3"), "l3", "x")
    assert four.gang_levels == ("l4", "l3", "l2", "l1")
    assert tas.gang_level({"a": four.gang_levels, "b": three.gang_levels}) == "l3"
    assert tas.gang_level({"a": four.gang_levels}) == "l4"
    assert tas.gang_level({"a": ["x"], "b": ["y"]}) is None
    assert tas.gang_level({}) is None
    assert tas.pod_template_annotations("l3") == {TOPOLOGY_PREFERRED_ANNOTATION: "l3"}
    assert tas.pod_template_annotations(None) == {}
    assert WITH_BLOCK.gang_levels == ("example.com/subblock", "example.com/block")


def test_queue_outputs_carry_the_gang_levels_only_of_pools_with_a_topology():
    flavors = _flavors()
    (team,) = kueue.team_outputs(TEAMS, flavors, kueue.Profile("jobs", {}))
    assert team["gangLevels"] == {"efa": list(EKS_LIKE.gang_levels)}
    assert kueue.operators_output(flavors)["gangLevels"] == {"efa": list(EKS_LIKE.gang_levels)}
    plain = _flavors(None)
    (team,) = kueue.team_outputs(TEAMS, plain, kueue.Profile("jobs", {}))
    assert "gangLevels" not in team and "gangLevels" not in kueue.operators_output(plain)
