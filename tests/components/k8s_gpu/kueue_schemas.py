"""Kueue 0.19.2 as the tests read it: its CRDs' schemas (tests/data/kueue-0.19.2-crds/, strict: an unknown field
fails, as the API server would prune it silently), their CEL rules (``x-kubernetes-validations``, evaluated with
cel-python after the schema's defaults, as the API server does on create) and its chart
(tests/data/helm-charts/kueue-0.19.2/)."""

from __future__ import annotations

import copy
import functools
from typing import Any, Iterator

import jsonschema
import yaml

from gpuready_components.k8s_gpu import facts
from tests import helm
from tests.conftest import ROOT

from . import charts

CRDS = ROOT / "tests" / "data" / "kueue-0.19.2-crds"
KINDS = ("ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass")
"""The kinds every stack with teams makes; a pool with a ProvisioningRequest admission check adds
``PROVISIONING_KINDS``."""
PROVISIONING_KINDS = ("ProvisioningRequestConfig", "AdmissionCheck")


@functools.lru_cache(maxsize=None)
def crds() -> dict[str, dict[str, Any]]:
    """Kueue's CRDs by kind."""
    found = {}
    for path in sorted(CRDS.glob("*.yaml")):
        crd = yaml.load(path.read_text(), Loader=yaml.CSafeLoader)
        found[crd["spec"]["names"]["kind"]] = crd
    return found


def _strict(schema: Any) -> Any:
    """The schema refusing unknown fields wherever it lists properties and does not say it keeps unknown ones. A
    pattern Go's RE2 takes with a flag after ``^`` (AdmissionCheck's ``^(?i)[a-z]...``) gets the flag first, as
    Python's ``re`` needs it."""
    if isinstance(schema, dict):
        if "properties" in schema and "additionalProperties" not in schema \
                and not schema.get("x-kubernetes-preserve-unknown-fields"):
            schema = {**schema, "additionalProperties": False}
        if isinstance(schema.get("pattern"), str) and schema["pattern"].startswith("^(?i)"):
            schema = {**schema, "pattern": "(?i)^" + schema["pattern"][len("^(?i)"):]}
        return {k: _strict(v) for k, v in schema.items()}
    return [_strict(v) for v in schema] if isinstance(schema, list) else schema


@functools.lru_cache(maxsize=None)
def schema(kind: str) -> dict[str, Any]:
    """The strict OpenAPI schema of ``kind`` at the version our objects use (the stored one, v1beta2)."""
    version = facts.KUEUE_API.split("/")[1]
    (found,) = [v for v in crds()[kind]["spec"]["versions"] if v["name"] == version]
    assert found["served"] and found["storage"], f"{kind} {version} is not the served, stored version"
    return _strict(found["schema"]["openAPIV3Schema"])


def validate(obj: dict[str, Any]) -> None:
    """Raise :class:`jsonschema.ValidationError` unless ``obj`` satisfies its kind's CRD."""
    assert obj["apiVersion"] == facts.KUEUE_API, obj["apiVersion"]
    jsonschema.validate(obj, schema(obj["kind"]))


def defaulted(schema: dict[str, Any], value: Any) -> Any:
    """``value`` with ``schema``'s defaults applied as the API server's structural defaulting does before it
    validates: an absent property with a ``default`` gets it, and every object and array below gets its own."""
    if isinstance(value, dict):
        props, out = schema.get("properties") or {}, dict(value)
        for key, sub in props.items():
            if key not in out and "default" in sub:
                out[key] = copy.deepcopy(sub["default"])
            if key in out:
                out[key] = defaulted(sub, out[key])
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            out.update({k: defaulted(extra, v) for k, v in out.items() if k not in props})
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [defaulted(schema["items"], v) for v in value]
    return value


@functools.lru_cache(maxsize=None)
def _cel(rule: str) -> Any:
    import celpy

    env = celpy.Environment()
    return env.program(env.compile(rule))


def cel_violations(obj: dict[str, Any]) -> list[str]:
    """``path: message`` of each CEL rule (``x-kubernetes-validations``) of its kind's CRD that ``obj``, once
    defaulted (:func:`defaulted`), breaks or cannot be evaluated on; empty when the API server would take it.
    Transition rules (those reading ``oldSelf``) only run on an update, so not on a create, and are left out."""
    import celpy

    version = facts.KUEUE_API.split("/")[1]
    (found,) = [v for v in crds()[obj["kind"]]["spec"]["versions"] if v["name"] == version]
    root = found["schema"]["openAPIV3Schema"]
    broken: list[str] = []

    def walk(node: dict[str, Any], value: Any, path: str) -> None:
        for rule in node.get("x-kubernetes-validations") or ():
            if "oldSelf" in rule["rule"]:
                continue
            try:
                holds = _cel(rule["rule"]).evaluate({"self": celpy.json_to_cel(value)})
            except Exception as error:  # noqa: BLE001 (an evaluation error is a refusal too)
                holds = error
            if holds is not True and holds != celpy.celtypes.BoolType(True):
                broken.append(f"{path}: {rule.get('message') or rule['rule']}")
        if isinstance(value, dict):
            for key, sub in (node.get("properties") or {}).items():
                if key in value:
                    walk(sub, value[key], f"{path}.{key}")
        elif isinstance(value, list) and isinstance(node.get("items"), dict):
            for i, item in enumerate(value):
                walk(node["items"], item, f"{path}[{i}]")

    walk(root, defaulted(root, obj), obj["kind"])
    return broken


CHART_VERSION = facts.KUEUE_CHART.version


@functools.lru_cache(maxsize=None)
def chart_defaults() -> dict[str, Any]:
    return yaml.safe_load((helm.chart_dir(facts.KUEUE_CHART.name, CHART_VERSION) / "values.yaml").read_text())


def unknown_keys(values: dict[str, Any]) -> Iterator[str]:
    """Dotted keys of ``values`` the chart's values.yaml does not have (below a free-form default, anything goes)."""
    for dotted, _ in charts._leaves(values):
        if not charts._known(chart_defaults(), dotted.split(".")):
            yield dotted


def render(values: dict[str, Any]) -> list[dict[str, Any]]:
    """Every object ``helm install`` of the pinned chart with ``values`` creates (its CRDs apart)."""
    return helm.render(facts.KUEUE_CHART.name, CHART_VERSION, values, name="kueue", namespace=facts.KUEUE_NAMESPACE)


def manager_config(objects: list[dict[str, Any]]) -> dict[str, Any]:
    """The controller's Configuration, as the rendered ConfigMap hands it to the controller."""
    (config_map,) = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"].endswith("manager-config")]
    return yaml.safe_load(config_map["data"]["controller_manager_config.yaml"])


def label_selector_matches(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A metav1.LabelSelector (matchLabels AND matchExpressions) against ``labels``, with the scheduler's operator
    semantics (``scheduling.selects``): In, NotIn, Exists, DoesNotExist."""
    from gpuready_components.k8s_gpu.scheduling import selects

    expressions = selector.get("matchExpressions") or []
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": expressions}]}}} if expressions else None
    return selects(labels, selector.get("matchLabels"), affinity)
