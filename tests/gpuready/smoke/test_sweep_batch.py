"""The sweep on AWS Batch against moto's server on 127.0.0.1 (real HTTP, real boto3), faults injected by a proxy.

moto runs no containers and ends its jobs SUCCEEDED at once. Where a test needs what the jobs print, a stand-in for
the container runs each job's own command (the probe) with a replaying nvidia-smi on PATH, as if on an instance of
its own (its hostname set per job through a ``sitecustomize`` that the stand-in alone puts on PYTHONPATH), and ships
the output to the job's CloudWatch log stream, as the awslogs driver would.
"""

from __future__ import annotations

import io
import json
import os
import threading

import boto3
import pytest

from gpuready.cli import main
from gpuready.smoke import sweep_batch as target
from tests.gpuready.conftest import H100

from .moto_batch import aws_client, jobs as _jobs, probe_definitions, run_containers

SITECUSTOMIZE = '''import os
_name, _real = os.environ.get("FAKE_HOSTNAME"), os.uname
if _name:
    os.uname = lambda: os.uname_result((_real().sysname, _name, *_real()[2:]))
'''


HUNG = 300.0
"""``log_wait`` where the stand-in's logs must be read: the sweep reads them as soon as every report is there
(however slowly a loaded machine runs the probes), so only a stand-in that hangs waits this long."""


def _run(outputs, **kwargs):
    defaults = {"poll": 0.05, "log_wait": 5.0, "progress": io.StringIO()}
    return target.run(outputs, **{**defaults, **kwargs})


@pytest.fixture
def containers(aws, tmp_path, fake_smi):
    """Runs each new job's command as its container would on host ``host(job name)``, with ``faults(job name)``
    set on nvidia-smi's answer; returns the settings to fill in."""
    fake_smi(H100, row=0, gpus=4)  # the 4 GPUs of a g6.12xlarge (the model is the capture's)
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(SITECUSTOMIZE)
    settings = {"host": lambda name: f"ip-10-42-0-{name.rsplit('-', 1)[1]}", "faults": lambda name: {}}
    stop = threading.Event()

    def env(job):
        return {**os.environ, "PYTHONPATH": str(tmp_path / "site"), "FAKE_HOSTNAME": settings["host"](job["jobName"]),
                "FAKE_SMI_SET": ";".join(f"{k}={v}" for k, v in settings["faults"](job["jobName"]).items())}
    thread = threading.Thread(target=run_containers, args=(aws[0], stop, env), daemon=True)
    thread.start()
    yield settings
    stop.set()
    thread.join(10)


def _queue(endpoint, max_vcpus, types=("g6.12xlarge",), name="big"):
    """A second queue whose compute environment has ``max_vcpus``; the outputs of a stack using it."""
    batch, ec2, iam = (aws_client(s, endpoint) for s in ("batch", "ec2", "iam"))
    profile = iam.get_instance_profile(InstanceProfileName="ecs")["InstanceProfile"]["Arn"]
    subnet = ec2.describe_subnets()["Subnets"][0]["SubnetId"]
    group = ec2.describe_security_groups(Filters=[{"Name": "group-name", "Values": ["gpu"]}])["SecurityGroups"][0]
    env = batch.create_compute_environment(
        computeEnvironmentName=name, type="MANAGED", state="ENABLED",
        serviceRole=iam.get_role(RoleName="batch")["Role"]["Arn"],
        computeResources={"type": "EC2", "minvCpus": 0, "maxvCpus": max_vcpus, "instanceTypes": list(types),
                          "subnets": [subnet], "securityGroupIds": [group["GroupId"]],
                          "instanceRole": profile})
    queue = batch.create_job_queue(jobQueueName=name, state="ENABLED", priority=1, computeEnvironmentOrder=[
        {"order": 1, "computeEnvironment": env["computeEnvironmentArn"]}])
    return queue["jobQueueArn"]


def test_each_instance_gets_a_row_from_its_probe_report(aws, containers, monkeypatch):
    endpoint, outputs = aws
    submitted, real = [], target.batch.clients

    def clients(*args):
        made = real(*args)
        submit = made["submit"].submit_job
        made["submit"].submit_job = lambda **request: submitted.append(request) or submit(**request)
        return made
    monkeypatch.setattr(target.batch, "clients", clients)
    containers["faults"] = lambda name: {"ecc.errors.uncorrected.volatile.total": "2"} if name.endswith("-1") else {}
    result = _run(outputs, nodes=3, log_wait=HUNG)
    assert [(r.node, r.verdict) for r in result.rows] == [("ip-10-42-0-0", "pass"), ("ip-10-42-0-1", "fail"),
                                                           ("ip-10-42-0-2", "pass")]
    assert "ecc_uncorrected" in result.rows[1].detail and result.rows[1].health == "fail"
    assert {r.gpu_model for r in result.rows} == {"NVIDIA H100 80GB HBM3"} and result.verdict == "fail"
    jobs = _jobs(endpoint)
    assert len(jobs) == 3 and {j["jobName"] for j in jobs} == {r.job["name"] for r in result.rows}
    client = aws_client("batch", endpoint)
    for request in submitted:  # a whole g6.12xlarge each (moto does not describe the overrides back)
        asks = {r["type"]: r["value"] for r in request["containerOverrides"]["resourceRequirements"]}
        assert asks == {"GPU": "4", "VCPU": "48", "MEMORY": "186777"}
    assert len(submitted) == 3
    (used,) = probe_definitions(endpoint, "INACTIVE")  # one definition for the run, deregistered after it
    assert probe_definitions(endpoint) == [] and {d["jobDefinition"] for d in client.describe_jobs(
        jobs=[j["jobId"] for j in jobs])["jobs"]} == {used["jobDefinitionArn"]}
    assert result.job["describe_calls"] == result.job["poll_rounds"]  # 3 ids: one call a round


def test_a_second_job_on_an_instance_already_swept_is_a_duplicate_row(aws, containers):
    containers["host"] = lambda name: "ip-10-42-0-9"
    result = _run(aws[1], nodes=2, log_wait=HUNG)
    assert [r.verdict for r in result.rows] == ["pass", "duplicate"] and result.verdict == "pass"
    assert "already swept by" in result.rows[1].detail and len(result.counted) == 1


@pytest.mark.parametrize("max_vcpus, jobs", [(200, 4), (48 * 20, 16)])
def test_by_default_as_many_instances_as_max_vcpus_allows_at_most_16(aws, max_vcpus, jobs):
    endpoint, outputs = aws
    queue = _queue(endpoint, max_vcpus)
    result = _run({**outputs, "jobQueueArn": queue, "jobQueueName": "big"}, log_wait=0.1)
    assert len(result.rows) == jobs == len(_jobs(endpoint, "big")) and result.job["instance_type"] == "g6.12xlarge"


def test_max_vcpus_below_one_instance_is_a_mistake_to_fix(aws, tmp_path, capsys):
    endpoint, outputs = aws
    queue = _queue(endpoint, 40)
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps({**outputs, "jobQueueArn": queue, "jobQueueName": "big"}))
    assert main(["sweep", "--outputs", str(path)]) == 2
    assert "allow no whole g6.12xlarge (48 vCPUs)" in capsys.readouterr().err and _jobs(endpoint, "big") == []


def test_timeout_terminates_every_job(aws, jobs_never_start):
    result = _run(aws[1], nodes=3, timeout=0.5)
    assert len(jobs_never_start) == 3 and all(j.stop for j in jobs_never_start.values())
    assert {j.job_stopped_reason for j in jobs_never_start.values()} == {"gpuready sweep: timed out"}
    assert all(r.verdict == "fail" and "not finished after 0.5 s (RUNNABLE)" in r.detail for r in result.rows)
    assert probe_definitions(aws[0]) == []


def test_ctrl_c_terminates_every_job(aws, jobs_never_start):
    calls = []

    def sleep(seconds):
        calls.append(seconds)
        if len(calls) == 2:
            raise KeyboardInterrupt

    result = _run(aws[1], nodes=2, sleep=sleep, timeout=60)
    assert len(jobs_never_start) == 2 and all(j.stop for j in jobs_never_start.values())
    assert {j.job_stopped_reason for j in jobs_never_start.values()} == {"gpuready sweep: interrupted"}
    assert result.verdict == "fail" and probe_definitions(aws[0]) == []


@pytest.mark.parametrize("faults", [
    {"/v1/submitjob": ["throttle", "reset-after", "5xx"]},  # the second job's submit lands, its answer lost
    {"/v1/registerjobdefinition": ["reset-after"], "/v1/describejobs": ["throttle", "5xx", "reset"]},
])
def test_faults_never_submit_a_job_twice(aws, proxy, faults):
    endpoint, outputs = aws
    proxy.plan = {k: list(v) for k, v in faults.items()}
    result = _run(outputs, nodes=3, log_wait=0.1, sleep=lambda s: None)
    assert len(_jobs(endpoint)) == 3 and len(probe_definitions(endpoint, "INACTIVE")) == 1
    assert [r.job["status"] for r in result.rows] == ["SUCCEEDED"] * 3
    assert all(not remaining for remaining in proxy.plan.values())


def test_an_error_after_a_submit_terminates_the_jobs_already_submitted(aws, jobs_never_start, monkeypatch):
    real = target.batch.Poller.follow

    def broken(self, *args, **kwargs):
        raise RuntimeError("lost track")
    monkeypatch.setattr(target.batch.Poller, "follow", broken)
    with pytest.raises(RuntimeError):
        _run(aws[1], nodes=2)
    assert len(jobs_never_start) == 2 and all(j.stop for j in jobs_never_start.values())
    assert probe_definitions(aws[0]) == [] and real is not broken


def test_quarantine_on_batch_is_a_mistake_to_fix(aws, tmp_path, capsys):
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(aws[1]))
    for option in ("--quarantine", "--taint-failing"):  # the second is the first's older name
        assert main(["sweep", "--outputs", str(path), option]) == 2
        assert "--quarantine taints and labels Kubernetes nodes" in capsys.readouterr().err and _jobs(aws[0]) == []


def test_repair_on_batch_is_a_mistake_to_fix(aws, tmp_path, capsys):
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(aws[1]))
    for options in (["--repair"], ["--repair", "--apply"]):
        assert main(["sweep", "--outputs", str(path), *options]) == 2
        err = capsys.readouterr().err
        assert "--repair asks the platform to reboot or replace a failing Kubernetes node" in err
        assert len(err.strip().splitlines()) == 1 and _jobs(aws[0]) == []


class _Counted:
    """DescribeJobs calls as they leave boto3 (botocore's before-send event: one per HTTP request)."""

    def __init__(self, client):
        self.sent, self.sizes = 0, []
        client.meta.events.register("before-send.batch.DescribeJobs", self._send)
        client.meta.events.register("before-parameter-build.batch.DescribeJobs", self._params)

    def _send(self, **kwargs):
        self.sent += 1

    def _params(self, params, **kwargs):
        self.sizes.append(len(params["jobs"]))


def test_the_poller_asks_100_ids_a_call_and_only_for_unfinished_jobs(aws, jobs_never_start):
    endpoint, outputs = aws
    client = boto3.client("batch", region_name="us-east-1", endpoint_url=endpoint)
    ids = [client.submit_job(jobName=f"j{i}", jobQueue="gpu", jobDefinition=outputs["jobDefinitionArn"])["jobId"]
           for i in range(250)]
    counted, poller = _Counted(client), target.batch.Poller(client)
    assert set(poller.poll(ids)) == set(ids)
    assert counted.sizes == [100, 100, 50] and counted.sent == poller.calls == 3
    ended = iter([ids[:180], ids[180:]])

    def sleep(seconds):  # between rounds: 180 jobs end, then the other 70
        for job_id in next(ended):
            jobs_never_start[job_id].status = "SUCCEEDED"
    jobs = poller.follow(ids, timeout=60, poll=0.01, sleep=sleep)
    assert {j["status"] for j in jobs.values()} == {"SUCCEEDED"} and len(jobs) == 250
    assert counted.sizes[3:] == [100, 100, 50, 100, 100, 50, 70]  # the 70 not finished in the second round
    assert poller.calls == counted.sent == 10 and poller.polled == 250 + 250 + 250 + 70
