"""A platform added with one folder (``gpu_vm/``) and one registration plans and smokes like gpuready's own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuready.cli import main
from gpuready_components import platforms

from tests.gpuready.conftest import h100_idle

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


def _outputs(tmp_path: Path) -> Path:
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps({"platform": "gpu-vm", "instanceId": "i-0abc", "instanceType": "g6.xlarge",
                                "gpus": 1}))
    return path


def test_it_smokes_on_its_own_target_through_the_cli(gpu_vm, tmp_path, monkeypatch, capsys):
    (tmp_path / "idle.txt").write_text(h100_idle())  # the real H100 capture's idle snapshot, as the instance's GPU
    monkeypatch.setenv("GPU_VM_CAPTURE", str(tmp_path / "idle.txt"))
    assert main(["smoke", "--outputs", str(_outputs(tmp_path)), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["target"] == "gpu-vm" and result["verdict"] == "pass"
    assert result["job"] == {"instance": "i-0abc", "started": True, "cleaned": "finished"}
    assert any(c["name"] == "gpu0.memory_in_use" for c in result["checks"])  # the probe's own checks


def test_its_target_reports_a_gpu_the_probe_fails(gpu_vm, tmp_path, monkeypatch, capsys):
    held = tmp_path / "held.csv"  # the capture's idle GPU with 72,207 of 81,559 MiB held by another process
    held.write_text(h100_idle().replace(", 479 MiB, 0 MiB, 81081 MiB,", ", 479 MiB, 72207 MiB, 8873 MiB,", 1))
    monkeypatch.setenv("GPU_VM_CAPTURE", str(held))
    assert main(["smoke", "--outputs", str(_outputs(tmp_path))]) == 1
    assert "memory_in_use" in capsys.readouterr().out


def test_a_plugin_cannot_silently_replace_a_describer_or_an_offline_answer():
    from gpuready.plan.describe import describes
    from gpuready.plan.render import answers
    from gpuready.resources import aws

    with pytest.raises(ValueError, match="two describers for EksCluster"):
        describes(aws.EksCluster)(lambda r, rendering: {})
    with pytest.raises(ValueError, match="two offline answers for aws:index/getRegion:getRegion"):
        answers("aws:index/getRegion:getRegion")(lambda args, mocks: {})
