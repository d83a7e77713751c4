"""GkeGpuCluster with teams: one flavor for the GPU node pool, selecting labels its nodes carry; Kueue on the
system pool."""

from __future__ import annotations

import pytest

from gpuready_components.errors import ConfigError
from gpuready_components.k8s_gpu import facts
from gpuready_components.teams import TeamArgs

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
