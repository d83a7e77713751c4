"""The AWS Batch target against moto's server on 127.0.0.1 (real HTTP, real boto3), with faults injected by a proxy.

moto runs no containers: its jobs succeed (or fail) at once, without output. Where a test needs a job that runs
the probe, a stand-in for the container runs the job's own command in a subprocess, with a replaying nvidia-smi on
PATH, and writes its output to the job's CloudWatch log stream, as the awslogs driver would. Where a test needs a
job that never finishes, moto's scheduler is told to leave it waiting.
"""

from __future__ import annotations

import ast
import base64
import io
import json
import re
import threading
import zlib
from pathlib import Path

import boto3
import pytest

from gpuready.cli import main
from gpuready.errors import UserError
from gpuready.probe import burn, core
from gpuready.smoke import batch as target
from gpuready.smoke import batch_probe
from tests.gpuready.conftest import H100

from .moto_batch import LOG_GROUP, jobs as _jobs, probe_definitions, run_containers


def _batch(endpoint):
    return boto3.client("batch", region_name="us-east-1", endpoint_url=endpoint)


def _run(outputs, **kwargs):
    defaults = {"poll": 0.05, "explain_after": 0.2, "log_wait": 3.0, "progress": io.StringIO()}
    return target.run(outputs, **{**defaults, **kwargs})


@pytest.fixture
def container(aws):
    stop = threading.Event()
    thread = threading.Thread(target=run_containers, args=(aws[0], stop), daemon=True)
    thread.start()
    yield
    stop.set()
    thread.join(5)


def test_job_runs_the_probe_and_its_report_is_read_from_cloudwatch(aws, container, fake_smi):
    fake_smi(H100, row=0)
    endpoint, outputs = aws
    result = _run(outputs, log_wait=300.0)  # read as soon as the stand-in ran the probe, however slow the machine
    assert result.verdict == "pass", result.checks
    names = {c.name: c.verdict for c in result.checks}
    assert names["job_status"] == "pass" and names["probe_report"] == "pass" and names["gpu_count"] == "pass"
    assert result.job["log_group"] == LOG_GROUP and result.probe.gpus[0]["name"] == "NVIDIA H100 80GB HBM3"
    (job,) = _jobs(endpoint)
    detail = _batch(endpoint).describe_jobs(jobs=[job["jobId"]])["jobs"][0]
    assert detail["container"]["command"][:2] == ["python3", "-c"] and job["jobName"].startswith("gpuready-smoke-")
    (used,) = probe_definitions(endpoint, "INACTIVE")  # registered for the run, deregistered after it
    assert detail["jobDefinition"] == used["jobDefinitionArn"] == result.job["probe_definition"]
    assert used["jobDefinitionName"] == "gpu-smoke-gpuready-probe" and probe_definitions(endpoint) == []
    assert used["containerProperties"]["jobRoleArn"].endswith(":role/batch")  # the stack's definition, but the command
    assert used["tags"]["gpuready:run"] == job["jobName"]
    assert detail["timeout"] == {"attemptDurationSeconds": 1800}  # --timeout: Batch stops it should gpuready lose it


def test_succeeded_job_without_a_probe_report_fails(aws):
    endpoint, outputs = aws
    result = _run(outputs, log_wait=0.3)
    checks = {c.name: c for c in result.checks}
    assert checks["job_status"].verdict == "pass" and checks["probe_report"].verdict == "fail"
    assert result.verdict == "fail" and len(_jobs(endpoint)) == 1


def test_failed_job_fails_with_its_reason(aws, monkeypatch):
    monkeypatch.setenv("MOTO_SIMPLE_BATCH_FAIL_AFTER", "0")  # moto runs in this process
    result = _run(aws[1], log_wait=0.3)
    assert {c.name: c.verdict for c in result.checks}["job_status"] == "fail" and result.verdict == "fail"


def test_a_job_no_instance_can_hold_is_diagnosed_and_never_submitted(aws):
    endpoint, outputs = aws
    result = _run(outputs, gpus=8)
    assert result.verdict == "fail" and _jobs(endpoint) == []
    (why,) = result.diagnosis
    assert "asks for 8 GPU" in why and "g6.12xlarge: 4 GPU" in why and "RUNNABLE forever" in why


@pytest.mark.parametrize("job, says", [({"jobVcpus": 64}, "1 GPU, 64 vCPU, 8192 MiB"),
                                       ({"jobMemoryMib": 190_000}, "1 GPU, 2 vCPU, 190000 MiB")])
def test_a_job_whose_vcpus_or_memory_no_instance_can_hold_is_never_submitted(aws, job, says):
    """The stack's jobVcpus/jobMemoryMib (its job definition's) against the queue's largest type, g6.12xlarge: 48
    vCPUs, 186,777 MiB usable; 1 GPU fits everywhere."""
    endpoint, outputs = aws
    result = _run({**outputs, **job})
    assert result.verdict == "fail" and _jobs(endpoint) == []
    assert {c.name: c.verdict for c in result.checks}["job_placeable"] == "fail"
    (why,) = result.diagnosis
    assert f"asks for {says}" in why and "g6.12xlarge: 4 GPU, 48 vCPU, 186777 MiB usable" in why


def test_outputs_without_the_jobs_size_name_the_missing_output(aws):
    outputs = {k: v for k, v in aws[1].items() if k != "jobMemoryMib"}
    with pytest.raises(UserError, match="lack jobMemoryMib"):
        _run(outputs)
    assert _jobs(aws[0]) == []


def test_timeout_terminates_the_job_in_moto_and_explains_it(aws, jobs_never_start):
    result = _run(aws[1], timeout=0.5)
    (job,) = jobs_never_start.values()
    assert job.stop is True and job.job_stopped_reason == "gpuready smoke: timed out"
    checks = {c.name: c for c in result.checks}
    assert checks["job_finished"].verdict == "fail" and "terminated" in checks["job_finished"].detail
    assert result.diagnosis and result.verdict == "fail"


def test_keep_leaves_the_job_alone(aws, jobs_never_start):
    _run(aws[1], timeout=0.3, keep=True)
    (job,) = jobs_never_start.values()
    assert job.stop is False


def test_ctrl_c_terminates_the_job(aws, jobs_never_start):
    calls = []

    def sleep(seconds):
        calls.append(seconds)
        if len(calls) == 2:
            raise KeyboardInterrupt

    result = _run(aws[1], sleep=sleep, timeout=60)
    (job,) = jobs_never_start.values()
    assert job.stop is True and job.job_stopped_reason == "gpuready smoke: interrupted"
    assert "interrupted" in {c.name: c.detail for c in result.checks}["job_finished"]


def _statements(source: bytes) -> str:
    """The module's statements, bare strings (docstrings) left out, as ``ast.dump`` writes them."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list):
                kept = [s for s in block if not (isinstance(s, ast.Expr) and isinstance(getattr(s.value, "value", None), str))]
                setattr(node, field, kept if len(kept) == len(block) else kept or [ast.Pass()])
    return ast.dump(tree)


def test_the_probe_definition_carries_the_probe_and_its_burn_within_three_quarters_of_the_limit(aws):
    endpoint, outputs = aws
    (stack,) = _batch(endpoint).describe_job_definitions(jobDefinitions=[outputs["jobDefinitionArn"]])["jobDefinitions"]
    request = batch_probe.definition(stack, gpus=8, full=True, tags={"gpuready:smoke": "true",
                                                                     "gpuready:run": "gpuready-smoke-0123456789ab"})
    assert batch_probe.size(request) <= 0.75 * batch_probe.DEFINITION_LIMIT, batch_probe.size(request)
    code = request["containerProperties"]["command"][2]
    (packed,) = re.findall(r"b85decode\(('[^']*')\)", code)
    carried = json.loads(zlib.decompress(base64.b85decode(ast.literal_eval(packed))))
    assert sorted(carried) == ["burn", "core"]
    for name, module in (("core", core), ("burn", burn)):
        assert carried[name] == batch_probe.shipped(module.__file__).decode()
        # the same code, less docstrings
        assert _statements(carried[name].encode()) == _statements(Path(module.__file__).read_bytes())
        assert '"""' not in carried[name] and "# ---" not in carried[name]
    assert "--full" in code and "'8'" in code
    assert {k: v for k, v in request["containerProperties"].items() if k != "command"} == \
        {k: v for k, v in stack["containerProperties"].items() if k != "command"}
    quick = batch_probe.probe_command(gpus=1, full=False)[2]
    (packed,) = re.findall(r"b85decode\(('[^']*')\)", quick)
    assert list(json.loads(zlib.decompress(base64.b85decode(ast.literal_eval(packed))))) == ["core"]


def test_the_submitted_job_overrides_only_gpus_and_environment(aws, monkeypatch):
    calls, real = [], target.clients

    def clients(*args):
        made = real(*args)
        submit = made["submit"].submit_job
        made["submit"].submit_job = lambda **request: calls.append(request) or submit(**request)
        return made

    monkeypatch.setattr(target, "clients", clients)
    _run(aws[1], log_wait=0.1)
    (request,) = calls
    assert set(request["containerOverrides"]) == {"resourceRequirements", "environment"}
    assert len(json.dumps(request["containerOverrides"])) < 200


def test_cli_reads_outputs_from_a_file(aws, tmp_path, capsys):
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps(aws[1]))
    assert main(["smoke", "--outputs", str(outputs), "--gpus", "8"]) == 1
    out = capsys.readouterr().out
    assert "Why the job did not start:" in out and "Verdict: FAIL" in out


# --- faults between gpuready and AWS ------------------------------------------------------------------------------

@pytest.mark.parametrize("faults", [
    {"/v1/submitjob": ["throttle", "5xx"]},
    {"/v1/submitjob": ["reset-after"]},          # the job was created, the answer lost
    {"/v1/submitjob": ["throttle", "reset-after"], "/v1/listjobs": ["5xx"]},
    {"/v1/describejobs": ["throttle", "5xx", "reset", "throttle"]},
    {"/v1/describejobqueues": ["5xx"], "/v1/describecomputeenvironments": ["throttle"]},
])
def test_faults_never_submit_twice_and_keep_the_verdict(aws, proxy, faults):
    endpoint, outputs = aws
    proxy.plan = {k: list(v) for k, v in faults.items()}
    result = _run(outputs, log_wait=0.3, sleep=lambda s: None)
    assert len(_jobs(endpoint)) == 1  # exactly one job, whatever the faults
    checks = {c.name: c.verdict for c in result.checks}
    assert checks["job_status"] == "pass" and checks["probe_report"] == "fail"  # moto's jobs print nothing
    assert all(not remaining for remaining in proxy.plan.values())  # every fault was met


def test_faults_while_terminating_still_terminate(aws, proxy, jobs_never_start):
    proxy.plan = {"/v1/terminatejob": ["5xx", "throttle"]}
    result = _run(aws[1], timeout=0.3)
    (job,) = jobs_never_start.values()
    assert job.stop is True and result.verdict == "fail"


def test_progress_is_shown_while_waiting(aws):
    progress = io.StringIO()
    _run(aws[1], log_wait=0.1, progress=progress)
    assert "SUCCEEDED after" in progress.getvalue()


def test_starting_too_long_compares_the_image_with_the_root_volume(aws):
    endpoint, _ = aws
    session = boto3.session.Session(region_name="us-east-1")
    ec2, ecr = session.client("ec2", endpoint_url=endpoint), session.client("ecr", endpoint_url=endpoint)
    batch = _batch(endpoint)
    template = ec2.create_launch_template(LaunchTemplateName="small-root", LaunchTemplateData={
        "BlockDeviceMappings": [{"DeviceName": "/dev/xvda", "Ebs": {"VolumeSize": 30, "Encrypted": True}}]})
    env = batch.describe_compute_environments()["computeEnvironments"][0]
    env["computeResources"]["launchTemplate"] = {
        "launchTemplateId": template["LaunchTemplate"]["LaunchTemplateId"], "version": "1"}
    repo = ecr.create_repository(repositoryName="train")["repository"]
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                "config": {"mediaType": "application/vnd.docker.container.image.v1+json", "size": 12 * 2**30,
                           "digest": "sha256:" + "1" * 64},
                "layers": [{"mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip", "size": 1,
                            "digest": "sha256:" + "2" * 64}]}
    ecr.put_image(repositoryName="train", imageManifest=json.dumps(manifest), imageTag="v1")
    image = f"{repo['registryId']}.dkr.ecr.us-east-1.amazonaws.com/train:v1"
    from gpuready.smoke import diagnose

    reasons = diagnose.starting({"container": {"image": image}}, [env], ec2, ecr)
    assert any("12.0 GiB compressed" in r and "30 GiB" in r and "no space left" in r for r in reasons)
    hub = diagnose.starting({"container": {"image": "pytorch/pytorch:2.5.1"}}, [env], ec2, ecr)
    assert any("not in ECR" in r and "30 GiB" in r for r in hub)


def test_outputs_naming_a_missing_queue_are_a_user_mistake(aws, tmp_path, capsys):
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({**aws[1], "jobQueueArn": aws[1]["jobQueueArn"].replace("/gpu", "/gone"),
                                   "jobQueueName": "gone"}))
    assert main(["smoke", "--outputs", str(outputs)]) == 2
    assert "job-queue/gone does not exist in us-east-1" in capsys.readouterr().err
    assert _jobs(aws[0]) == []


def test_outputs_naming_a_missing_job_definition_are_a_user_mistake(aws, tmp_path, capsys):
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({**aws[1], "jobDefinitionArn": aws[1]["jobDefinitionArn"].replace(":1", ":7")}))
    assert main(["smoke", "--outputs", str(outputs)]) == 2
    assert "job-definition/gpu-smoke:7 does not exist in us-east-1" in capsys.readouterr().err
    assert _jobs(aws[0]) == [] and probe_definitions(aws[0]) == []


def test_a_job_stuck_runnable_on_an_ended_reservation_in_another_zone_is_told_why(aws, jobs_never_start):
    """The stack's ``gpuReservations`` (what the component exports on a reservation) read by the diagnosis."""
    ended = {"pool": "gpu-gpu-on-demand", "kind": "odcr", "target": "cr-0123456789abcdef0", "only": True,
             "end": "2020-01-01T00:00:00Z", "zone": "us-east-1c", "subnetZones": ["us-east-1a", "us-east-1b"]}
    result = _run({**aws[1], "gpuReservations": [ended]}, timeout=0.6)
    said = "\n".join(result.diagnosis)
    assert "reservation (odcr cr-0123456789abcdef0) ended at 2020-01-01T00:00:00Z" in said
    assert "is in us-east-1c, and the pool's subnets are in us-east-1a, us-east-1b" in said
