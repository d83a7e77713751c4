"""Kubernetes scheduling semantics for taints, tolerations and node affinity, as the scheduler applies them.

Used to prove that a chart's daemonset lands on the platform's GPU nodes, and by the policy pack and the smoke
test's diagnosis. Objects are the plain dicts of the Kubernetes API (``key``, ``operator``, ``effect``...).
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from .facts import Taint


def tolerates(tolerations: Optional[Sequence[Mapping[str, Any]]], taint: Taint) -> bool:
    """Whether any toleration tolerates ``taint`` (core/v1 Toleration semantics)."""
    for t in tolerations or ():
        effect = t.get("effect") or ""
        if effect and effect != taint.effect:
            continue
        operator = t.get("operator") or "Equal"
        key = t.get("key") or ""
        if operator == "Exists" and (not key or key == taint.key):
            return True
        if operator == "Equal" and key == taint.key and (t.get("value") or "") == taint.value:
            return True
    return False


def _expression_holds(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator, values = expr.get("key"), expr.get("operator"), list(expr.get("values") or ())
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and len(values) == 1:
        try:
            left, right = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return left > right if operator == "Gt" else left < right
    return False


def selects(labels: Mapping[str, str], node_selector: Optional[Mapping[str, str]] = None,
            affinity: Optional[Mapping[str, Any]] = None) -> bool:
    """Whether a node with ``labels`` satisfies a pod's ``nodeSelector`` and required node affinity.

    Terms of ``nodeSelectorTerms`` are ORed, the expressions inside one term ANDed; an empty term list selects nothing.
    """
    if any(labels.get(k) != v for k, v in (node_selector or {}).items()):
        return False
    required = (((affinity or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if not required:
        return True
    terms = required.get("nodeSelectorTerms") or []
    return any(all(_expression_holds(e, labels) for e in term.get("matchExpressions") or [])
               and bool(term.get("matchExpressions") or term.get("matchFields"))
               for term in terms)


def schedulable(pod_spec: Mapping[str, Any], labels: Mapping[str, str], taints: Sequence[Taint]) -> bool:
    """Whether a pod (or daemonset pod template) with ``pod_spec`` may run on a node with ``labels`` and ``taints``.

    Only ``NoSchedule`` and ``NoExecute`` taints keep a pod off; ``PreferNoSchedule`` does not.
    """
    hard = [t for t in taints if t.effect in ("NoSchedule", "NoExecute")]
    return selects(labels, pod_spec.get("nodeSelector"), pod_spec.get("affinity")) and \
        all(tolerates(pod_spec.get("tolerations"), t) for t in hard)
