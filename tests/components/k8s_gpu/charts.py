"""The real NVIDIA charts vendored in tests/data/helm-charts: their values.yaml, the keys their templates read,
and what a release installs once our values are merged over the chart's defaults (as Helm merges them)."""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any, Iterator

import yaml

from gpuready_components.k8s_gpu import facts
from tests import helm

CHARTS_DIR = helm.CHARTS
SUBCHARTS = {"nvidia-device-plugin": {"nfd": "node-feature-discovery"},
             "gpu-operator": {"node-feature-discovery": "node-feature-discovery"}}
"""Values key of an embedded subchart -> its chart (both embed node-feature-discovery 0.19.0)."""


def key(chart: str) -> str:
    """The :data:`facts.CHARTS` key of a chart named by its name or its ``oci://`` reference (the last part)."""
    return chart.rsplit("/", 1)[-1]


def chart_dir(chart: str) -> Path:
    """The vendored chart at the version we pin (node-feature-discovery: the operator's embedded subchart)."""
    chart = key(chart)
    if chart == "node-feature-discovery":
        return chart_dir("gpu-operator") / "charts" / "node-feature-discovery"
    return helm.chart_dir(chart, facts.CHARTS[chart].version)


@functools.lru_cache(maxsize=None)
def defaults(chart: str) -> dict[str, Any]:
    """The chart's values.yaml, for the version we pin."""
    return yaml.safe_load((chart_dir(key(chart)) / "values.yaml").read_text()) or {}


@functools.lru_cache(maxsize=None)
def template_keys(chart: str) -> frozenset[str]:
    """Every ``.Values.X`` the chart's templates read (generated from templates/, see PROVENANCE.md)."""
    chart = key(chart)
    if chart not in facts.CHARTS:
        return frozenset()
    path = CHARTS_DIR / f"{chart}-{facts.CHARTS[chart].version}-template-referenced-keys.txt"
    return frozenset(path.read_text().split())


def merged(chart: str, values: dict[str, Any]) -> dict[str, Any]:
    """Helm's merge: maps merge key by key, anything else (lists included) replaces the default."""
    def merge(base: Any, over: Any) -> Any:
        if isinstance(base, dict) and isinstance(over, dict):
            out = dict(base)
            for key, value in over.items():
                out[key] = merge(base.get(key), value)
            return out
        return copy.deepcopy(over)
    return merge(defaults(chart), values)


def _known(tree: Any, parts: list[str]) -> bool:
    """Whether a dotted path exists in a values tree, or lies below a free-form default (empty map, null, list)."""
    for part in parts:
        if not (isinstance(tree, dict) and tree):
            return True
        if part not in tree:
            return False
        tree = tree[part]
    return True


def unknown_keys(chart: str, values: dict[str, Any]) -> Iterator[str]:
    """Dotted keys of ``values`` that neither the chart's values.yaml, its templates nor its embedded subchart know,
    or whose value is not the true/false the chart's default is.

    Below a key whose default is an empty map, null or a list (``nodeSelector``, ``affinity``, ``config.map``), the
    chart passes the value through as it is, so the check stops there.
    """
    for dotted, value in _leaves(values):
        parts = dotted.split(".")
        default = _default(defaults(chart), parts)
        if isinstance(default, bool) and not isinstance(value, bool):
            yield f"{dotted} (the chart expects true/false, got {value!r})"
        if _known(defaults(chart), parts):
            continue
        sub = SUBCHARTS.get(chart, {}).get(parts[0])
        if sub is not None and _known(defaults(sub), parts[1:]):
            continue
        if any(dotted == k or dotted.startswith(k + ".") for k in template_keys(chart)):
            continue
        yield dotted


def _leaves(values: dict[str, Any], path: str = "") -> Iterator[tuple[str, Any]]:
    for key, value in values.items():
        dotted = f"{path}.{key}" if path else str(key)
        if isinstance(value, dict) and value:
            yield from _leaves(value, dotted)
        else:
            yield dotted, value


def _default(tree: Any, parts: list[str]) -> Any:
    for part in parts:
        if not isinstance(tree, dict) or part not in tree:
            return None
        tree = tree[part]
    return tree


def installs(chart: str, values: dict[str, Any]) -> set[str]:
    """What a release of ``chart`` with ``values`` puts on GPU nodes, read from the merged values as the chart's
    templates read them (not from what the component says about itself)."""
    chart = key(chart)
    v = merged(chart, values)
    on = {name for name, path in _SWITCHES.get(chart, {}).items() if _default(v, path.split(".")) is True}
    if chart == "nvidia-device-plugin" and (v.get("nfd", {}).get("enabled") or v["gfd"]["enabled"]):
        on.add("node-feature-discovery")  # Chart.yaml: condition nfd.enabled,gfd.enabled
    if chart == "dcgm-exporter":
        on.add("dcgm-exporter")
    return on


_SWITCHES = {
    "nvidia-device-plugin": {facts.DEVICE_PLUGIN: "devicePlugin.enabled", "gpu-feature-discovery": "gfd.enabled"},
    facts.DRA_CHART: {facts.DRA_DRIVER: "resources.gpus.enabled", "compute-domains": "resources.computeDomains.enabled"},
    "gpu-operator": {facts.DRIVER: "driver.enabled", facts.TOOLKIT: "toolkit.enabled",
                     facts.DEVICE_PLUGIN: "devicePlugin.enabled", "gpu-feature-discovery": "gfd.enabled",
                     "dcgm-exporter": "dcgmExporter.enabled", facts.MIG_PARTITIONING: "migManager.enabled",
                     "node-feature-discovery": "nfd.enabled"},
}


def priority_classes(chart: str, values: dict[str, Any]) -> set[str]:
    """Every ``priorityClassName`` a release of ``chart`` with ``values`` sets, wherever the chart or its subcharts
    read one (merged values, defaults included)."""
    def walk(tree: Any) -> Iterator[str]:
        if isinstance(tree, dict):
            for key, value in tree.items():
                if key == "priorityClassName" and isinstance(value, str) and value:
                    yield value
                yield from walk(value)
    return set(walk(merged(chart, values)))


@functools.lru_cache(maxsize=None)
def cluster_policy_schema() -> dict[str, Any]:
    """The OpenAPI schema of the ClusterPolicy custom resource, from the pinned gpu-operator chart's CRD."""
    return helm.crd_schema(helm.crds()["ClusterPolicy"])
