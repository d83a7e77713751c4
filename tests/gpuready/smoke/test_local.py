"""`gpuready smoke --local` and `gpuready probe`: the probe in a real subprocess, its verdict and exit code."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from gpuready.cli import main
from tests.gpuready.conftest import CAPTURES, H100, h100_idle


def test_local_without_a_gpu_exits_1_with_a_clear_verdict(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["smoke", "--local"]) == 1
    out = capsys.readouterr().out
    assert "FAIL     nvidia_driver" in out and "no NVIDIA driver here" in out and "Verdict: FAIL" in out


def test_local_on_a_replayed_h100_passes(fake_smi, capsys, tmp_path):
    fake_smi(H100, row=0, gpus=2)
    junit = tmp_path / "smoke.xml"
    assert main(["smoke", "--local", "--gpus", "2", "--json", "--junit", str(junit)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["verdict"] == "pass" and result["target"] == "local"
    assert {c["name"]: c["measured"] for c in result["checks"]}["gpu_count"] == 2
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("failures") == "0" and int(suite.get("tests")) >= 8


def test_local_fails_when_the_node_has_fewer_gpus_than_asked(fake_smi, capsys):
    fake_smi(H100, gpus=1)
    assert main(["smoke", "--local", "--gpus", "8"]) == 1
    assert "fewer GPUs than the stack promised" in capsys.readouterr().out


def test_probe_on_a_capture_file(capsys, tmp_path):
    (tmp_path / "idle.txt").write_text(h100_idle())
    assert main(["probe", "--nvidia-smi-output", str(tmp_path / "idle.txt")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("GPU probe on capture") and "PASS     gpu0.ecc_uncorrected" in out


@pytest.mark.parametrize("capture, gpu, code", [
    (H100, "gpu0  NVIDIA H100 80GB HBM3, 81559 MiB, driver 590.48.01, CUDA 13.1, MIG disabled\n",
     1),  # judged on its latest snapshot, under load: memory held by gpu_burn
    (CAPTURES / "l40s_driver-595.80.txt", "gpu0  NVIDIA L40S, 46068 MiB, driver 595.80, CUDA 13.2, no MIG\n", 0),
    (CAPTURES / "h200-mig-enabled_constructed.txt",
     "gpu0  NVIDIA H200, 143771 MiB, driver 570.124.06, CUDA 12.8, MIG enabled, 2 instances\n"
     "        MIG 3g.71gb  MIG-00000000-0000-0000-0000-000000000001\n"
     "        MIG 3g.71gb  MIG-00000000-0000-0000-0000-000000000002\n", 0),
])
def test_probe_text_names_each_gpu_its_memory_driver_cuda_and_mig(capture, gpu, code, capsys):
    assert main(["probe", "--nvidia-smi-output", str(capture)]) == code
    out = capsys.readouterr().out
    assert out.count(gpu.split(",")[0]) == 1  # once per GPU, though the capture holds several snapshots of it
    assert f"\n\n{gpu}\n" in out


def test_local_smoke_text_says_which_gpus_the_probe_saw(fake_smi, capsys):
    fake_smi(CAPTURES / "h200-mig-enabled_constructed.txt")
    assert main(["smoke", "--local", "--gpus", "1"]) == 0
    assert ("\n\ngpu0  NVIDIA H200, 143771 MiB, driver 570.124.06, CUDA 12.8, MIG enabled, 2 instances\n"
            "        MIG 3g.71gb  MIG-00000000-0000-0000-0000-000000000001\n") in capsys.readouterr().out


def test_probe_on_a_missing_file_is_a_user_mistake(tmp_path, capsys):
    assert main(["probe", "--nvidia-smi-output", str(tmp_path / "nope.csv")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_outputs_without_what_the_target_needs_are_a_user_mistake(tmp_path, capsys):
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"platform": "eks"}))
    assert main(["smoke", "--outputs", str(outputs)]) == 2
    assert "lack kubeconfig" in capsys.readouterr().err
    outputs.write_text(json.dumps({"platform": "openshift"}))
    assert main(["smoke", "--outputs", str(outputs)]) == 2
    assert "no platform gpuready knows" in capsys.readouterr().err


def test_outputs_come_from_the_pulumi_cli_when_it_is_there(tmp_path, monkeypatch):
    from gpuready.smoke.outputs import load_outputs

    fake = tmp_path / "pulumi"
    fake.write_text("#!/bin/sh\n[ \"$*\" = 'stack output --json --show-secrets -s prod' ] || exit 3\n"
                    "echo '{\"platform\": \"aws-batch\", \"jobQueueName\": \"gpu\"}'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert load_outputs(stack="prod") == {"platform": "aws-batch", "jobQueueName": "gpu"}


def test_without_the_pulumi_cli_the_error_says_how_to_pass_outputs(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["smoke", "--stack", "prod"]) == 2
    assert "--outputs outputs.json" in capsys.readouterr().err


def test_missing_aws_credentials_are_a_user_mistake(tmp_path, monkeypatch, capsys):
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"platform": "aws-batch", "jobDefinitionArn": "arn:aws:batch:us-east-1:1:x",
                                   "jobVcpus": 2, "jobMemoryMib": 8192,
                                   "jobQueueArn": "arn:aws:batch:us-east-1:123456789012:job-queue/gpu"}))
    assert main(["smoke", "--outputs", str(outputs)]) == 2
    assert "configure AWS credentials" in capsys.readouterr().err


def test_an_unreachable_kubernetes_api_is_a_user_mistake(tmp_path, capsys):
    from tests.gpuready.smoke.moto_batch import free_port

    kubeconfig = json.dumps({"apiVersion": "v1", "kind": "Config", "current-context": "c",
                             "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{free_port()}"}}],
                             "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                             "users": [{"name": "u", "user": {"token": "t"}}]})
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"platform": "eks", "kubeconfig": kubeconfig}))
    assert main(["smoke", "--outputs", str(outputs), "--timeout", "5"]) == 2
    assert "cannot reach the API" in capsys.readouterr().err


def _alive(pid: int) -> bool:
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie is dead but not yet reaped by its (init) parent
        return f.read().split(")")[-1].split()[0] != "Z"


def _hung_probe(monkeypatch, tmp_path):
    """A probe that starts a child and hangs, in place of the real one; the file its and its child's pids go to."""
    from gpuready.smoke import local

    pids = tmp_path / "pids"
    hung = tmp_path / "probe.py"
    hung.write_text("import os, subprocess, sys, time\n"
                    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
                    f"open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{child.pid}}')\n"
                    "time.sleep(60)\n")
    monkeypatch.setattr(local, "PROBE_FILE", hung)
    return pids


def test_a_hung_probe_and_what_it_started_are_killed_at_the_timeout(monkeypatch, tmp_path):
    import sys
    import time

    from gpuready.smoke import local

    pids = _hung_probe(monkeypatch, tmp_path)
    started = time.monotonic()
    result = local.run(timeout=5)  # long enough for the probe to start its child on a loaded machine
    assert time.monotonic() - started < 15
    assert {c.name: c.verdict for c in result.checks} == {"probe_finished": "fail"}
    assert pids.exists(), sys.platform
    deadline = time.monotonic() + 5  # SIGKILL is delivered at once, but a loaded machine takes a moment to end them
    while any(_alive(int(pid)) for pid in pids.read_text().split()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(int(pid)) for pid in pids.read_text().split()), sys.platform


def test_ctrl_c_kills_the_probe_and_what_it_started_and_is_no_verdict(monkeypatch, tmp_path):
    import os
    import signal
    import threading
    import time

    from gpuready.smoke import local

    pids = _hung_probe(monkeypatch, tmp_path)
    # Python's own Ctrl-C handler, also where the suite was started in the background (SIGINT is ignored there)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)

    def ctrl_c() -> None:
        deadline = time.monotonic() + 20
        while not pids.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)  # a real signal: it wakes the wait, as a Ctrl-C does
    threading.Thread(target=ctrl_c, daemon=True).start()
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):  # the CLI's exit 130
            local.run(timeout=30)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - started < 20 and pids.exists()
    deadline = time.monotonic() + 5  # SIGKILL is delivered at once, but a process still starting takes a moment
    while any(_alive(int(pid)) for pid in pids.read_text().split()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(int(pid)) for pid in pids.read_text().split())
