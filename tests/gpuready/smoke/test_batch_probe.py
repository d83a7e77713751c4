"""The gang job's carrier (batch_probe.launcher_command): what it costs in a multi-node job definition, its time
limits, and that the files it writes run as the nodes run them (with a stand-in torchrun replaying a recorded NCCL
log)."""

from __future__ import annotations

import ast
import base64
import json
import re
import subprocess
import sys
import zlib

import botocore.session
import botocore.validate
import pytest

from gpuready.probe import core, nccl
from gpuready.smoke import batch_probe
from tests.conftest import DATA
from tests.gpuready.probe.test_nccl import FAKE_TORCHRUN, RESULT

ARGV = ["launch", "--nodes", "16", "--gpus-per-node", "8", "--transport", "efa", "--instance-type", "p5.48xlarge",
        "--full", "--timeout", "3510", "--rendezvous-timeout", "600"]
LAUNCHER_SHARE = 0.9
"""Of Batch's 24 KiB, what the largest multi-node probe definition may take: 16 x p5.48xlarge, one device per EFA
interface (32). The two files alone take about 18 KiB (core.py is 10.6 KiB of that): there is no room for the 75%
a single-node definition leaves; devices written with hostPath only (Batch's default containerPath and
permissions) keep it under this share, the long form takes about 98%."""


def _multinode_request(command, efa_interfaces=32):
    """A RegisterJobDefinition request for a gang job on p5.48xlarge as the multi-node stack defines it (all GPUs,
    an EFA device each interface, memlock unlimited, shared memory, NCCL/libfabric environment, logs, roles)."""
    container = {
        "image": "public.ecr.aws/deep-learning-containers/pytorch-training:2.7.1-gpu-py312-cu128-ubuntu22.04-ec2",
        "command": command,
        "jobRoleArn": "arn:aws:iam::123456789012:role/gpuready-production-batch-gpu-job-role-0123456",
        "executionRoleArn": "arn:aws:iam::123456789012:role/gpuready-production-batch-gpu-execution-role-0123456",
        "resourceRequirements": [{"type": "GPU", "value": "8"}, {"type": "VCPU", "value": "192"},
                                 {"type": "MEMORY", "value": "1900000"}],
        "linuxParameters": {"devices": [{"hostPath": f"/dev/infiniband/uverbs{i}"} for i in range(efa_interfaces)],
                            "sharedMemorySize": 65536},
        "ulimits": [{"name": "memlock", "softLimit": -1, "hardLimit": -1}],
        "environment": [{"name": "NCCL_DEBUG", "value": "INFO"}, {"name": "FI_PROVIDER", "value": "efa"},
                        {"name": "FI_EFA_USE_DEVICE_RDMA", "value": "1"}],
        "logConfiguration": {"logDriver": "awslogs", "options": {
            "awslogs-group": "/aws/batch/gpuready-production-batch-gpu", "awslogs-region": "us-east-1",
            "awslogs-stream-prefix": "gpuready"}},
    }
    return {"jobDefinitionName": "gpuready-production-batch-gpu-multinode-0123456" + batch_probe.FAMILY_SUFFIX,
            "type": "multinode", "nodeProperties": {"numNodes": 16, "mainNode": 0, "nodeRangeProperties": [
                {"targetNodes": "0:", "container": container}]},
            "retryStrategy": {"attempts": 1}, "timeout": {"attemptDurationSeconds": 3600}, "propagateTags": True,
            "platformCapabilities": ["EC2"],
            "tags": {"gpuready:smoke": "true", "gpuready:run": "gpuready-smoke-0123456789ab"}}


def test_the_launcher_fits_a_p5_gang_job_definition_within_its_share_of_the_limit():
    request = _multinode_request(batch_probe.launcher_command(ARGV))
    shape = botocore.session.get_session().get_service_model("batch").operation_model(
        "RegisterJobDefinition").input_shape
    botocore.validate.validate_parameters(request, shape)  # a request Batch's own model accepts
    assert batch_probe.size(request) <= LAUNCHER_SHARE * batch_probe.DEFINITION_LIMIT, batch_probe.size(request)


def test_the_launcher_carries_both_files_as_shipped():
    code = batch_probe.launcher_command(ARGV)[2]
    (packed,) = re.findall(r"b85decode\(('[^']*')\)", code)
    files = json.loads(zlib.decompress(base64.b85decode(ast.literal_eval(packed))))
    assert sorted(files) == ["core.py", "nccl.py"]  # a gang job runs no burn (sweep --full burns each node)
    for module in (core, nccl):
        assert files[module.__name__.rsplit(".", 1)[-1] + ".py"] == batch_probe.shipped(module.__file__).decode()


def test_what_jobs_carry_leaves_out_only_what_nothing_carried_uses():
    import ast as syntax

    for name, dropped in batch_probe.SDK_SIDE.items():
        module = {"nccl.py": nccl, "core.py": core}[name]
        carried = syntax.parse(batch_probe.shipped(module.__file__))
        used = {n.id for n in syntax.walk(carried) if isinstance(n, syntax.Name)} | \
            {n.attr for n in syntax.walk(carried) if isinstance(n, syntax.Attribute)}
        defined = {getattr(n, "name", None) for n in carried.body}
        assert not set(dropped) & (used | defined), set(dropped) & (used | defined)
        assert all(hasattr(module, d) for d in dropped)  # the SDK still has them


def test_the_carried_files_run_a_batch_main_node_end_to_end(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "AWS_BATCH_JOB_NODE_INDEX": "0", "AWS_BATCH_JOB_NUM_NODES": "2",
           "AWS_BATCH_JOB_MAIN_NODE_INDEX": "0", "GPUREADY_TORCHRUN": f"{sys.executable} {FAKE_TORCHRUN}",
           "FAKE_TORCHRUN_LOG": str(DATA / "nccl" / "socket_after_ofi_failed.txt"),
           "FAKE_TORCHRUN_RESULT": json.dumps(RESULT), "FAKE_TORCHRUN_ARGS": str(tmp_path / "calls.jsonl")}
    command = batch_probe.launcher_command(["launch", "--nodes", "2", "--gpus-per-node", "8", "--transport", "efa",
                                            "--instance-type", "p5.48xlarge"])
    done = subprocess.run([sys.executable, *command[1:]], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert core.find_report(done.stdout) is not None  # the node's probe (no GPU here: a failing one)
    report = nccl.find_report(done.stdout)
    assert report["transport"] == "socket" and report["hosts"] == RESULT["hosts"] and report["error"] is None
    assert "nccl_transport fail socket" in done.stderr  # the verdict in the job's own log
    (call,) = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert call["script"].endswith("/nccl.py") and "gpuready-" in call["script"]  # torchrun restarts the file


@pytest.mark.parametrize("timeout,run,rendezvous", [(1800, "1710", "600"), (300, "210", "210"), (30, "60", "60")])
def test_the_launchers_limits_end_before_the_run_does(timeout, run, rendezvous):
    assert batch_probe.launcher_limits(timeout) == ["--timeout", run, "--rendezvous-timeout", rendezvous]
