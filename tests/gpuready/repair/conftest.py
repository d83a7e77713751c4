"""Fixtures of the repairers' tests: each cloud's fake API (fake_gce.py, fake_azure.py) behind the fault proxy
(tests/gpuready/smoke/fault_proxy.py), and the repairer pointed at the proxy with short timeouts and pauses."""

from __future__ import annotations

import pytest

from gpuready.repair import azure, gcp
from gpuready.smoke.retry import Backoff

from ..smoke.fault_proxy import FaultProxy
from . import fake_azure, fake_gce

FAST = {"timeout": 1.0, "backoff": Backoff(0.01, 0.05)}
"""Each try waits a second at most; pauses of 10 to 50 ms."""


def injected(error_body):
    """The fault proxy's ``error_body`` from a fake's (status, code, message): the message says the fault."""
    return lambda status, code, fault: error_body(status, code, f"injected {fault}")


@pytest.fixture
def gce(monkeypatch):
    """``start(**scenario)``: a :class:`~.fake_gce.FakeGce` playing ``scenario`` behind a fault proxy, and the GKE
    repairer going through it: (fake, proxy, repairer). Everything started is closed after the test."""
    started = []
    monkeypatch.setenv("GOOGLE_OAUTH_ACCESS_TOKEN", fake_gce.TOKEN)

    def start(**scenario):
        fake = fake_gce.FakeGce(**scenario)
        proxy = FaultProxy(fake.port, fake_gce.gce_action, fake_gce.GCE_ERRORS, injected(fake_gce.error_body))
        started.extend((proxy, fake))
        return fake, proxy, gcp.repairer({}, compute=f"{proxy.url}/compute/v1/", **FAST)
    yield start
    for server in started:
        server.close()


@pytest.fixture
def arm(monkeypatch):
    """``start(**scenario)``: a :class:`~.fake_azure.FakeAzure` behind a fault proxy, and the AKS repairer going
    through it: (fake, proxy, repairer)."""
    started = []
    monkeypatch.setenv("AZURE_ACCESS_TOKEN", fake_azure.TOKEN)

    def start(**scenario):
        fake = fake_azure.FakeAzure(**scenario)
        proxy = FaultProxy(fake.port, fake_azure.azure_action, fake_azure.AZURE_ERRORS,
                           injected(fake_azure.error_body))
        started.extend((proxy, fake))
        return fake, proxy, azure.repairer({}, management=proxy.url, **FAST)
    yield start
    for server in started:
        server.close()
