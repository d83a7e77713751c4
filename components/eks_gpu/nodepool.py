"""The GPU NodePool of EKS Auto Mode (and Karpenter): GPU nodes launched for pending pods, capped in GPUs."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Mapping, Optional, Sequence

from ..k8s_gpu.facts import Taint
from ..k8s_gpu import scalers as sf
from .reservation import CapacityReservationArgs


def capacity_types(res: Optional[CapacityReservationArgs], capacity_type: str) -> list[str]:
    """The NodePool's ``karpenter.sh/capacity-type`` values, in Karpenter's preference order: the EKS capacity type's;
    on a reservation ``reserved`` first, then that type unless the stack said reservations only."""
    given = sf.CAPACITY_TYPES[capacity_type]
    if res is None:
        return [given]
    return [sf.KARPENTER_RESERVED, *(() if res.only else (given,))]


def node_pool(labels: Mapping[str, str], taint: Taint, instance_types: Sequence[str], capacity: Sequence[str],
              max_gpus: int, node_class_ref: Mapping[str, str], startup_taints: Sequence[Taint] = (),
              annotations: Mapping[str, str] = MappingProxyType({})) -> dict[str, Any]:
    """A ``karpenter.sh/v1`` NodePool object: the stack's labels and GPU taint, only its instance types and
    capacity types (``karpenter.sh/capacity-type`` values: :func:`capacity_types`), and at most ``max_gpus`` GPUs in
    all; ``startup_taints`` (burn-in) are ignored when Karpenter decides whether a pod fits, and removed by a
    daemonset. ``annotations``: the GPU facts of the types the stack declared (``catalog.Catalog.stamps``) and the
    reservation's known facts (``capacity.reservation_stamps``)."""
    return {
        "apiVersion": sf.NODE_POOL_API, "kind": "NodePool",
        "metadata": {"name": sf.NODE_POOL_NAME, "labels": {"app.kubernetes.io/managed-by": "gpuready"},
                     **({"annotations": dict(annotations)} if annotations else {})},
        "spec": {
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    "nodeClassRef": dict(node_class_ref),
                    "taints": [{"key": taint.key, "value": taint.value, "effect": taint.effect}],
                    **({"startupTaints": [{"key": t.key, "value": t.value, "effect": t.effect}
                                          for t in startup_taints]} if startup_taints else {}),
                    "requirements": [
                        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": list(instance_types)},
                        {"key": "karpenter.sh/capacity-type", "operator": "In",
                         "values": list(capacity)},
                    ],
                },
            },
            "limits": {sf.GPU_RESOURCE: str(max_gpus)},
            "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "5m"},
        },
    }
