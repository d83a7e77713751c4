"""Fixtures shared by the smoke tests: one moto server per module, reset for each test; moto's scheduler held; a
fault proxy in front of moto; fake Kubernetes API servers."""

from __future__ import annotations

import pytest
import requests
from moto.batch_simple.models import BatchSimpleBackend
from moto.server import ThreadedMotoServer

from .fake_kube import FakeKube
from .fault_proxy import FaultProxy
from .moto_batch import build_queue, configure_moto, free_port


@pytest.fixture(scope="module")
def moto_port():
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield port
    server.stop()


@pytest.fixture
def aws(moto_port, monkeypatch):
    """A fresh moto with the stack's queue; AWS settings point boto3 at it. Returns (endpoint, outputs)."""
    endpoint = f"http://127.0.0.1:{moto_port}"
    requests.post(f"{endpoint}/moto-api/reset", timeout=120)  # a first reset loads every backend: slow under load
    configure_moto(endpoint)
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": endpoint}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    return endpoint, build_queue(endpoint)


@pytest.fixture
def jobs_never_start(monkeypatch):
    """moto's scheduler leaves jobs RUNNABLE, as Batch does when no capacity comes; returns moto's jobs."""
    held = {}

    def hold(self, include_start_attempt, job):
        self.backend._jobs[job.job_id] = job
        job.status = "RUNNABLE"
        held[job.job_id] = job

    monkeypatch.setattr(BatchSimpleBackend, "_mark_job_as_finished", hold)
    return held


@pytest.fixture
def fake_kube():
    """``start(outputs, **scenario)``: a :class:`FakeKube` playing ``scenario`` and ``outputs`` with its kubeconfig;
    every server started is closed after the test."""
    servers = []

    def start(outputs, **scenario):
        server = FakeKube(**scenario)
        servers.append(server)
        return server, {**outputs, "kubeconfig": server.kubeconfig()}
    yield start
    for server in servers:
        server.close()


@pytest.fixture
def proxy(aws, moto_port, monkeypatch):
    """A fault proxy (fault_proxy.py) in front of moto, which boto3 now goes through; set its ``plan``."""
    fault_proxy = FaultProxy(moto_port)
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{fault_proxy.port}")
    yield fault_proxy
    fault_proxy.close()


@pytest.fixture
def kube(fake_kube, request):
    """``start(**scenario)``: :func:`fake_kube` with the test module's ``EKS`` outputs: (server, outputs)."""
    return lambda **scenario: fake_kube(request.module.EKS, **scenario)
