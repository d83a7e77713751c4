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
    found = {}
    for path in sorted(CHARTS.glob("**/crds/*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == "CustomResourceDefinition":
                kind = doc["spec"]["names"]["kind"]
                assert kind not in found, f"two vendored CRDs define {kind}"
                found[kind] = doc
    return found


def crd_schema(crd: dict[str, Any]) -> dict[str, Any]:
    """The OpenAPI v3 schema of a CRD's storage version."""
    (version,) = [v for v in crd["spec"]["versions"] if v.get("storage")]
    return version["schema"]["openAPIV3Schema"]
