"""`gpuready plan --json` of the reference stacks against a committed golden copy: a refactoring changes no
resource, input, capacity figure or policy verdict; outputs may only be added.

After an intended change: ``GPUREADY_UPDATE_GOLDEN=1 python -m pytest tests/stacks/test_golden_plans.py`` and
review the diff of tests/data/golden/ like any other change."""

from __future__ import annotations

import json
import os

import pytest

from gpuready.cli import main
from tests.conftest import DATA

GOLDEN = DATA / "golden"
STACKS = ("aws-batch", "aws-batch-multinode", "aws-batch-reserved", "eks", "eks-capacity-block", "eks-karpenter-reserved",
          "gke", "gke-reservation", "gke-flex-start", "aks", "aks-reservation", "eks-nvl72", "gke-nvl72", "aks-nvl72")


def _plan(stack: str, capsys) -> dict:
    assert main(["plan", "--stack", stack, "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    plan.pop("stack_file")  # where this checkout is
    return plan


@pytest.mark.parametrize("stack", STACKS)
def test_plan_is_unchanged_but_for_added_outputs(stack, capsys):
    plan, path = _plan(stack, capsys), GOLDEN / f"plan-{stack}.json"
    if os.environ.get("GPUREADY_UPDATE_GOLDEN"):
        path.write_text(json.dumps(plan, indent=1, sort_keys=True) + "\n")
    golden = json.loads(path.read_text())
    outputs, golden_outputs = plan.pop("outputs"), golden.pop("outputs")
    assert {key: outputs.get(key) for key in golden_outputs} == golden_outputs, "an output changed or went away"
    assert plan == golden
