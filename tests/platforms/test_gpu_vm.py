"""A platform added with one folder (``gpu_vm/``) and one registration plans and smokes like gpuready's own."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpuready.cli import main
from gpuready_components import platforms

from tests.conftest import ROOT
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


@pytest.fixture
def installed(tmp_path):
    """The environment of a process in which ``gpu-vm`` is installed as a third party's package would be: a
    distribution whose metadata names ``tests.platforms.gpu_vm:PLATFORM`` under the registry's entry point group,
    exactly as gpuready's pyproject.toml names its own platforms. No register call."""
    info = tmp_path / "gpu_vm_platform-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: gpu-vm-platform\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{platforms.ENTRY_POINTS}]\ngpu-vm = tests.platforms.gpu_vm:PLATFORM\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}


def test_installed_like_a_builtin_it_plans_from_its_entry_point_alone(installed):
    done = subprocess.run([sys.executable, "-m", "gpuready", "plan", "--stack-file", str(STACK), "--json"],
                          env=installed, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr  # planned; gpu-scale-to-zero is its one mandatory violation
    plan = json.loads(done.stdout)
    assert plan["outputs"]["platform"] == "gpu-vm" and plan["capacity"]["max_gpus"] == 1
    without = subprocess.run([sys.executable, "-m", "gpuready", "plan", "--stack-file", str(STACK)],
                             env={**installed, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=300)
    assert without.returncode == 2 and "unknown platform" in without.stderr


def test_installed_like_a_builtin_the_component_package_serves_it(installed, gpu_vm):
    """The provider process knows gpu-vm from its entry point alone; the test's engine (this process, where the
    fixture registers it) answers the component's getAmi invoke offline as gpuready plan does."""
    from pulumi.runtime.proto import provider_pb2

    from tests.provider import engine

    with engine.callbacks() as (address, monitor, _), engine.provider(address, installed) as stub:
        schema = json.loads(stub.GetSchema(provider_pb2.GetSchemaRequest(version=0), timeout=60).schema)
        assert "gpuready:test:GpuVm" in schema["resources"]
        assert list(schema["resources"]["gpuready:test:GpuVm"]["inputProperties"]) == ["instanceType", "subnetId", "tags"]
        answered = engine.construct(stub, address, "gpuready:test:GpuVm", "vm", {"instanceType": "g6.xlarge"})
    assert answered["state"]["platform"] == "gpu-vm" and answered["state"]["gpus"] == 1
    instance = next(r for r in monitor.records if r.type == "aws:ec2/instance:Instance")
    assert instance.inputs["ami"] == "ami-0123456789abcdef0"  # its offline answer, served from its descriptor


def test_it_touches_nothing_outside_its_folder_and_its_one_registration():
    """Everything about gpu-vm is in tests/platforms/gpu_vm/: outside it only this test module names it (the docs
    describe it, a bench names this module's tests; no code or configuration names the platform)."""
    here = Path(__file__).resolve()
    named = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*")
             if p.is_file() and p.suffix in (".py", ".toml", ".yaml", ".json", ".cfg", ".txt")
             and not p.is_relative_to(HERE) and p != here and ".venv" not in p.parts and ".cache" not in p.parts
             and "node_modules" not in p.parts and re.search(r"gpu[-_]vm|GpuVm", p.read_text(errors="ignore").replace("test_gpu_vm.py", ""))]
    assert named == []
