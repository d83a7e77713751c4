"""GkeGpuCluster with teams: one flavor for the GPU node pool, selecting labels its nodes carry; Kueue on the
system pool."""

from __future__ import annotations

import pytest

from gpuready_components.errors import ConfigError
from gpuready_components.k8s_gpu import facts
from gpuready_components.teams import TeamArgs

from tests.components.k8s_gpu import kueue_schemas

from .helpers import build

KUEUE = f"kubernetes:{facts.KUEUE_API}:"


def test_the_gpu_pool_has_a_flavor_its_nodes_carry(render):
    rendering, gke = build(render, teams=(TeamArgs("research", 2),))
    (flavor,) = rendering.of_type(KUEUE + "ResourceFlavor")
    (pool,) = [r for r in rendering.resources if r.type == "gcp:container/nodePool:NodePool" and r.name == "ml-gpu"]
    carried = {**pool.inputs["nodeConfig"]["labels"],
               "cloud.google.com/gke-accelerator": pool.inputs["nodeConfig"]["guestAccelerators"][0]["type"]}
    assert flavor.inputs["spec"]["nodeLabels"].items() <= carried.items()
    assert flavor.inputs["spec"]["nodeLabels"][facts.POOL_LABEL] == "gpu"
    (release,) = [r for r in rendering.resources if r.name == "ml-kueue"]
    assert list(release.inputs["values"]["controllerManager"]["nodeSelector"]) == ["cloud.google.com/gke-nodepool"]
    assert gke.outputs["teams"][0]["flavors"] == ["gpu"]


def test_a_quota_above_the_pool_fails_naming_it(render):
    with pytest.raises(ConfigError) as raised:
        build(render, teams=(TeamArgs("a", 10_000),))
    assert raised.value.field == "teams[0].gpus"


def _topologies(rendering):
    return [r.inputs for r in rendering.of_type(KUEUE + "Topology")]


def test_a_fixed_a3_ultra_pool_gangs_are_placed_by_gkes_block_subblock_and_host(render):
    rendering, gke = build(render, {"machine_type": "a3-ultragpu-8g", "min_nodes": 4, "max_nodes": 4},
                           teams=(TeamArgs("research", 32),))
    (topology,) = _topologies(rendering)
    assert [level["nodeLabel"] for level in topology["spec"]["levels"]] == [
        "cloud.google.com/gce-topology-block", "cloud.google.com/gce-topology-subblock",
        "cloud.google.com/gce-topology-host", "kubernetes.io/hostname"]
    (flavor,) = rendering.of_type(KUEUE + "ResourceFlavor")
    assert flavor.inputs["spec"]["topologyName"] == topology["metadata"]["name"] == "gpu"
    for obj in (topology, flavor.inputs):
        kueue_schemas.validate(obj)
        assert kueue_schemas.cel_violations(obj) == []
    assert "gpuready.io/block-nodes" not in topology["metadata"]["annotations"]  # Google states no A3 Ultra size
    assert gke.outputs["operatorsQueue"]["gangLevels"] == {"gpu": ["cloud.google.com/gce-topology-subblock",
                                                                   "cloud.google.com/gce-topology-block"]}


def test_a_queued_a4_pool_scaling_from_zero_gets_its_topology_through_the_provisioning_check(render):
    from gpuready_components.gke_gpu.reservation import FlexStartArgs

    rendering, _ = build(render, {"machine_type": "a4-highgpu-8g", "max_nodes": 4,
                                  "flex_start": FlexStartArgs(queued=True)}, teams=(TeamArgs("research", 32),))
    assert len(_topologies(rendering)) == 1
    (check,) = rendering.of_type(KUEUE + "AdmissionCheck")  # Kueue assigns the topology once the nodes came
    assert check.inputs["metadata"]["name"] == "gpu-provisioning"


@pytest.mark.parametrize("node_pool", [
    {"machine_type": "a3-ultragpu-8g", "min_nodes": 0, "max_nodes": 4},  # from zero, no ProvisioningRequest
    {"machine_type": "a3-highgpu-8g", "min_nodes": 4, "max_nodes": 4},  # GKE puts no topology labels on A3 High
    {"machine_type": "g2-standard-8", "min_nodes": 3, "max_nodes": 3},
])
def test_no_topology_where_it_would_not_place_a_gang(render, node_pool):
    rendering, gke = build(render, node_pool, teams=(TeamArgs("research", 1),))
    assert not _topologies(rendering)
    (flavor,) = rendering.of_type(KUEUE + "ResourceFlavor")
    assert "topologyName" not in flavor.inputs["spec"] and "gangLevels" not in gke.outputs["teams"][0]
