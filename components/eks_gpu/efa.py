"""Elastic Fabric Adapter on EKS GPU node groups: the launch template's interfaces and the EFA device plugin's values.
Pure: no Pulumi (the component declares the resources, tests read these directly)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from . import facts


def device_plugin_values(tolerations: Sequence[Mapping[str, Any]], node_labels: Mapping[str, str]) -> dict[str, Any]:
    """Values of the pinned EFA device plugin chart (every key is in its values.yaml; tests check): it tolerates
    the GPU nodes' taints and selects the EFA nodes by their boot label (the chart's own affinity also requires an
    EFA instance type)."""
    return {
        "tolerations": [dict(t) for t in tolerations],
        "nodeSelector": {k: v for k, v in node_labels.items() if k in facts.EFA_NODE_LABELS},
    }
