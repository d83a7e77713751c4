"""The bench's floor names real classes: a wrong path would make the floor fail, or time the wrong thing."""

from __future__ import annotations

import importlib
import importlib.util

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
