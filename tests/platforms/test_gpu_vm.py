"""A platform added with one folder (``gpu_vm/``) and one registration plans and smokes like gpuready's own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuready.cli import main
from gpuready_components import platforms

from .gpu_vm import PLATFORM

HERE = Path(__file__).parent / "gpu_vm"
STACK = HERE / "Pulumi.gpu-vm.yaml"


@pytest.fixture
def gpu_vm():
    platforms.register(PLATFORM)  # the one registration
    yield PLATFORM
    platforms.unregister(PLATFORM.name)


def test_it_plans_with_its_readers_describer_offline_answers_and_the_policy_rules(gpu_vm, capsys):
    assert main(["plan", "--stack-file", str(STACK), "--json"]) == 1  # gpu-scale-to-zero: an instance never scales
    plan = json.loads(capsys.readouterr().out)
    instance = next(r for r in plan["resources"] if r["type"] == "aws:ec2/instance:Instance")
    assert instance["inputs"]["ami"] == "ami-0123456789abcdef0"  # the platform's offline answer to getAmi
    assert instance["facts"] == {"gpus": "1x L4", "image": "ami-0123456789abcdef0"}  # its describer
    assert plan["capacity"]["max_gpus"] == 1 and plan["capacity"]["gpu_models"] == ["L4"]  # a GPU pool, counted
    assert plan["outputs"]["platform"] == "gpu-vm" and plan["outputs"]["gpus"] == 1
    violated = {v["policy"] for v in plan["policy"]["violations"]}
    assert violated == {"gpu-scale-to-zero"}, violated  # the rules see its pool as GPU capacity


def test_an_unregistered_platform_is_refused_by_name(capsys):
    assert main(["plan", "--stack-file", str(STACK)]) == 2
    assert "unknown platform" in capsys.readouterr().err
