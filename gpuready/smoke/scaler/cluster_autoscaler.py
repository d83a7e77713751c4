"""cluster-autoscaler's words: ``TriggeredScaleUp`` / ``NotTriggerScaleUp`` on the pod, and its status ConfigMap with
the events on it (kubernetes/autoscaler cluster-autoscaler: processors/status, core/scaleup, clusterstate)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Mapping, Optional

import yaml

from gpuready_components import platforms

from .base import DEPLOYMENTS, Context, Finding, cloud_error, latest, launches_of, parse_time

CA_STATUS = ("kube-system", "cluster-autoscaler-status")
"""Where cluster-autoscaler writes its status (``--status-config-map-name``'s default)."""
CA_STALE_S = 180
"""cluster-autoscaler rewrites its status every loop (10 s); older than this, it is not running (its FAQ says 3 min)."""
TEMPLATE = "k8s.io/cluster-autoscaler/node-template"

SCALE_UP = re.compile(r"\{(\S+) (\d+)->(\d+) \(max: (\d+)\)\}")
"""processors/nodegroupset ScaleUpInfo.String(): ``{group current->new (max: max)}``."""
LEGACY_SCALE_UP = re.compile(r"group: (\S+), sizes \(current/new\): (\d+)/(\d+)")


def triggered(message: str) -> Finding:
    groups = [(g, int(c), int(n), m) for g, c, n, m in SCALE_UP.findall(message)] or \
             [(g, int(c), int(n), "?") for g, c, n in LEGACY_SCALE_UP.findall(message)]
    sizes = ", ".join(f"{g} ({c}->{n} of at most {m})" for g, c, n, m in groups) or "(unnamed)"
    what = "a node" if sum(n - c for _, c, n, _ in groups) <= 1 else "nodes"
    return Finding("scaling-up", "cluster-autoscaler",
                   f"cluster-autoscaler is adding {what} to group {sizes}: usually 3-5 min for a GPU node "
                   "(instance start, driver, device plugin); still waiting", message)


def _platform(context: Context) -> Optional[platforms.Platform]:
    """The stack's platform (``None``: outputs that do not say, read as a cluster whose autoscaler gpuready runs)."""
    return platforms.get(context.platform)


def _eks(context: Context) -> bool:
    """Node groups are EC2 Auto Scaling groups whose templates at zero nodes are tags: the autoscaler is the one
    gpuready installs, not the platform's own (GKE's and AKS's know their pools' templates)."""
    platform = _platform(context)
    return platform is None or not platform.managed_autoscaler


def max_size_setting(platform_name: Optional[str]) -> str:
    """The stack key capping the GPU node group of the platform called ``platform_name`` (EKS's where unknown)."""
    platform = platforms.get(platform_name)
    return platform.pool_max_setting if platform and platform.pool_max_setting else "gpuready:maxSize"


def _gpu_fix(context: Context) -> str:
    template = (f"at zero nodes cluster-autoscaler learns a group's GPUs from its Auto Scaling group's tag "
                f"{TEMPLATE}/resources/nvidia.com/gpu=<GPUs per node> (or from its first instance type); tag it, or "
                if _eks(context) else "")
    return (f"no group's template offers {context.gpus} nvidia.com/gpu: {template}ask for no more GPUs than the "
            "group's machine type has (--gpus)")


def _labels_fix(context: Context) -> str:
    tags = ", ".join(f"{TEMPLATE}/label/{k}={v}" for k, v in sorted(context.node_labels.items())) or "(none)"
    where = (f"at zero nodes cluster-autoscaler knows only the labels its Auto Scaling group is tagged with: tag it "
             f"with {tags}" if _eks(context) else "its node pool must carry the pod's node selector labels")
    return f"expected for the groups that are not GPU groups; for the GPU group, {where}"


def _taint_fix(context: Context) -> str:
    tolerated = ", ".join(f"{t['key']}:{t['effect']}" for t in context.taints) or "none"
    where = f"its taint template tags ({TEMPLATE}/taint/<key>=<value>:<effect>)" if _eks(context) else "its taints"
    return (f"expected for tainted system groups; for the GPU group, {where} must be taints the smoke pod tolerates "
            f"({tolerated})")


REASONS: tuple[tuple[str, Any], ...] = (
    (r"Insufficient nvidia\.com/gpu", _gpu_fix),
    (r"Insufficient (\S+)", lambda c: "no group's node template has enough of that resource for the pod: a larger "
                                      "machine type, or a smaller request"),
    (r"didn't match Pod's node affinity/selector", _labels_fix),
    (r"untolerated taint|didn't tolerate", _taint_fix),
    (r"max node group size reached", lambda c: (
        "the group is at its maximum size: running GPU work holds its nodes, or raise it "
        f"(pulumi config set {max_size_setting(c.platform)} N; pulumi up)")),
    (r"in backoff after failed scale-up", lambda c: (
        "a recent scale-up of the group failed (capacity, quota or IAM: see cluster-autoscaler-status below); "
        "cluster-autoscaler retries after a backoff of up to 30 min")),
    (r"not ready for scale-up", lambda c: (
        "cluster-autoscaler holds the group back (nodes that never registered, or a recent failure): "
        "kubectl -n kube-system describe configmap cluster-autoscaler-status")),
    (r"max total nodes in cluster reached", lambda c: "cluster-autoscaler's --max-nodes-total is reached"),
    (r"exceeded quota|limit reached", lambda c: (
        "cluster-autoscaler's resource limits (--cores-total, --memory-total, --gpu-total) are reached")),
    (r"wouldn't fit if a new node is added", lambda c: "no group's node template can hold the pod"),
)


def not_triggered(message: str, context: Context) -> Finding:
    """``pod didn't trigger scale-up: %s``: counts of node groups per reason (processors/status ReasonsMessage)."""
    body = re.sub(r"^pod didn't trigger scale-up:?\s*", "", message)
    reasons = re.findall(r"(\d+) (.+?)(?=, \d+ |$)", body) or [("", body)]
    fixes = []
    for count, reason in reasons:
        for pattern, fix in REASONS:
            if re.search(pattern, reason):
                fixes.append(f"{count} {reason}".strip() + f" -> {fix(context)}")
                break
    return Finding("no-scale-up", "cluster-autoscaler", "cluster-autoscaler found no node group that could run the "
                   "pod", message, tuple(fixes))


def read_status(config_map: Mapping[str, Any]) -> dict[str, Any]:
    """cluster-autoscaler-status: YAML since 1.30 (clusterstate/api ClusterAutoscalerStatus), readable text before."""
    text = (config_map.get("data") or {}).get("status") or ""
    updated = parse_time((config_map.get("metadata") or {}).get("annotations", {})
                         .get("cluster-autoscaler.kubernetes.io/last-updated", ""))
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        data = None
    if isinstance(data, dict):
        groups = [{"name": g.get("name", ""), "health": (g.get("health") or {}).get("status", ""),
                   "scaleUp": (g.get("scaleUp") or {}).get("status", ""),
                   "error": " ".join(filter(None, ((g.get("scaleUp") or {}).get("backoffInfo") or {}).values()))}
                  for g in data.get("nodeGroups") or []]
        health = ((data.get("clusterWide") or {}).get("health") or {}).get("status", "")
        return {"running": data.get("autoscalerStatus", ""), "health": health, "groups": groups, "updated": updated}
    groups = []
    for block in re.split(r"\n\s*Name:\s+", text)[1:]:
        groups.append({"name": block.split()[0], "error": "",
                       "health": (re.search(r"Health:\s+(\w+)", block) or [None, ""])[1],
                       "scaleUp": (re.search(r"ScaleUp:\s+(\w+)", block) or [None, ""])[1]})
    health = (re.search(r"Cluster-wide:\s+Health:\s+(\w+)", text) or [None, ""])[1]
    return {"running": "", "health": health, "groups": groups, "updated": updated}


def explain(pod_events, context: Context, status: Optional[Mapping[str, Any]] = None, status_events=(),
            since: Optional[datetime] = None, now: Optional[datetime] = None) -> list[Finding]:
    """Its latest word on the pod; the failed scale-ups since ``since`` not followed by a successful one (events on
    the status ConfigMap) and the groups in backoff; a status not rewritten for CA_STALE_S."""
    findings = []
    said = latest(pod_events, ("TriggeredScaleUp", "NotTriggerScaleUp"))
    if said:
        last = said[-1]
        findings.append(triggered(last.get("message", "")) if last["reason"] == "TriggeredScaleUp"
                        else not_triggered(last.get("message", ""), context))
    failures = {}
    for event in latest(status_events, ("FailedToScaleUpGroup", "ScaleUpFailed", "ScaleUpTimedOut", "ScaledUpGroup"),
                        since):
        message = event.get("message", "")
        name = (re.search(r"group (\S+?)(?::|\s|$)", message) or [None, ""])[1]
        if event["reason"] != "ScaledUpGroup":
            failures[name] = cloud_error(f"{event['reason']}: {message}", name, launches_of(context.platform))
        elif " size set to " in message:  # executor.go: the cloud accepted the new size
            failures.pop(name, None)
    if status is not None:
        state = read_status(status)
        if now and state["updated"] and (now - state["updated"]).total_seconds() > CA_STALE_S:
            findings.append(Finding("no-autoscaler", "cluster-autoscaler", "cluster-autoscaler has not written its "
                                    f"status since {state['updated']:%Y-%m-%d %H:%M:%S %Z}: it is not running",
                                    fixes=(DEPLOYMENTS["cluster-autoscaler"],)))
        for group in state["groups"]:
            if group["scaleUp"] == "Backoff" and group["name"] not in failures:
                failures[group["name"]] = cloud_error(f"ScaleUp: Backoff {group['error']}".strip(), group["name"],
                                                      launches_of(context.platform))
    return findings + list(failures.values())
