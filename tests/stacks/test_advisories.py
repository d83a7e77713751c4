"""A reference stack trips none of its own policy advisories, or says in a comment of its file which one and why; the
idle-reservation advisory's fix names the stack key and a value in its unit, and followed, clears it."""

from __future__ import annotations

import json

import pytest
import yaml

from gpuready.cli import main
from tests.conftest import ROOT

STACKS = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))


def _violations(capsys, args: list[str]) -> list[dict]:
    assert main(["plan", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["policy"]["violations"]


def _edited(tmp_path, stack: str, changes: dict) -> str:
    data = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    data["config"].update(changes)
    path = tmp_path / f"Pulumi.{stack}.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


@pytest.mark.parametrize("stack", STACKS)
def test_a_reference_stack_says_why_it_trips_each_advisory_it_trips(capsys, stack):
    comments = " ".join(line.split("#", 1)[1] for line in (ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text()
                        .splitlines() if "#" in line)
    tripped = {v["policy"] for v in _violations(capsys, ["--stack", stack])}
    assert {policy for policy in tripped if policy not in comments} == set()


IDLE = ("scales to zero ({field} 0) on a prepaid reservation ({res}): the reserved GPUs are paid for every hour whether a "
        "node runs on them or not, and a job waits for a node to boot. Fix: set {field} to {value} ({key} in the "
        "reference stacks) while the reservation is active, or add the name to this rule's allow list")
AKS_GROUP = ("capacity-reservation-group /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/"
             "gpu-reservations/providers/Microsoft.Compute/capacityReservationGroups/a100-eastus")


@pytest.mark.parametrize("stack, field, res, value, key, fixed", [
    ("aws-batch-reserved", "minVcpus", "odcr cr-0123456789abcdef0", "96 = 2 instances of 48 vCPUs",
     "gpuready:minVcpus", 96),
    ("eks-capacity-block", "scalingConfig.minSize", "capacity-block cr-0123456789abcdef0", "2", "gpuready:minSize", 2),
    ("gke-reservation", "autoscaling minimum", "reservation my-h100-reservation", "2", "gpuready:minNodes", 2),
    ("aks-reservation", "minCount", AKS_GROUP, "2", "gpuready:minCount", 2),
])
def test_the_idle_reservation_fix_names_the_key_and_a_value_in_its_unit_and_clears_it(
        tmp_path, capsys, stack, field, res, value, key, fixed):
    (idle,) = [v for v in _violations(capsys, ["--stack", stack]) if v["policy"] == "gpu-reservation-idle"]
    assert idle["message"] == f"{idle['resource']}: " + IDLE.format(field=field, res=res, value=value, key=key)
    followed = _violations(capsys, ["--stack-file", _edited(tmp_path, stack, {key: fixed})])
    assert [v for v in followed if v["policy"] == "gpu-reservation-idle"] == []


@pytest.mark.parametrize("mistake, fix, followed", [
    ({"enabled": False}, "Fix: turn node repair on (nodeRepairConfig.enabled; gpuready:repair.enabled true in the "
                         "reference stacks, EksGpuCluster node_group.repair)", {"enabled": True}),
    ({"maxUnhealthyPercent": 100}, "Fix: set nodeRepairConfig.maxUnhealthyNodeThresholdPercentage, e.g. to 20 "
                                   "(gpuready:repair.maxUnhealthyPercent in the reference stacks, whose default is 20)",
     {"maxUnhealthyPercent": 20}),
])
def test_the_repair_fix_names_the_stack_key_and_followed_clears_it(tmp_path, capsys, mistake, fix, followed):
    told = [v for v in _violations(capsys, ["--stack-file", _edited(tmp_path, "eks", {"gpuready:repair": mistake})])
            if v["policy"] == "gpu-pool-repair"]
    assert told and all(v["message"].endswith(fix) for v in told)
    after = _violations(capsys, ["--stack-file", _edited(tmp_path, "eks", {"gpuready:repair": followed})])
    assert [v for v in after if v["policy"] == "gpu-pool-repair"] == []
