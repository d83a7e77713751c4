"""Render a vendored chart (tests/data/helm-charts/, pinned, with PROVENANCE) as ``helm template`` would: a real
Helm engine, Helm's Go SDK embedded by the ``helm-python-sdk`` package (no helm binary, no cluster)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import ROOT

CHARTS = ROOT / "tests" / "data" / "helm-charts"


def chart_dir(chart: str, version: str) -> Path:
    """The vendored copy of ``chart`` (a name or an ``oci://`` reference) at ``version``; fails if it is not vendored."""
    path = CHARTS / f"{chart.rstrip('/').rsplit('/', 1)[-1]}-{version}"
    if not path.is_dir():
        raise AssertionError(f"chart {chart} {version} is not vendored: copy it to {path.relative_to(ROOT)}")
    return path


@functools.lru_cache(maxsize=None)
def _load(path: Path):
    import helm_python  # the test extra installs it

    return helm_python.Chart.load(str(path))


def render(chart: str, version: str, values: dict[str, Any], *, name: str, namespace: str) -> list[dict[str, Any]]:
    """Every object a ``helm install`` of the chart with ``values`` creates (templates only; ``crds/`` apart), each
    with its namespace filled in as Helm's client fills it."""
    files = _load(chart_dir(chart, version)).render(values, name=name, namespace=namespace, is_install=True)
    objects = []
    for path, text in sorted(files.items()):
        if not path.endswith((".yaml", ".yml")):
            continue
        for doc in yaml.safe_load_all(text):
            if doc:
                objects.append(doc)
    return objects


@functools.lru_cache(maxsize=None)
def crds() -> dict[str, dict[str, Any]]:
    """Every vendored chart's CRDs (``crds/``, their subcharts' too), by ``kind``: the schemas custom resources of
    those APIs must satisfy (Karpenter's NodePool is also EKS Auto Mode's)."""
    found, owners = {}, {}
    for path in sorted(CHARTS.glob("**/crds/*.yaml")):
        chart = path.relative_to(CHARTS).parts[0]
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == "CustomResourceDefinition":
                kind, owner = doc["spec"]["names"]["kind"], CRD_OWNERS.get(doc["spec"]["group"])
                if kind in found:
                    assert owner is not None, f"two vendored CRDs define {kind}"
                    if owners[kind] == owner:
                        continue
                    if chart != owner:
                        continue
                found[kind], owners[kind] = doc, chart
    return found


CRD_OWNERS = {"resource.nvidia.com": "dra-driver-nvidia-gpu-0.4.1"}
"""API group -> the vendored chart whose CRDs of that group are the ones a gpuready cluster runs, where two charts
carry them: the DRA driver's own chart (``install: dra`` deploys it); the GPU Operator v26.7.0 carries an older copy
of the ComputeDomain CRDs for its own DRA deployment, which gpuready never turns on."""


def crd_schema(crd: dict[str, Any]) -> dict[str, Any]:
    """The OpenAPI v3 schema of a CRD's storage version."""
    (version,) = [v for v in crd["spec"]["versions"] if v.get("storage")]
    return version["schema"]["openAPIV3Schema"]
