"""``gpuready plan`` of a node group on reserved capacity: the capacity line and the launch template say which."""

from __future__ import annotations

import json

import pytest

from gpuready.cli import main
from tests.conftest import ROOT

STACK = ROOT / "stacks" / "Pulumi.eks-capacity-block.yaml"
BLOCK = "cr-0123456789abcdef0"


def _groups(args: list[str], capsys) -> tuple[str, dict, dict]:
    assert main(["plan", *args, "--no-policies"]) == 0
    text = capsys.readouterr().out
    assert main(["plan", *args, "--no-policies", "--json"]) == 0
    resources = json.loads(capsys.readouterr().out)["resources"]
    groups = {r["name"]: r["facts"] for r in resources if r["type"] == "aws:eks/nodeGroup:NodeGroup"}
    templates = {r["name"]: r["facts"] for r in resources if r["type"] == "aws:ec2/launchTemplate:LaunchTemplate"}
    return text, groups, templates


def test_the_capacity_block_stack_shows_its_gpu_group_as_reserved(capsys):
    text, groups, templates = _groups(["--stack", "eks-capacity-block"], capsys)
    assert groups["eks-gpu"]["capacity"] == f"reserved (capacity-block {BLOCK})"
    assert groups["eks-system"]["capacity"] == "ON_DEMAND"
    assert templates["eks-gpu"]["reservation"] == f"capacity-block {BLOCK}"
    assert "reservation" not in templates["eks-system"]
    assert f"      capacity: reserved (capacity-block {BLOCK})" in text.splitlines()


@pytest.mark.parametrize("reservation, shown", [
    (f"    kind: odcr\n    id: {BLOCK}\n", f"odcr {BLOCK}"),
    ("    kind: odcr\n    preference: open\n", "odcr open"),
    ("    kind: odcr\n    resourceGroupArn: arn:aws:resource-groups:us-east-1:123456789012:group/gpus\n",
     "odcr arn:aws:resource-groups:us-east-1:123456789012:group/gpus"),
])
def test_an_odcr_is_shown_with_its_target(tmp_path, capsys, reservation, shown):
    text = STACK.read_text()
    start, end = text.index("  gpuready:reservation:\n"), text.index("  gpuready:install:")
    stack = tmp_path / "Pulumi.eks-odcr.yaml"
    stack.write_text(text[:start] + "  gpuready:reservation:\n" + reservation + text[end:])
    _, groups, templates = _groups(["--stack-file", str(stack)], capsys)
    assert groups["eks-gpu"]["capacity"] == f"reserved ({shown})"
    assert templates["eks-gpu"]["reservation"] == shown


def test_without_a_reservation_the_capacity_type_is_shown_as_before(capsys):
    _, groups, templates = _groups(["--stack", "eks"], capsys)
    assert {groups[g]["capacity"] for g in ("eks-gpu", "eks-gpu-4x")} == {"ON_DEMAND"}
    assert all("reservation" not in facts for facts in templates.values())


def _stack_with(tmp_path, reservation: str, max_size: int = 2):
    text = STACK.read_text()
    start, end = text.index("  gpuready:reservation:\n"), text.index("  gpuready:install:")
    text = text[:start] + "  gpuready:reservation:\n" + reservation + text[end:]
    text = text.replace("  gpuready:maxSize: 2\n", f"  gpuready:maxSize: {max_size}\n")
    stack = tmp_path / "Pulumi.eks-reserved.yaml"
    stack.write_text(text)
    return stack


def _capacity(args: list[str], capsys) -> tuple[list[str], dict]:
    assert main(["plan", *args, "--no-policies"]) == 0
    text = capsys.readouterr().out
    assert main(["plan", *args, "--no-policies", "--json"]) == 0
    section = text[text.index("Capacity at full scale:"):].split("\n\n")[0]
    return section.splitlines(), json.loads(capsys.readouterr().out)["capacity"]


def test_capacity_by_kind_shows_the_block_its_window_and_what_it_commits(tmp_path, capsys):
    stack = _stack_with(tmp_path, f"    kind: capacity-block\n    id: {BLOCK}\n    instanceType: p5.48xlarge\n"
                        "    count: 2\n    start: 2026-11-20T11:30:00Z\n    end: 2999-12-01T11:30:00Z\n")
    lines, capacity = _capacity(["--stack-file", str(stack)], capsys)
    assert lines[3:] == [
        "  by kind (at the list prices above; Spot and reservations bill at their own rates):",
        "    reserved: 16 GPUs, $110.08/h (eks-gpu)",
        f"    eks-gpu on capacity-block {BLOCK}: 2026-11-20T11:30:00Z to 2999-12-01T11:30:00Z, 16 GPUs reserved, "
        "$110.08/h committed; nothing past it",
        "  committed: $110.08/h, paid whether the GPUs are used or not",
        f"  eks-gpu: capacity-block {BLOCK} facts unchecked offline (pulumi preview reads them from EC2 and refuses "
        "a type, zone, count or end the pool cannot use)"]
    assert capacity["by_kind"] == [{"kind": "reserved", "gpus": 16, "usd_per_hour": 110.08, "pools": ["eks-gpu"]}]
    assert capacity["committed_usd_per_hour"] == 110.08
    pool = capacity["pools"][0]
    assert (pool["kinds"], pool["reservation"], pool["reserved_gpus"]) == (["reserved"], f"capacity-block {BLOCK}", 16)


def test_an_odcr_group_smaller_than_the_pool_commits_its_count_and_falls_back_past_it(tmp_path, capsys):
    # 1 reserved p5.48xlarge of a group of up to 3 (maxSize 3): the rest launch on demand past the resource group.
    stack = _stack_with(tmp_path, "    kind: odcr\n    resourceGroupArn: arn:aws:resource-groups:us-east-1:123456789012:"
                        "group/gpus\n    count: 1\n", max_size=3)
    lines, capacity = _capacity(["--stack-file", str(stack)], capsys)
    assert capacity["by_kind"] == [{"kind": "reserved", "gpus": 8, "usd_per_hour": 55.04, "pools": ["eks-gpu"]},
                                   {"kind": "on-demand", "gpus": 16, "usd_per_hour": 110.08, "pools": ["eks-gpu"]}]
    assert capacity["committed_usd_per_hour"] == 55.04
    assert ("    eks-gpu on odcr arn:aws:resource-groups:us-east-1:123456789012:group/gpus: window not given, 8 GPUs "
            "reserved, $55.04/h committed; past it: on-demand") in lines


def test_an_all_on_demand_stack_shows_no_kinds_in_text_but_json_has_them(capsys):
    lines, capacity = _capacity(["--stack", "eks"], capsys)
    assert not any("by kind" in line or "committed" in line for line in lines)
    assert capacity["by_kind"] == [{"kind": "on-demand", "gpus": capacity["max_gpus"],
                                    "usd_per_hour": capacity["max_usd_per_hour"], "pools": ["eks-gpu", "eks-gpu-4x"]}]
    assert capacity["committed_usd_per_hour"] == 0


def test_the_gpu_nodes_launch_in_the_reservations_zone_and_the_cluster_keeps_two(tmp_path, capsys):
    stack = _stack_with(tmp_path, f"    kind: capacity-block\n    id: {BLOCK}\n    instanceType: p5.48xlarge\n"
                        "    count: 2\n    availabilityZone: us-east-1b\n")
    assert main(["plan", "--stack-file", str(stack), "--no-policies", "--json"]) == 0
    resources = json.loads(capsys.readouterr().out)["resources"]
    named = {r["name"]: r["inputs"]["availabilityZone"] for r in resources if r["type"] == "aws:ec2/subnet:Subnet"}
    assert (named["gpu-private-0"], named["gpu-private-1"]) == ("us-east-1b", "us-east-1a")
    groups = {r["name"]: r["inputs"]["subnetIds"] for r in resources if r["type"] == "aws:eks/nodeGroup:NodeGroup"}
    assert len(groups["eks-gpu"]) == 1 and len(groups["eks-system"]) == 2
    assert groups["eks-gpu"][0] == groups["eks-system"][0]  # gpu-private-0: the block's zone


AKS_GROUP = ("/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/gpu-reservations/providers/"
             "Microsoft.Compute/capacityReservationGroups/a100-eastus")


def _aks(args: list[str], capsys) -> tuple[str, dict]:
    assert main(["plan", *args, "--no-policies"]) == 0
    text = capsys.readouterr().out
    assert main(["plan", *args, "--no-policies", "--json"]) == 0
    return text, {(r["type"].rsplit(":", 1)[-1], r["name"]): r["facts"]
                  for r in json.loads(capsys.readouterr().out)["resources"]}


def test_the_aks_reservation_stack_shows_its_pool_reserved_then_on_demand_and_the_identity_it_needs(capsys):
    text, facts = _aks(["--stack", "aks-reservation"], capsys)
    assert facts[("AgentPool", "aks-gpu")]["capacity"] == f"reserved then on-demand (capacity-reservation-group {AKS_GROUP})"
    assert facts[("ManagedCluster", "aks")]["identity"] == ["user-assigned aks-identity"]
    role = facts[("RoleAssignment", "aks-reservation-contributor")]
    assert role == {"role": "Contributor", "to": "ServicePrincipal aks-identity-principal", "on": "gpu-reservations"}
    assert f"      capacity: reserved then on-demand (capacity-reservation-group {AKS_GROUP})" in text.splitlines()


def test_an_aks_pool_without_a_reservation_is_on_demand_and_its_cluster_system_assigned(capsys):
    _, facts = _aks(["--stack", "aks"], capsys)
    assert facts[("AgentPool", "aks-gpu")]["capacity"] == "on-demand"
    assert "identity" not in facts[("ManagedCluster", "aks")]


@pytest.mark.parametrize("stack, pool, kind", [("eks-capacity-block", "eks-gpu", "capacity-block"),
                                               ("eks-karpenter-reserved", "gpuready-gpu", "odcr"),
                                               ("gke-reservation", "gke-gpu", "reservation"),
                                               ("aks-reservation", "gpu", "capacity-reservation-group")])
def test_every_kubernetes_stack_on_a_reservation_tells_smoke_about_it(capsys, stack, pool, kind):
    assert main(["plan", "--stack", stack, "--no-policies", "--json"]) == 0
    (said,) = json.loads(capsys.readouterr().out)["outputs"]["gpuReservations"]
    assert (said["pool"], said["kind"]) == (pool, kind) and said["target"] and said["count"] >= 1


def test_the_plan_says_a_given_zone_is_unchecked_offline():
    from gpuready.plan.report import _zone_lines
    entry = {"pool": "gpu-gpu-on-demand", "kind": "odcr", "target": "cr-0123456789abcdef0", "only": False, "zone": "us-east-1c"}
    assert _zone_lines({"gpuReservations": [entry]}) == [
        "  gpu-gpu-on-demand: reservation zone us-east-1c unchecked offline (pulumi preview reads the subnets' "
        "zones and refuses subnets outside it)"]
    assert _zone_lines({"gpuReservations": [{**entry, "subnetZones": ["us-east-1c"]}]}) == []


def test_the_plan_says_a_capacity_blocks_facts_are_unchecked_offline_and_invents_none(capsys):
    """``gpuready plan`` answers the block's invoke with its id alone: no fact is checked, and the plan says so."""
    assert main(["plan", "--stack", "eks-capacity-block", "--no-policies"]) == 0
    text = capsys.readouterr().out
    assert (f"  eks-gpu: capacity-block {BLOCK} facts unchecked offline (pulumi preview reads them from EC2 and "
            "refuses a type, zone, count or end the pool cannot use)") in text.splitlines()
    assert "reservation zone us-east-1a unchecked" not in text  # the block's line says it for the zone too
    assert main(["plan", "--stack", "eks-capacity-block", "--no-policies", "--json"]) == 0
    (said,) = json.loads(capsys.readouterr().out)["outputs"]["gpuReservations"]
    assert said["factsRead"] is False and said["count"] == 2 and "start" not in said  # the stack's count only


@pytest.mark.parametrize("stack, reservation, shown", [
    ("eks", f"    kind: odcr\n    id: {BLOCK}\n    count: 2\n", ("odcr", BLOCK)),
    ("eks", "    kind: odcr\n    tags:\n      team: ml\n", ("odcr", "tags team=ml")),
    ("eks-capacity-block", None, ("capacity-block", BLOCK)),
])
def test_an_auto_mode_eks_stack_on_a_reservation_plans_its_node_class_and_says_the_open_odcr_caveat(
        tmp_path, capsys, stack, reservation, shown):
    text = (ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text()
    if reservation is not None:
        text += "  gpuready:reservation:\n" + reservation
    path = tmp_path / "Pulumi.eks-auto-reserved.yaml"
    path.write_text(text + "  gpuready:autoscaler: auto-mode\n")
    assert main(["plan", "--stack-file", str(path), "--no-policies"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert ["kubernetes:eks.amazonaws.com/v1:NodeClass", "eks-gpu-nodeclass"] in [line.split() for line in out]
    target = "tags team=ml" if reservation and "tags" in reservation else BLOCK
    assert f"      capacity: reserved (capacity-reservation {target}), on-demand" in out
    assert ("      reservation caveat: capacityReservationSelectorTerms on any NodeClass stops EKS Auto Mode launching "
            "into open ODCRs for every NodeClass of the cluster") in out
    assert main(["plan", "--stack-file", str(path), "--no-policies", "--json"]) == 0
    (said,) = json.loads(capsys.readouterr().out)["outputs"]["gpuReservations"]
    assert (said["pool"], said["kind"], said["target"]) == ("gpuready-gpu", *shown)
