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
