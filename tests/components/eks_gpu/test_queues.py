"""EksGpuCluster with teams: a flavor per GPU node group (or the NodePool) selecting the labels that group's nodes
get, the Kueue release on the system node group, and no Kueue without teams."""

from __future__ import annotations

import pytest

from gpuready_components.eks_gpu import AutoscalerArgs
from gpuready_components.errors import ConfigError
from gpuready_components.k8s_gpu import facts
from gpuready_components.teams import TeamArgs
from tests.conftest import one

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
