"""The benches measure what they say: the plan bench's floor names real classes (a wrong path would make the floor
fail, or time the wrong thing); the sweep's polling bench counts the sweep's own poller's calls through moto."""

from __future__ import annotations

import importlib
import importlib.util
import sys

import pytest

from tests.conftest import ROOT


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("plan_bench", ROOT / "bench" / "plan_bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("stack", ["aws-batch", "eks", "gke", "aks"])
def test_floor_classes_resolve_to_the_provider_classes_the_plan_uses(bench, stack):
    classes = bench._classes(stack)
    assert len(classes) >= 4
    for path in classes:
        module, _, name = path.rpartition(".")
        assert isinstance(getattr(importlib.import_module(module), name), type), path
    if stack == "eks":
        assert {"pulumi_kubernetes.helm.v3.Release", "pulumi_kubernetes.core.v1.Namespace",
                "pulumi_kubernetes.Provider", "pulumi_aws.eks.NodeGroup"} <= set(classes)


@pytest.fixture(scope="module")
def sweep_poll():
    spec = importlib.util.spec_from_file_location("sweep_poll", ROOT / "bench" / "sweep_poll.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["sweep_poll"] = module  # its dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules["sweep_poll"]


def test_sweep_polling_asks_100_ids_a_call_for_unfinished_jobs_only(sweep_poll):
    figures = sweep_poll.measure(jobs=250, rounds=3)  # pending per round: 250, 250, 166, 82
    assert figures.rounds == 4 and figures.polled == 250 + 250 + 166 + 82
    assert figures.calls == figures.expected_calls == 3 + 3 + 2 + 1 and figures.largest_call == 100
    assert figures.per_job_per_round <= sweep_poll.TARGET
