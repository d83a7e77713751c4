"""The NVL72 reference stacks (eks-nvl72, gke-nvl72, aks-nvl72) as a team training across a rack deploys them:
teams sharing the rack, the rack kept at its size, every Kueue object (Topology and ResourceFlavor included) valid
against Kueue 0.19.2's CRDs and their CEL rules, and ``gpuready plan`` showing the Topology levels (EKS, GKE) or why
there is none (AKS), the DRA driver, the ComputeDomain per job, queues that admit every GPU of the rack, and none of
the advisories a rack scaled from zero trips."""

from __future__ import annotations

import functools
import json

import pytest

from gpuready.cli import main
from gpuready_components.aks_gpu import facts as aks_facts
from gpuready_components.eks_gpu import facts as eks_facts
from gpuready_components.gke_gpu import facts as gke_facts
from gpuready_components.k8s_gpu import facts
from gpuready_components.k8s_gpu.topology import HOSTNAME
from tests.components.k8s_gpu import kueue_schemas
from tests.gpuready.policy.helpers import render_stack

KUEUE = f"kubernetes:{facts.KUEUE_API}:"
CHART = "chart: oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu 0.4.1"
LEVELS = {"eks-nvl72": eks_facts.placement(["p6e-gb200.36xlarge"]).levels,
          "gke-nvl72": gke_facts.TOPOLOGY_LEVELS, "aks-nvl72": None}
"""Each stack's Topology levels above the hostname, from its platform's facts (``None``: no Topology)."""
ASKED = {"eks-nvl72": "topology.k8s.aws/network-node-layer-3",
         "gke-nvl72": "cloud.google.com/gce-topology-subblock"}
SCALE_FROM_ZERO = ("gpu-reservation-idle", "gpu-dra-scale-from-zero", "gpu-multinode-topology")
"""The advisories a rack that scales from zero trips; a rack kept at its size trips none."""


@functools.lru_cache(maxsize=None)
def _kueue(stack: str) -> tuple[dict, ...]:
    return tuple(r.inputs for r in render_stack(stack).resources if r.type.startswith(KUEUE))


@functools.lru_cache(maxsize=None)
def _plan(stack: str) -> tuple[str, dict]:
    """``gpuready plan`` of the shipped stack, as text and as JSON."""
    import contextlib
    import io

    shown = []
    for args in ((), ("--json",)):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(["plan", "--stack", stack, *args]) == 0
        shown.append(out.getvalue())
    return shown[0], json.loads(shown[1])


@pytest.mark.parametrize("stack", sorted(LEVELS))
def test_every_kueue_object_passes_the_crd_and_its_cel_rules_and_the_topology_is_the_clouds(stack):
    objects = _kueue(stack)
    for obj in objects:
        kueue_schemas.validate(obj)
        assert kueue_schemas.cel_violations(obj) == [], (obj["kind"], obj["metadata"]["name"])
    topologies = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Topology"}
    gpu_flavors = [o for o in objects if o["kind"] == "ResourceFlavor" and o["metadata"]["name"] == "gpu"]
    assert len(gpu_flavors) == 1
    if LEVELS[stack] is None:
        assert topologies == {} and "topologyName" not in gpu_flavors[0]["spec"]
        return
    named = topologies[gpu_flavors[0]["spec"]["topologyName"]]
    assert [level["nodeLabel"] for level in named["spec"]["levels"]] == [*LEVELS[stack], HOSTNAME]


@pytest.mark.parametrize("stack", sorted(LEVELS))
def test_plan_shows_the_placement_the_dra_driver_the_compute_domain_and_queues_that_admit_the_rack(stack):
    text, plan = _plan(stack)
    assert CHART in text and "ComputeDomains on (IMEX channels for multi-node NVLink)" in text
    assert '"kind": "ComputeDomain"' in text and '"numNodes": 18' in text
    (pool,) = plan["queues"]["pools"]
    assert pool["gpus"] == 72 and pool["unadmittable"] == 0 and plan["queues"]["unadmittable_gpus"] == 0
    assert {t["name"]: t["most"] for t in plan["queues"]["teams"]} == {"training": 72, "eval": 72}
    if LEVELS[stack] is None:
        assert "topology" not in pool and pool["placement"] == aks_facts.NO_TOPOLOGY
        assert f"    placement: {aks_facts.NO_TOPOLOGY}" in text
        return
    assert pool["topology"]["levels"] == [*LEVELS[stack], HOSTNAME]
    assert pool["topology"]["gangLevel"] == ASKED[stack] and pool["topology"]["largestGangNodes"] == 18
    assert f"gangs placed by Topology {pool['topology']['name']}: {' > '.join(pool['topology']['levels'])}" in text


@pytest.mark.parametrize("stack", sorted(LEVELS))
def test_a_rack_kept_at_its_size_trips_no_scale_from_zero_advisory(stack):
    _, plan = _plan(stack)
    tripped = {v["policy"] for v in plan["policy"]["violations"]}
    assert tripped.isdisjoint(SCALE_FROM_ZERO), tripped
