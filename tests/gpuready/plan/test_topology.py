"""``gpuready plan`` on stacks with a multi-node GPU pool: the levels its gangs are placed by, whether the largest gang
fits one domain where the cloud states its size, and the ``gpu-multinode-topology`` advisory both ways."""

from __future__ import annotations

import json

import pytest
import yaml

from gpuready.cli import main
from tests.conftest import ROOT

ADVISORY = "gpu-multinode-topology"
TEAMS = [{"name": "research", "gpus": 16}, {"name": "inference", "gpus": 16}]


def _eks(min_size: int, teams=TEAMS, **more) -> dict:
    """An EKS stack with an EFA group of p5.48xlarge on a Capacity Block of 4 (a pool kept at its size is one on a
    reservation paid whether used or not: gpu-scale-to-zero allows it)."""
    return {"aws:region": "us-east-1", "gpuready:platform": "eks", "gpuready:instanceTypes": ["p5.48xlarge"],
            "gpuready:reservation": {"kind": "capacity-block", "id": "cr-0123456789abcdef0",
                                     "instanceType": "p5.48xlarge", "count": 4, "availabilityZone": "us-east-1a"},
            "gpuready:efa": True, "gpuready:minSize": min_size, "gpuready:maxSize": 4,
            "gpuready:install": "device-plugin", "gpuready:apiAllowedCidrs": ["10.0.0.0/8"], **({"gpuready:teams": teams} if teams else {}), **more}


def _gke(machine: str, nodes: int, gpus_per_node: int, reserved: bool = False) -> dict:
    """A GKE stack of ``nodes`` ``machine`` nodes kept at that size, on a specific reservation of them."""
    reservation = {"gpuready:reservation": {"affinity": "specific", "name": "my-reservation", "only": True,
                                            "machineType": machine, "zone": "us-central1-a", "count": nodes}}
    return {**(reservation if reserved else {}), "gcp:project": "my-gpu-project", "gcp:region": "us-central1", "gpuready:platform": "gke",
            "gpuready:location": "us-central1", "gpuready:machineType": machine,
            "gpuready:nodeLocations": ["us-central1-a"], "gpuready:apiAllowedCidrs": ["10.0.0.0/8"],
            "gpuready:minNodes": nodes, "gpuready:maxNodes": nodes,
            "gpuready:teams": [{"name": "research", "gpus": nodes * gpus_per_node}]}


def _plan(tmp_path, capsys, config: dict) -> tuple[str, dict]:
    path = tmp_path / "Pulumi.multinode.yaml"
    path.write_text(yaml.safe_dump({"config": config}))
    assert main(["plan", "--stack-file", str(path)]) == 0
    text = capsys.readouterr().out
    assert main(["plan", "--stack-file", str(path), "--json"]) == 0
    return text, json.loads(capsys.readouterr().out)


def _advisories(plan: dict) -> list[dict]:
    return [v for v in plan["policy"]["violations"] if v["policy"] == ADVISORY]


def test_a_fixed_efa_pool_shows_its_levels_and_that_aws_publishes_no_block_size(tmp_path, capsys):
    text, plan = _plan(tmp_path, capsys, _eks(4))
    (pool,) = plan["queues"]["pools"]
    placed = pool["topology"]
    assert placed["levels"] == ["topology.k8s.aws/network-node-layer-1", "topology.k8s.aws/network-node-layer-2",
                                "topology.k8s.aws/network-node-layer-3", "kubernetes.io/hostname"]
    assert placed["gangLevel"] == "topology.k8s.aws/network-node-layer-3"
    assert placed["largestGangNodes"] == 4 and placed["blockNodes"] is None
    assert placed["verdict"] == "largest gang 4 nodes: block size not published"
    assert ("    gangs placed by Topology gpu: topology.k8s.aws/network-node-layer-1 > "
            "topology.k8s.aws/network-node-layer-2 > topology.k8s.aws/network-node-layer-3 > kubernetes.io/hostname; "
            "a gang asks for one topology.k8s.aws/network-node-layer-3 (preferred); largest gang 4 nodes: block size "
            "not published") in text.splitlines()
    assert not _advisories(plan)


@pytest.mark.parametrize("teams", [TEAMS, None])
def test_an_efa_pool_scaling_from_zero_gets_no_topology_and_the_advisory_says_why(tmp_path, capsys, teams):
    text, plan = _plan(tmp_path, capsys, _eks(0, teams))
    assert "gangs placed by" not in text
    assert all("topology" not in p for p in (plan["queues"] or {}).get("pools", ()))
    (advisory,) = _advisories(plan)
    assert advisory["level"] == "advisory" and advisory["resource"] == "eks-gpu"
    assert "is built for gangs across nodes (EFA, up to 4 nodes)" in advisory["message"]
    assert ("names no Topology" if teams else "no Kueue queue places its jobs") in advisory["message"]
    assert ("give the stack teams" in advisory["message"]) is (teams is None)


def test_a_pool_without_efa_is_no_multi_node_pool(tmp_path, capsys):
    text, plan = _plan(tmp_path, capsys, {**_eks(0), "gpuready:efa": False})
    assert not _advisories(plan) and "gangs placed by" not in text


def _ultraserver(min_size: int, teams=TEAMS) -> dict:
    """The eks-nvl72 reference stack's node group (one u-p6e-gb200x72 UltraServer, no EFA: refused on p6e-gb200) at
    ``min_size`` of its 18 nodes."""
    reference = yaml.safe_load((ROOT / "stacks" / "Pulumi.eks-nvl72.yaml").read_text())["config"]
    config = {**reference, "gpuready:minSize": min_size, "gpuready:apiAllowedCidrs": ["10.0.0.0/8"]}
    config.pop("gpuready:teams")
    return {**config, **({"gpuready:teams": teams} if teams else {})}


def test_an_ultraserver_group_kept_at_its_size_is_placed_by_ekss_network_layers_without_efa(tmp_path, capsys):
    text, plan = _plan(tmp_path, capsys, _ultraserver(18, [{"name": "training", "gpus": 72}]))
    (pool,) = plan["queues"]["pools"]
    assert pool["topology"]["levels"] == ["topology.k8s.aws/network-node-layer-1",
                                          "topology.k8s.aws/network-node-layer-2",
                                          "topology.k8s.aws/network-node-layer-3", "kubernetes.io/hostname"]
    assert pool["topology"]["largestGangNodes"] == 18
    assert "gpuready:efa" not in _ultraserver(18) and not _advisories(plan) and "gangs placed by Topology gpu" in text


@pytest.mark.parametrize("teams", [[{"name": "training", "gpus": 72}], None])
def test_an_ultraserver_group_scaling_from_zero_is_told_it_is_multi_node(tmp_path, capsys, teams):
    text, plan = _plan(tmp_path, capsys, _ultraserver(0, teams))
    assert "gangs placed by" not in text
    (advisory,) = _advisories(plan)
    assert "is built for gangs across nodes (p6e-gb200.36xlarge UltraServer, one NVLink domain, up to 18 nodes)" \
        in advisory["message"]


def test_a_fixed_a4_pool_is_placed_by_block_subblock_and_host(tmp_path, capsys):
    text, plan = _plan(tmp_path, capsys, _gke("a4-highgpu-8g", 4, 8, reserved=True))
    placed = plan["queues"]["pools"][0]["topology"]
    assert placed["levels"] == ["cloud.google.com/gce-topology-block", "cloud.google.com/gce-topology-subblock",
                                "cloud.google.com/gce-topology-host", "kubernetes.io/hostname"]
    assert placed["verdict"] == "largest gang 4 nodes: block size not published"
    assert not _advisories(plan)


@pytest.mark.parametrize("nodes, fits", [(3, True), (4, False)])
def test_where_the_cloud_states_a_block_size_the_plan_says_whether_the_largest_gang_fits(tmp_path, capsys,
                                                                                         monkeypatch, nodes, fits):
    """The plan's side of the arithmetic where a size is stated (Google states one for A4X: an NVLink domain of 18,
    gke_gpu/facts.py; A4X is not in this catalog yet): the same A4 pool, its sub-block said to hold 3 nodes."""
    from gpuready_components.gke_gpu import facts

    monkeypatch.setattr(facts, "TOPOLOGY_MACHINES", {**facts.TOPOLOGY_MACHINES, "a4-highgpu-": 3})
    _, plan = _plan(tmp_path, capsys, _gke("a4-highgpu-8g", nodes, 8, reserved=True))
    placed = plan["queues"]["pools"][0]["topology"]
    assert (placed["largestGangNodes"], placed["blockNodes"]) == (nodes, 3)
    assert placed["blockSource"] == facts.TOPOLOGY_BLOCK_SOURCE
    assert placed["verdict"].startswith(f"largest gang {nodes} nodes {'fits' if fits else 'does not fit'} one "
                                        "cloud.google.com/gce-topology-subblock domain (3 nodes")


def test_googles_a4x_sub_block_is_an_nvlink_domain_of_18():
    from gpuready_components.gke_gpu import facts

    for machine in ("a4x-highgpu-4g", "a4x-maxgpu-4g-metal"):
        placement = facts.placement(machine)
        assert placement.ask == "cloud.google.com/gce-topology-subblock" and placement.block.nodes == 18
    assert facts.placement("a3-ultragpu-8g").block is None and facts.placement("a3-highgpu-8g") is None
