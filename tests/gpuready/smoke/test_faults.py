"""The smoke targets under faults: every exit path after a submit leaves no job running, and no fault submits twice.

A fault proxy (``fault_proxy.FaultProxy``) stands between gpuready and moto's server; its faults are HTTP errors,
resets, hangs, and Ctrl-C delivered while a call is in flight.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
import time

import pytest

from gpuready.cli import main
from gpuready.smoke import batch as target
from gpuready.smoke import kubernetes as kubernetes_target

from .fault_proxy import FaultProxy
from .moto_batch import jobs as _jobs, probe_definitions

LIVE = ("SUBMITTED", "PENDING", "RUNNABLE", "STARTING", "RUNNING")
HELD: dict = {}
"""moto's jobs, held RUNNABLE as Batch holds them when no capacity comes; ``stop`` is set by TerminateJob."""


@pytest.fixture
def faulty(aws, proxy, jobs_never_start):
    """moto with the stack's queue and jobs that stay RUNNABLE (``HELD``); boto3 goes through a fault proxy.
    Returns (moto's endpoint, outputs, proxy)."""
    global HELD
    HELD = jobs_never_start
    return (*aws, proxy)


def _live(endpoint: str) -> list[str]:
    """What a run left behind: jobs still billing (listed in SUBMITTED..RUNNING and never terminated) and the
    probe's job definitions still ACTIVE."""
    return [j["jobId"] for j in _jobs(endpoint) if j["status"] in LIVE and not HELD[j["jobId"]].stop] + \
        [d["jobDefinitionArn"] for d in probe_definitions(endpoint)]


def _run(outputs, **kwargs):
    defaults = {"poll": 0.05, "explain_after": 0.2, "log_wait": 0.2, "progress": io.StringIO(), "timeout": 2.0}
    return target.run(outputs, **{**defaults, **kwargs})


def test_describe_failing_for_good_still_terminates_the_job(faulty):
    endpoint, outputs, proxy = faulty
    proxy.plan = {"/v1/describejobs": ["always:client"]}
    with pytest.raises(Exception):
        _run(outputs)
    assert len(_jobs(endpoint)) == 1 and _live(endpoint) == []


def test_an_error_inside_the_diagnosis_still_terminates_the_job(faulty, monkeypatch):
    endpoint, outputs, _ = faulty
    monkeypatch.setattr(target.diagnose, "explain", lambda *a: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        _run(outputs, timeout=0.5)
    assert len(_jobs(endpoint)) == 1 and _live(endpoint) == []


@pytest.mark.parametrize("path", ["/v1/submitjob", "/v1/describejobs"])
def test_ctrl_c_while_a_call_is_in_flight_terminates_the_job(faulty, path):
    endpoint, outputs, proxy = faulty
    proxy.plan = {path: ["interrupt"]}
    result = _run(outputs, timeout=30)
    assert "interrupted" in {c.name: c.detail for c in result.checks}["job_finished"]
    assert len(_jobs(endpoint)) == 1 and _live(endpoint) == []


def test_a_lost_submit_answer_is_adopted_never_submitted_twice(faulty):
    endpoint, outputs, proxy = faulty
    proxy.plan = {"/v1/submitjob": ["reset-after", "reset-after"], "/v1/listjobs": ["5xx"]}
    _run(outputs, timeout=0.5, sleep=lambda s: None)
    assert len(_jobs(endpoint)) == 1 and _live(endpoint) == []


def test_keep_leaves_the_job_after_an_error(faulty):
    endpoint, outputs, proxy = faulty
    proxy.plan = {"/v1/describejobs": ["always:client"]}
    progress = io.StringIO()
    with pytest.raises(Exception):
        _run(outputs, keep=True, progress=progress)
    (job, definition) = _live(endpoint)  # the kept job, and the definition it runs from
    assert job == next(iter(HELD)) and "-gpuready-probe:" in definition
    assert f"aws batch deregister-job-definition --job-definition {definition}`" in progress.getvalue()


def _registered(endpoint: str) -> int:
    return len(probe_definitions(endpoint, "ACTIVE") + probe_definitions(endpoint, "INACTIVE"))


@pytest.mark.parametrize("faults", [
    {"/v1/registerjobdefinition": ["throttle", "5xx"]},
    {"/v1/registerjobdefinition": ["reset-after"]},  # registered, the answer lost: found by its run tag
    {"/v1/registerjobdefinition": ["hang"]},  # never answered, never registered: registered again
    {"/v1/registerjobdefinition": ["reset-after"], "/v1/describejobdefinitions": ["pass", "5xx"]},
    {"/v1/deregisterjobdefinition": ["5xx", "throttle", "reset"]},
    {"/v1/submitjob": ["client"]},
])
def test_faults_around_the_probe_definition_register_one_and_leave_none(faulty, faults):
    endpoint, outputs, proxy = faulty
    proxy.plan = {k: list(v) for k, v in faults.items()}
    refused = "/v1/submitjob" in faults
    with pytest.raises(Exception) if refused else contextlib.nullcontext():
        _run(outputs, timeout=0.5, sleep=lambda s: None)
    assert _registered(endpoint) == 1 and _live(endpoint) == [] and len(_jobs(endpoint)) == (0 if refused else 1)
    assert all(not remaining for remaining in proxy.plan.values())


@pytest.mark.parametrize("fault", ["client", "interrupt"])
def test_a_failed_register_submits_nothing_and_leaves_nothing(faulty, fault):
    endpoint, outputs, proxy = faulty
    proxy.plan = {"/v1/registerjobdefinition": [fault]}
    if fault == "interrupt":  # registered, then Ctrl-C before the answer: found by its run tag and deregistered
        assert "interrupted" in {c.name: c.detail for c in _run(outputs, timeout=5).checks}["job_finished"]
        assert _registered(endpoint) == 1
    else:
        with pytest.raises(Exception, match="ClientException"):
            _run(outputs, timeout=5)
    assert _jobs(endpoint) == [] and _live(endpoint) == []


def test_a_definition_that_cannot_be_deregistered_is_named_with_the_command(faulty):
    endpoint, outputs, proxy = faulty
    proxy.plan = {"/v1/deregisterjobdefinition": ["always:client"]}
    progress = io.StringIO()
    result = _run(outputs, timeout=0.3, progress=progress)
    (left,) = probe_definitions(endpoint)
    assert f"aws batch deregister-job-definition --job-definition {left['jobDefinitionArn']}" in progress.getvalue()
    assert result.verdict == "fail" and "job_finished" in {c.name for c in result.checks}


def test_a_hanging_endpoint_is_held_to_the_timeout(faulty):
    endpoint, outputs, proxy = faulty
    proxy.plan = {"/v1/describejobs": ["always:hang"]}
    started = time.monotonic()
    result = _run(outputs, timeout=3.0)
    assert time.monotonic() - started < 3.0 + 15
    assert _live(endpoint) == []
    detail = {c.name: c.detail for c in result.checks}["job_finished"]
    assert "not finished after 3 s; terminated; its status could not be read: ReadTimeoutError" in detail


# --- the CLI: one line, exit 2, 130 or 143, never a traceback or a leaked job ----------------------------------

@pytest.mark.parametrize("argv, says", [
    (["--timeout", "nan"], "finite number of seconds"), (["--timeout", "inf"], "finite number of seconds"),
    (["--timeout", "-5"], "finite number of seconds"), (["--timeout", "soon"], "not a number"),
    (["--gpus", "-1"], "at least 1 GPU"), (["--gpus", "0"], "at least 1 GPU"),
])
def test_absurd_timeouts_and_gpu_counts_are_refused(argv, says, capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["smoke", "--local", *argv])
    assert stopped.value.code == 2 and says in capsys.readouterr().err


@pytest.mark.parametrize("key, value", [("jobQueueArn", 5), ("jobVcpus", [1]), ("gpuNodeTaints", 3),
                                        ("gpuNodeLabels", ["a"]), ("kubeconfig", 7), ("platform", None)])
def test_outputs_of_the_wrong_type_name_the_output(key, value, tmp_path, capsys):
    outputs = {"platform": "aws-batch", "jobQueueArn": "q", "jobDefinitionArn": "d", key: value}
    (tmp_path / "o.json").write_text(json.dumps(outputs))
    code = main(["smoke", "--outputs", str(tmp_path / "o.json")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert value is None and "platform" in err or f"'{key}'" in err


def test_junit_into_a_missing_directory_is_refused_before_any_submit(faulty, tmp_path, capsys):
    endpoint, outputs, _ = faulty
    (tmp_path / "o.json").write_text(json.dumps(outputs))
    code = main(["smoke", "--outputs", str(tmp_path / "o.json"), "--junit", str(tmp_path / "no" / "r.xml")])
    assert code == 2 and "does not exist" in capsys.readouterr().err and _jobs(endpoint) == []


@pytest.mark.parametrize("fault, code, says", [("interrupt", 130, "interrupted"), ("sigterm", 143, "terminated")])
@pytest.mark.parametrize("path", ["/v1/submitjob", "/v1/describejobs"])
def test_ctrl_c_and_sigterm_in_a_call_terminate_the_job(faulty, tmp_path, capsys, fault, code, says, path):
    endpoint, outputs, proxy = faulty
    (tmp_path / "o.json").write_text(json.dumps(outputs))
    proxy.plan = {path: [fault]}
    got = main(["smoke", "--outputs", str(tmp_path / "o.json"), "--timeout", "20"])
    out, err = capsys.readouterr()
    assert _live(endpoint) == [] and len(_jobs(endpoint)) == 1
    if fault == "interrupt":  # Ctrl-C is the smoke test's own verdict: the job did not finish
        assert got == 1 and "interrupted; job terminated" in out
    else:
        assert got == code and f"gpuready: smoke: {says}" in err and "Traceback" not in err


def test_ctrl_c_during_plan_is_one_line(monkeypatch, capsys):
    import gpuready.plan

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(gpuready.plan, "plan", interrupted)
    assert main(["plan", "-s", "aws-batch"]) == 130
    assert capsys.readouterr().err == "gpuready: plan: interrupted\n"


def test_a_closed_stdout_pipe_prints_no_traceback():
    done = subprocess.run(f"{sys.executable} -m gpuready smoke --local --gpus 1 --timeout 60 --json | head -c 0",
                          shell=True, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr


def test_a_kubernetes_api_that_stops_answering_is_held_to_the_timeout():
    from .fake_kube import FakeKube
    from .fault_proxy import KUBE_ERRORS, kube_action

    server = FakeKube(phases=("Pending",))
    proxy = FaultProxy(server.server.server_address[1], classify=kube_action, errors=KUBE_ERRORS)
    proxy.plan = {"watch-pods": ["always:hang"]}
    outputs = {"platform": "eks", "kubeconfig": server.kubeconfig().replace(server.url, proxy.url)}
    started = time.monotonic()
    try:
        result = kubernetes_target.run(outputs, timeout=3.0, progress=io.StringIO())
    finally:
        proxy.close()
        server.close()
    assert time.monotonic() - started < 3.0 + 15
    assert not [key for key in server.objects if key[0] == "Job"]
    detail = {c.name: c.detail for c in result.checks}["job_finished"]
    assert "not finished after 3 s; deleted; its pod could not be watched: ReadTimeoutError" in detail


def test_a_kubernetes_create_that_lands_after_the_run_gave_up_is_deleted_too():
    from .fake_kube import FakeKube
    from .fault_proxy import KUBE_ERRORS, kube_action

    server = FakeKube(phases=("Pending",))
    proxy = FaultProxy(server.server.server_address[1], classify=kube_action, errors=KUBE_ERRORS)
    proxy.plan = {"create-job": ["late"]}
    outputs = {"platform": "eks", "kubeconfig": server.kubeconfig().replace(server.url, proxy.url)}
    try:
        with pytest.raises(Exception, match="timed out"):
            kubernetes_target.run(outputs, timeout=1.0, progress=io.StringIO())
        time.sleep(1.5)  # longer than any create could still be on its way
    finally:
        proxy.close()
        server.close()
    assert ("Job", server.created[-1][1]) in server.created and server.objects == {}


def test_sigterm_while_registering_the_probe_definition_leaves_nothing(faulty, tmp_path, capsys):
    endpoint, outputs, proxy = faulty
    (tmp_path / "o.json").write_text(json.dumps(outputs))
    proxy.plan = {"/v1/registerjobdefinition": ["sigterm"]}
    assert main(["smoke", "--outputs", str(tmp_path / "o.json"), "--timeout", "20"]) == 143
    assert "gpuready: smoke: terminated" in capsys.readouterr().err
    assert _registered(endpoint) == 1 and _live(endpoint) == [] and _jobs(endpoint) == []


# --- an API that cannot be reached, a credential command that fails: one line, held to --timeout ----------------

def _closed_port() -> int:
    from .moto_batch import free_port

    return free_port()  # nothing listens there: every connection is refused


def test_an_unreachable_kubernetes_api_is_one_line_within_the_timeout(fake_kube, tmp_path, capsys):
    server, outputs = fake_kube({"platform": "eks"})
    outputs["kubeconfig"] = outputs["kubeconfig"].replace(server.url, f"http://127.0.0.1:{_closed_port()}")
    (tmp_path / "o.json").write_text(json.dumps(outputs))
    code = main(["smoke", "--outputs", str(tmp_path / "o.json"), "--timeout", "1"])
    out, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and "cannot reach the API" in err, err
    assert "could not delete" not in err and out == ""  # the time it takes: test_time_limits.py


def test_a_failing_credential_command_is_one_line_without_the_clients_log(fake_kube, tmp_path):
    server, outputs = fake_kube({"platform": "eks"})
    plugin = tmp_path / "get-token"
    plugin.write_text("#!/bin/sh\necho 'Unable to locate credentials' >&2\nexit 255\n")
    plugin.chmod(0o755)
    kubeconfig = json.loads(outputs["kubeconfig"])
    kubeconfig["users"][0]["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                                               "command": str(plugin), "args": ["--cluster", "gpu"]}}
    (tmp_path / "o.json").write_text(json.dumps({**outputs, "kubeconfig": json.dumps(kubeconfig)}))
    done = subprocess.run([sys.executable, "-m", "gpuready", "smoke", "--outputs", str(tmp_path / "o.json"),
                           "--timeout", "5", "--trust-kubeconfig-exec"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "ERROR:root" not in done.stderr and "process returned 255. Unable to locate credentials" in done.stderr
    assert f"`{plugin} --cluster gpu`" in done.stderr and server.created == []


def test_a_job_that_cannot_be_deleted_is_named_once_and_the_verdict_says_so():
    from .fake_kube import FakeKube
    from .fault_proxy import KUBE_ERRORS, kube_action

    server = FakeKube(phases=("Pending",))
    proxy = FaultProxy(server.server.server_address[1], classify=kube_action, errors=KUBE_ERRORS)
    proxy.plan = {"create-job": ["interrupt"], "delete-job": ["always:client"]}
    outputs = {"platform": "eks", "kubeconfig": server.kubeconfig().replace(server.url, proxy.url)}
    progress = io.StringIO()
    try:
        result = kubernetes_target.run(outputs, timeout=20, progress=progress)
    finally:
        proxy.close()
        server.close()
    lines = progress.getvalue().splitlines()
    assert [line for line in lines if "could not delete" in line] == [
        f"gpuready: could not delete Job default/{result.job['name']} (ForbiddenException); Kubernetes removes the "
        f"Job 600 s after it ends: `kubectl -n default delete job,configmap {result.job['name']}`"]
    assert {c.name: c.detail for c in result.checks}["job_finished"] == "interrupted; could not delete Job"
    assert ("ConfigMap", result.job["name"]) not in server.objects
