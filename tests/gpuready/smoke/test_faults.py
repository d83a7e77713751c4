"""The smoke targets under faults: every exit path after a submit leaves no job running, and no fault submits twice.

A fault proxy (``moto_batch.FaultProxy``) stands between gpuready and moto's server; its faults are HTTP errors,
resets, hangs, and Ctrl-C delivered while a call is in flight.
"""

from __future__ import annotations

import io
import time

import boto3
import pytest
from moto.batch_simple.models import BatchSimpleBackend

from gpuready.smoke import batch as target

from .moto_batch import FaultProxy

LIVE = ("SUBMITTED", "PENDING", "RUNNABLE", "STARTING", "RUNNING")
HELD: dict = {}
"""moto's jobs, held RUNNABLE as Batch holds them when no capacity comes; ``stop`` is set by TerminateJob."""


@pytest.fixture
def faulty(aws, moto_port, monkeypatch):
    """moto with the stack's queue and jobs that stay RUNNABLE; boto3 goes through a fault proxy.
    Returns (moto's endpoint, outputs, proxy)."""
    endpoint, outputs = aws

    def hold(self, include_start_attempt, job):
        self.backend._jobs[job.job_id] = job
        job.status = "RUNNABLE"
        HELD[job.job_id] = job

    HELD.clear()
    monkeypatch.setattr(BatchSimpleBackend, "_mark_job_as_finished", hold)
    proxy = FaultProxy(moto_port)
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{proxy.port}")
    yield endpoint, outputs, proxy
    proxy.close()


def _jobs(endpoint: str) -> list[dict]:
    client = boto3.client("batch", region_name="us-east-1", endpoint_url=endpoint)
    return [j for status in (*LIVE, "SUCCEEDED", "FAILED")
            for j in client.list_jobs(jobQueue="gpu", jobStatus=status)["jobSummaryList"]]


def _live(endpoint: str) -> list[str]:
    """Jobs still billing: listed in SUBMITTED..RUNNING and never terminated."""
    return [j["jobId"] for j in _jobs(endpoint) if j["status"] in LIVE and not HELD[j["jobId"]].stop]


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
    with pytest.raises(Exception):
        _run(outputs, keep=True)
    assert len(_live(endpoint)) == 1


def test_a_hanging_endpoint_is_held_to_the_timeout(faulty):
    endpoint, outputs, proxy = faulty
    proxy.plan = {"/v1/describejobs": ["always:hang"]}
    started = time.monotonic()
    with pytest.raises(Exception):
        _run(outputs, timeout=3.0)
    assert time.monotonic() - started < 3.0 + 15
    assert _live(endpoint) == []
