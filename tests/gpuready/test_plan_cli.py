"""``gpuready plan``: what a user sees, what a machine reads, and how mistakes are reported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpuready.cli import main
from tests.conftest import ROOT

REFERENCE = ROOT / "stacks" / "Pulumi.aws-batch.yaml"


def _stack_file(tmp_path: Path, **changes) -> Path:
    data = yaml.safe_load(REFERENCE.read_text())
    for key, value in changes.items():
        if value is None:
            data["config"].pop(key, None)
        else:
            data["config"][key] = value
    path = tmp_path / "Pulumi.custom.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_plan_shows_resources_gpu_facts_and_capacity(capsys):
    assert main(["plan", "--stack", "aws-batch"]) == 0
    out = capsys.readouterr().out
    assert "gpuready:aws:BatchGpuEnvironment" in out
    assert "aws:batch/computeEnvironment:ComputeEnvironment" in out and "gpu-gpu-on-demand" in out
    assert "g6.12xlarge (4x L4 22.35 GiB)" in out
    assert "image: ECS_AL2023_NVIDIA" in out
    assert "volume /dev/xvda: 200 GiB gp3 encrypted" in out
    assert "compute environments: gpu-gpu-on-demand" in out
    # 64 vCPUs of g6.xlarge (1 GPU / 4 vCPUs) -> 16 GPUs; priced from the catalog
    assert "total: 16 GPUs (A10G, L4), $16.10/h" in out


def test_plan_json_is_complete_for_machines(capsys):
    assert main(["plan", "--stack", "aws-batch", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["stack"] == "aws-batch" and plan["project"] == "gpuready"
    types = {r["type"] for r in plan["resources"]}
    assert {"aws:batch/jobQueue:JobQueue", "aws:ec2/natGateway:NatGateway", "gpuready:aws:Network"} <= types
    assert plan["capacity"]["max_gpus"] == 16 and plan["capacity"]["max_usd_per_hour"] == 16.1
    assert plan["outputs"]["maxTotalGpus"] == 16 and plan["outputs"]["jobQueueName"] == "gpu-gpu"
    env = next(r for r in plan["resources"] if r["type"] == "aws:batch/computeEnvironment:ComputeEnvironment")
    assert env["inputs"]["computeResources"]["minVcpus"] == 0


def test_stack_file_elsewhere_with_spot_and_existing_network(tmp_path, capsys):
    path = _stack_file(tmp_path, **{"gpuready:capacity": ["spot", "on-demand"],
                                    "gpuready:network": {"subnetIds": ["subnet-11111111"],
                                                         "securityGroupIds": ["sg-11111111"]}})
    assert main(["plan", "--stack-file", str(path), "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["stack"] == "custom"
    assert not [r for r in plan["resources"] if r["type"].startswith("gpuready:aws:Network")]
    assert [p["resource"] for p in plan["capacity"]["pools"]] == ["gpu-gpu-on-demand", "gpu-gpu-spot"]
    assert plan["capacity"]["max_gpus"] == 32


@pytest.mark.parametrize("changes,expected", [
    ({"gpuready:job": {"gpus": 8}}, "RUNNABLE forever"),
    ({"gpuready:instanceTypes": ["g6.xlarge", "m5.large"]}, "has no NVIDIA GPU"),
    ({"gpuready:instanceTypes": ["gr6.4xlarge"]}, "an NVIDIA GPU type that gpuready's GPU catalog does not list yet"),
    ({"gpuready:instanceTypes": ["g4ad.xlarge"]}, "its accelerators are AMD Radeon Pro V520, not NVIDIA GPUs"),
    ({"gpuready:maxVcpu": 64}, "did you mean gpuready:maxVcpus?"),
    ({"gpuredy:maxVcpus": 16}, "gpuredy:maxVcpus = '16': not a key gpuready or this stack's providers (aws, pulumi) "
                               "read. Fix: did you mean gpuready:maxVcpus?"),
    ({"gcp:project": "p"}, "gcp:project = 'p': not a key gpuready or this stack's providers (aws, pulumi) read"),
    ({"gpuready:job": {"gpu": 1}}, "gpuready:job.gpu"),
    ({"gpuready:maxVcpus": "lots"}, "gpuready:maxVcpus"),
    ({"gpuready:platform": "aws-batchh"}, "unknown platform"),
    ({"gpuready:instanceTypes": None}, "no instance type given"),
    ({"gpuready:tags": {"team": 5}}, "gpuready:tags.team = 5: must be a str"),
])
def test_bad_config_is_one_paragraph_and_exit_2(tmp_path, capsys, changes, expected):
    assert main(["plan", "--stack-file", str(_stack_file(tmp_path, **changes))]) == 2
    err = capsys.readouterr().err
    assert expected in err and "Fix:" in err and "Traceback" not in err
    assert err.startswith("gpuready: plan: ") and err.count("\n") == 1


def test_unknown_stack_lists_the_known_ones(capsys):
    assert main(["plan", "--stack", "nope"]) == 2
    assert ("the project's stacks: aks, aks-nvl72, aks-reservation, aws-batch, aws-batch-multinode, "
            "aws-batch-reserved, eks, eks-capacity-block, eks-karpenter-reserved, eks-nvl72, gke, gke-flex-start, "
            "gke-nvl72, gke-reservation)") in capsys.readouterr().err


def test_a_stack_name_whose_file_sits_here_outside_a_checkout_points_to_stack_file(tmp_path, monkeypatch, capsys):
    """Outside a checkout the project is gpuready's own (its reference stacks); ./Pulumi.mine.yaml beside the user is
    not one of them, and the error says how to read it; followed, the plan is made."""
    (tmp_path / "Pulumi.mine.yaml").write_text((ROOT / "stacks" / "Pulumi.aws-batch.yaml").read_text())
    monkeypatch.chdir(tmp_path)
    assert main(["plan", "--stack", "mine"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpuready: no stack 'mine': ") and err.count("\n") == 1
    assert err.endswith("; ./Pulumi.mine.yaml is read with --stack-file ./Pulumi.mine.yaml\n")
    assert main(["plan", "--stack-file", "./Pulumi.mine.yaml", "--no-policies"]) == 0
    assert main(["plan", "--stack", "yours"]) == 2 and "--stack-file" not in capsys.readouterr().err  # no such file


def test_no_stack_named_is_a_usage_error(capsys):
    assert main(["plan"]) == 2


def test_real_process_prints_no_traceback_for_a_bad_config(tmp_path):
    path = _stack_file(tmp_path, **{"gpuready:rootVolumeGiB": 8})
    done = subprocess.run([sys.executable, "-m", "gpuready", "plan", "--stack-file", str(path)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "gpuready:rootVolumeGiB = 8: must be between 30 and 16384 GiB" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_program_option_renders_another_project(tmp_path, capsys):
    (tmp_path / "Pulumi.yaml").write_text("name: team-gpu\nruntime: python\n")
    (tmp_path / "__main__.py").write_text(
        "import pulumi\nfrom gpuready_components.batch_gpu import BatchGpuEnvironment, BatchGpuEnvironmentArgs\n"
        "env = BatchGpuEnvironment('team', BatchGpuEnvironmentArgs(instance_types=['g5.xlarge'],"
        " subnet_ids=['subnet-11111111'], security_group_ids=['sg-11111111'], max_vcpus=8))\n"
        "pulumi.export('queue', env.job_queue_name)\n")
    (tmp_path / "Pulumi.dev.yaml").write_text("config:\n  aws:region: eu-west-1\n")
    assert main(["plan", "--stack", "aws-batch", "--json"]) == 0  # an earlier plan in the same process...
    capsys.readouterr()
    assert main(["plan", "--program", str(tmp_path), "--stack", "dev", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["project"] == "team-gpu" and plan["outputs"] == {"queue": "team-gpu"}  # ...leaks no outputs
    assert plan["capacity"]["max_gpus"] == 2


COUNT_COLLECTIONS = """
import contextlib, gc, io, sys
full = []
gc.callbacks.append(lambda phase, info: phase == "start" and info["generation"] == 2 and full.append(1))
threshold = gc.get_threshold()
from gpuready.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(["plan", "--stack", sys.argv[1]])
print(code, len(full), gc.get_threshold() == threshold)
"""


@pytest.mark.parametrize("stack", ["aws-batch", "aks"])
def test_a_plan_does_not_walk_the_loaded_provider_packages_again_and_again(stack):
    """A full collection walks every object Pulumi's provider packages created (about a million): a plan's time."""
    done = subprocess.run([sys.executable, "-c", COUNT_COLLECTIONS, stack], cwd=ROOT, capture_output=True,
                          text=True, check=True)
    code, full_collections, threshold_restored = done.stdout.split()
    assert (code, full_collections, threshold_restored) == ("0", "0", "True")


def test_plan_says_when_no_caps_apply(tmp_path, capsys):
    assert main(["plan", "--stack", "aws-batch"]) == 0
    assert "  no caps: nothing limits GPUs or $/h; pass --policy-config FILE" in capsys.readouterr().out
    assert main(["plan", "--stack", "aws-batch", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["caps"] == {}
    config = tmp_path / "policy.json"
    config.write_text(json.dumps({"gpu-capacity-caps": {"maxGpus": 100}}))
    assert main(["plan", "--stack", "aws-batch", "--policy-config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "  caps: maxGpus 100\n" in out and "no caps" not in out
    assert main(["plan", "--stack", "aws-batch", "--policy-config", str(config), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["caps"] == {"maxGpus": 100}
    assert main(["plan", "--stack", "aws-batch", "--no-policies"]) == 0
    assert "caps" not in capsys.readouterr().out
