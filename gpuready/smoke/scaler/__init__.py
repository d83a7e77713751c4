"""Why a GPU pod stays Pending, read from what the node autoscalers said: cluster-autoscaler's pod events and status
ConfigMap, Karpenter's pod events and NodeClaims, the scheduler and the GPU nodes. Pure functions of API objects
(JSON-shaped dicts, as the API server serves them) to findings."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Mapping, Optional

from gpuready_components import platforms

from . import cluster_autoscaler, karpenter
from .base import DEPLOYMENTS, QUIET_AFTER_S, Context, Finding, component, latest, parse_time
from .cluster_autoscaler import CA_STATUS, read_status
from .karpenter import nominated


def scheduler(pod_events, nodes: list[Mapping[str, Any]], context: Context) -> list[Finding]:
    """The default scheduler's last word on the pod, and GPU nodes that are missing or advertise no GPU."""
    findings = []
    said = [e for e in latest(pod_events, ("FailedScheduling",)) if component(e) != "karpenter"
            and not str(e.get("message", "")).startswith("Failed to schedule pod,")]
    if said:
        findings.append(Finding("scheduler", "scheduler", "the scheduler found no node for the pod (normal while the "
                                "GPU group is at zero nodes and an autoscaler adds one)", said[-1].get("message", "")))
    selector = ",".join(f"{k}={v}" for k, v in context.node_labels.items())
    if not nodes:
        findings.append(Finding("no-gpu-node", "gpuready", f"no node carries the GPU labels {selector or '(none)'}: "
                                "the GPU node group is at zero nodes, or its labels differ"))
    if context.device_class:  # DRA: the nodes advertise no nvidia.com/gpu; the scheduler says what the claims lacked
        if said and "claim" in str(said[-1].get("message", "")):
            findings.append(Finding(
                "dra-claims", "scheduler", f"no node has the GPUs the pod claims (DeviceClass "
                f"{context.device_class}) free: the DRA driver's kubelet plugin is not running there (kubectl get "
                "resourceslices lists none for the node), its GPUs are claimed by other pods, or the pool is at zero "
                "nodes, from which a DRA claim does not always scale it up", said[-1].get("message", ""),
                ("keep one GPU node (docs/platforms/dra.md)",)))
        return findings
    for node in nodes:
        allocatable = ((node.get("status") or {}).get("allocatable") or {}).get("nvidia.com/gpu", "0")
        if str(allocatable) in ("0", ""):
            findings.append(Finding("device-plugin", "gpuready", f"GPU node {node['metadata']['name']} advertises 0 "
                                    "nvidia.com/gpu: the NVIDIA device plugin is not running there (tolerations, "
                                    "node selector, or the driver)"))
    return findings


def no_autoscaler(context: Context) -> Finding:
    scaler = context.autoscaler
    if scaler in DEPLOYMENTS:
        check = f"is the {scaler} controller ready? {DEPLOYMENTS[scaler]}"
    elif scaler == "none":
        check = ("the stack installs no autoscaler (gpuready:autoscaler=none): is the cluster's own one running and "
                 "does it manage the GPU node group? Or keep GPU nodes with gpuready:minSize >= 1")
    elif getattr(platforms.get(context.platform), "managed_autoscaler", False):
        check = "is autoscaling enabled on the GPU node pool, with a max size above its current size?"
    else:
        check = ("is a cluster-autoscaler or Karpenter running? kubectl get deploy -A | grep -iE "
                 "'autoscaler|karpenter'")
    return Finding("no-autoscaler", "gpuready", f"no autoscaler reacted to the pod in {QUIET_AFTER_S // 60} min", "",
                   (check,))


def explain(pod_events: list[Mapping[str, Any]], context: Context, *, pending_for: float,
            status: Optional[Mapping[str, Any]] = None, status_events=(),
            nodeclaims: Optional[Mapping[str, Any]] = None, nodeclaim_events=(),
            since: Optional[datetime] = None, now: Optional[datetime] = None) -> list[Finding]:
    """What the autoscalers say about a Pending pod: its events (any source), cluster-autoscaler's status ConfigMap
    and the events on it (those before ``since`` are old news), the NodeClaims Karpenter nominated (None: not
    found) and their events; ``no-autoscaler`` when none spoke within QUIET_AFTER_S."""
    findings = cluster_autoscaler.explain(pod_events, context, status, status_events, since, now) + \
        karpenter.explain(pod_events, context, nodeclaims, nodeclaim_events)
    if not findings and pending_for >= QUIET_AFTER_S:
        findings.append(no_autoscaler(context))
    return findings


__all__ = ["CA_STATUS", "QUIET_AFTER_S", "Context", "Finding", "cluster_autoscaler", "explain", "karpenter",
           "nominated", "parse_time", "read_status", "scheduler"]
