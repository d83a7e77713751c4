"""A platform added with one folder (``gpu_vm/``) and one registration plans and smokes like gpuready's own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuready.cli import main
from gpuready_components import platforms

from tests.gpuready.conftest import H100

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
    monkeypatch.setenv("GPU_VM_CAPTURE", str(H100))  # the real H100 capture, as the fake instance's GPU
    assert main(["smoke", "--outputs", str(_outputs(tmp_path)), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["target"] == "gpu-vm" and result["verdict"] == "pass"
    assert result["job"] == {"instance": "i-0abc", "started": True, "cleaned": "finished"}
    assert any(c["name"] == "gpu0.memory_in_use" for c in result["checks"])  # the probe's own checks


def test_its_target_reports_a_gpu_the_probe_fails(gpu_vm, tmp_path, monkeypatch, capsys):
    held = tmp_path / "held.csv"  # the capture's idle GPU with 72,207 of 81,559 MiB held by another process
    held.write_text(H100.read_text().replace(", 479 MiB, 0 MiB, 81081 MiB,", ", 479 MiB, 72207 MiB, 8873 MiB,", 1))
    monkeypatch.setenv("GPU_VM_CAPTURE", str(held))
    assert main(["smoke", "--outputs", str(_outputs(tmp_path))]) == 1
    assert "memory_in_use" in capsys.readouterr().out


def test_a_platform_cannot_silently_replace_a_reader_describer_or_offline_answer():
    import dataclasses

    from gpuready.resources import aws

    other = dataclasses.replace(PLATFORM, name="gpu-vm-2")
    for clash, message in (({"describers": {aws.EksCluster: lambda r, rendering: {}}}, "describer for EksCluster"),
                           ({"answers": {"aws:index/getRegion:getRegion": lambda args, mocks: {}}},
                            "offline answer for aws:index/getRegion:getRegion"),
                           ({"readers": (type("Cluster", (aws.EksCluster,), {}),)}, "reader for aws:eks/cluster")):
        with pytest.raises(ValueError, match=f"gives another {message}.*, which '[a-z-]+' gives"):
            platforms.register(dataclasses.replace(other, **clash))
        assert platforms.get("gpu-vm-2") is None


def test_unregister_takes_away_all_a_platform_brought(gpu_vm):
    from gpuready.resources import by_token
    from gpuready_components import package

    assert by_token()["aws:ec2/instance:Instance"] is not None
    assert "gpuready:test:GpuVm" in {s.token for s in package.served()}
    platforms.unregister(PLATFORM.name)
    assert "aws:ec2/instance:Instance" not in by_token()
    assert "gpuready:test:GpuVm" not in {s.token for s in package.served()}
    platforms.register(PLATFORM)  # for the fixture's own unregister
