"""``--timeout`` held: an API that refuses connections or never answers ends the run within 2 s of ``--timeout``;
what the run created is then cleaned up within the target's grace (Batch: ``--timeout`` plus 15 s in all).

Timed inside the process, with the clients' modules loaded beforehand (loading code, like Python's start-up, is the
machine's speed, not the API's): from the CLI's ``main`` where nothing gets through, else from the call that starts
what ``--timeout`` bounds (the first Kubernetes create; the Batch SubmitJob, the job's wait starting once it is
answered), as the fault proxy saw it, to what the proxy saw next or to the CLI's exit code. Every bound is the
promise plus nothing: the runs wait on sockets, never on the CPU, so a loaded machine moves them by milliseconds.
"""

from __future__ import annotations

import json
import time

import pytest

from gpuready.cli import main
from gpuready.smoke import batch, kubernetes

from .fault_proxy import KUBE_ERRORS, FaultProxy, kube_action
from .moto_batch import free_port, probe_definitions
from .moto_batch import jobs as _jobs

HELD = 2.0
"""How far past ``--timeout`` the run may give up on an API (the issue's promise)."""
BATCH_CLEANUP = 15.0
"""How far past ``--timeout`` a Batch run may end, its cleanup done (the promise)."""


@pytest.fixture(autouse=True, scope="module")
def loaded():
    """The clients' modules, loaded outside the timed window."""
    import boto3
    import kubernetes.client

    kubernetes.client.CoreV1Api, kubernetes.client.BatchV1Api, kubernetes.client.CustomObjectsApi  # noqa: B018
    for service in ("batch", "logs"):
        boto3.session.Session(region_name="us-east-1").client(service, endpoint_url="http://127.0.0.1:9")


def _smoke(outputs: dict, tmp_path, timeout: float) -> tuple[int, float]:
    """``gpuready smoke --outputs ... --timeout timeout``: (exit code, seconds taken)."""
    (tmp_path / "o.json").write_text(json.dumps(outputs))
    started = time.monotonic()
    code = main(["smoke", "--outputs", str(tmp_path / "o.json"), "--timeout", f"{timeout:g}"])
    return code, time.monotonic() - started


def _refused_url() -> str:
    return f"http://127.0.0.1:{free_port()}"  # nothing listens there: every connection is refused


@pytest.fixture
def first_connection(monkeypatch) -> list[float]:
    """When the run first connects (``time.monotonic``), filled in as it does: the work before it (reading the
    outputs, making the clients: 0.2 s here) is the machine's, which no timeout shortens (3.4 s on a machine loaded
    to a tenth of a core); from there on the run is held to its deadline."""
    import urllib3.util.connection

    seen: list[float] = []
    connect = urllib3.util.connection.create_connection

    def noted(*args, **kwargs):
        seen.append(time.monotonic())
        return connect(*args, **kwargs)
    monkeypatch.setattr(urllib3.util.connection, "create_connection", noted)
    return seen


# --- Kubernetes ---------------------------------------------------------------------------------------------------

def test_a_kubernetes_api_that_refuses_connections_is_held_to_the_timeout(fake_kube, tmp_path, capsys,
                                                                          first_connection):
    server, outputs = fake_kube({"platform": "eks"})
    outputs["kubeconfig"] = outputs["kubeconfig"].replace(server.url, _refused_url())
    before = time.monotonic()
    code, took = _smoke(outputs, tmp_path, 1)
    assert code == 2 and "cannot reach the API" in capsys.readouterr().err
    first = first_connection[0] - before
    assert took <= max(1, first) + HELD, f"--timeout 1 took {took:.1f} s (first connection at {first:.1f} s)"


@pytest.mark.parametrize("timeout", [1, 4])
def test_a_kubernetes_api_that_never_answers_is_held_to_the_timeout(tmp_path, capsys, timeout):
    from .fake_kube import FakeKube

    server = FakeKube(phases=("Pending",))
    proxy = FaultProxy(server.server.server_address[1], classify=kube_action, errors=KUBE_ERRORS)
    proxy.plan = {"*": ["always:hang"]}  # every connection accepted, no call ever answered
    outputs = {"platform": "eks", "kubeconfig": server.kubeconfig().replace(server.url, proxy.url)}
    try:
        code, _ = _smoke(outputs, tmp_path, timeout)
        ended = time.monotonic()
    finally:
        proxy.close()
        server.close()
    err = capsys.readouterr().err
    assert code == 2 and "cannot reach the API or it did not answer" in err
    (started, *_) = _seen(proxy, lambda name: name.startswith("create-"))
    (deleting, *_) = _seen(proxy, lambda name: name.startswith("delete-"))
    assert deleting - started <= timeout + HELD, f"gave up on the creates after {deleting - started:.1f} s"
    took = ended - started
    assert took <= timeout + HELD + kubernetes.CLEANUP_GRACE, f"--timeout {timeout} took {took:.1f} s"
    assert "could not delete Job" in err  # the create may have landed: the user is told how to delete it


def _seen(proxy: FaultProxy, named) -> list[float]:
    """When the proxy saw each call whose name ``named`` accepts."""
    return [at for (name, _), at in zip(proxy.seen, proxy.when) if named(name)]


# --- AWS Batch ----------------------------------------------------------------------------------------------------

def test_a_batch_api_that_refuses_connections_is_held_to_the_timeout(aws, monkeypatch, tmp_path, capsys,
                                                                     first_connection):
    monkeypatch.setenv("AWS_ENDPOINT_URL", _refused_url())
    before = time.monotonic()
    code, took = _smoke(aws[1], tmp_path, 1)
    assert code == 2 and "cannot reach the API" in capsys.readouterr().err
    first = first_connection[0] - before
    assert took <= max(1, first) + HELD, f"--timeout 1 took {took:.1f} s (first connection at {first:.1f} s)"


@pytest.mark.parametrize("timeout", [1, 10])
def test_a_batch_api_that_never_answers_is_held_to_the_timeout(proxy, tmp_path, capsys, timeout):
    endpoint = proxy.url
    proxy.plan = {"*": ["always:hang"]}
    before = time.monotonic()
    code, took = _smoke(_outputs(endpoint), tmp_path, timeout)
    assert code == 2 and "cannot reach the API or it did not answer" in capsys.readouterr().err
    # The work before the first call (reading the outputs, making the clients: 0.2 s here) is the machine's, which no
    # timeout shortens: on a machine loaded to a tenth of a core it took 2.8 s. From the first call on, the run is
    # held: it gives up within HELD of its deadline, or of its first call when that came after it.
    first = proxy.when[0] - before
    assert took <= max(timeout, first) + HELD, f"--timeout {timeout} took {took:.1f} s (first call at {first:.1f} s)"


def _outputs(endpoint: str) -> dict:
    from .moto_batch import LOG_GROUP

    return {"platform": "aws-batch", "jobQueueArn": "arn:aws:batch:us-east-1:123456789012:job-queue/gpu",
            "jobDefinitionArn": "arn:aws:batch:us-east-1:123456789012:job-definition/gpu-smoke:1", "jobVcpus": 2,
            "jobMemoryMib": 8192, "logGroupName": LOG_GROUP}


@pytest.mark.parametrize("cleanup, timeout", [("answered", 3.0), ("unanswered", 20.0)])
def test_a_describe_jobs_that_never_answers_is_held_to_the_timeout_and_the_cleanup_to_its_15_s(
        aws, proxy, jobs_never_start, tmp_path, capsys, cleanup, timeout):
    """At ``--timeout 20`` each call may take 3 s to connect and 5 s to read: the last DescribeJobs, and each
    cleanup call, must be cut to what is left."""
    endpoint, outputs = aws
    proxy.plan = {"/v1/describejobs": ["always:hang"]}
    if cleanup == "unanswered":  # the cleanup's calls too: each is tried until the cleanup's time is spent
        proxy.plan.update({call: ["always:hang"] for call in ("/v1/terminatejob", "/v1/deregisterjobdefinition",
                                                              "/v1/listjobs")})
    code, _ = _smoke(outputs, tmp_path, timeout)
    ended = time.monotonic()
    out, err = capsys.readouterr()
    assert code == 1 and f"not finished after {timeout:g} s" in out
    (submitted,) = _seen(proxy, lambda name: name == "/v1/submitjob")
    (terminating, *_) = _seen(proxy, lambda name: name == "/v1/terminatejob")
    assert terminating - submitted <= timeout + HELD, f"gave up polling after {terminating - submitted:.1f} s"
    took = ended - submitted
    assert took <= timeout + BATCH_CLEANUP, f"--timeout {timeout:g} took {took:.1f} s"
    if cleanup == "answered":
        assert all(job.stop for job in jobs_never_start.values()) and probe_definitions(endpoint) == []
    else:  # the user is told what is left and how to remove it
        assert "aws batch terminate-job --job-id" in err + out and "aws batch deregister-job-definition" in err + out
    assert len(_jobs(endpoint)) == 1
