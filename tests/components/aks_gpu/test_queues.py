"""AksGpuCluster with teams: one flavor for the GPU agent pool (tolerating its Spot taint), Kueue on the system
pool."""

from __future__ import annotations

import pytest

from gpuready_components.errors import ConfigError
from gpuready_components.k8s_gpu import facts
from gpuready_components.k8s_gpu.scheduling import tolerates
from gpuready_components.teams import TeamArgs

from .helpers import POOL, RELEASE, build

KUEUE = f"kubernetes:{facts.KUEUE_API}:"


def test_the_agent_pool_has_a_flavor_its_nodes_carry_and_whose_taints_it_tolerates(render):
    rendering, aks = build(render, {"spot": True}, teams=(TeamArgs("research", 2),))
    (flavor,) = rendering.of_type(KUEUE + "ResourceFlavor")
    (pool,) = rendering.of_type(POOL)
    carried = {**pool.inputs["nodeLabels"], "kubernetes.azure.com/accelerator": "nvidia"}
    assert flavor.inputs["spec"]["nodeLabels"].items() <= carried.items()
    for text in pool.inputs["nodeTaints"]:
        (key, value), effect = text.split(":")[0].split("="), text.split(":")[1]
        if not key.startswith("startup-taint"):
            assert tolerates(flavor.inputs["spec"]["tolerations"], facts.Taint(key, value, effect))
    spot = facts.Taint("kubernetes.azure.com/scalesetpriority", "spot", "NoSchedule")  # AKS adds it on Spot pools
    assert tolerates(flavor.inputs["spec"]["tolerations"], spot)
    (release,) = [r for r in rendering.of_type(RELEASE) if r.name == "ml-kueue"]
    assert release.inputs["values"]["controllerManager"]["nodeSelector"] == {"kubernetes.azure.com/mode": "system"}
    assert aks.outputs["teams"][0]["namespace"] == "research"


def test_quotas_above_the_pool_fail_unless_overcommit(render):
    teams = (TeamArgs("a", 3), TeamArgs("b", 3))  # the pool reaches 3 A100s
    with pytest.raises(ConfigError) as raised:
        build(render, teams=teams)
    assert raised.value.field == "teams"
    build(render, teams=teams, overcommit_quotas=True)
