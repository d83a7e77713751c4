"""What every explanation shares: the findings, the smoke pod's context, reading events' times and sources, and
EC2's launch failures (both autoscalers report them)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterable, Mapping, Optional

from gpuready_components import platforms
from gpuready_components.platforms import Launches

QUIET_AFTER_S = 120
"""Pending this long without a word from any autoscaler means none is acting on the pod."""
DEPLOYMENTS = {
    "cluster-autoscaler": "kubectl -n kube-system get deploy -l app.kubernetes.io/name=aws-cluster-autoscaler; "
                          "kubectl -n kube-system logs -l app.kubernetes.io/name=aws-cluster-autoscaler --tail=50",
    "karpenter": "kubectl get deploy -A -l app.kubernetes.io/name=karpenter; kubectl get nodepools,nodeclaims",
    "auto-mode": "aws eks describe-cluster --name CLUSTER --query cluster.computeConfig; "
                 "kubectl get nodepools,nodeclaims",
}


@dataclass(frozen=True)
class Context:
    """What the smoke pod asks for and what the stack says about its scaler (outputs ``autoscaler``, ``platform``)."""
    gpus: int = 1
    node_labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Mapping[str, str], ...] = ()
    autoscaler: Optional[str] = None
    platform: Optional[str] = None
    reservations: tuple[Mapping[str, Any], ...] = ()
    """The reservations the stack's GPU pools launch into (output ``gpuReservations``)."""
    device_class: Optional[str] = None
    """The DRA DeviceClass the pod claims its GPUs of (output ``gpuDeviceClass``); None: it asks for
    ``nvidia.com/gpu``."""


@dataclass(frozen=True)
class Finding:
    """One thing that keeps the pod Pending. ``kind``: scaling-up, launching (both: keep waiting), no-scale-up,
    capacity, quota, iam, scale-up-failed, launch-failed, not-registered, device-plugin, dra-claims, no-autoscaler,
    scheduler, no-gpu-node (stable codes for --json)."""
    kind: str
    source: str
    summary: str
    quote: str = ""
    fixes: tuple[str, ...] = ()

    @property
    def waiting(self) -> bool:
        """A node is on its way: keep waiting."""
        return self.kind in ("scaling-up", "launching")

    def text(self) -> str:
        said = f"\n    {self.source} said: {self.quote}" if self.quote else ""
        return self.summary + said + "".join(f"\n    fix: {f}" for f in self.fixes)


def when(event: Mapping[str, Any]) -> Optional[datetime]:
    """When an event (core/v1, possibly written through events.k8s.io) was last seen."""
    for value in ((event.get("series") or {}).get("lastObservedTime"), event.get("lastTimestamp"),
                  event.get("eventTime"), event.get("firstTimestamp"),
                  (event.get("metadata") or {}).get("creationTimestamp")):
        if value:
            return parse_time(value)
    return None


def parse_time(value: Any) -> Optional[datetime]:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    text = str(value).strip()
    go = re.match(r"^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)(?:\.\d+)? ([+-]\d{4})", text)  # Go's time.String()
    if go:
        return datetime.strptime(f"{go[1]} {go[2]} {go[3]}", "%Y-%m-%d %H:%M:%S %z")
    text = re.sub(r"(\.\d{6})\d+", r"\1", text.replace("Z", "+00:00"))
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def component(event: Mapping[str, Any]) -> str:
    return ((event.get("source") or {}).get("component") or event.get("reportingComponent")
            or event.get("reportingController") or "")


def latest(events: Iterable[Mapping[str, Any]], reasons: Iterable[str], since: Optional[datetime] = None,
           source: Optional[str] = None) -> list[Mapping[str, Any]]:
    """The events with one of ``reasons``, oldest first, those seen before ``since`` left out."""
    wanted = set(reasons)
    picked = [e for e in events if e.get("reason") in wanted and (source is None or component(e) == source)
              and not (since and when(e) and when(e) < since)]
    return sorted(picked, key=lambda e: when(e) or datetime.min.replace(tzinfo=timezone.utc))


UNKNOWN_CLOUD = Launches("the cloud")
"""The wording for a stack whose outputs name no platform gpuready knows."""


def launches_of(platform: Optional[str]) -> Launches:
    """How the compute service of the platform called ``platform`` is named and its launch failures fixed."""
    found = platforms.get(platform)
    return found.launches if found and found.launches else UNKNOWN_CLOUD


def cloud_error(text: str, group: str, launches: Launches, source: str = "cluster-autoscaler") -> Finding:
    """A failed launch, classified: the cloud's capacity or quota, IAM, or a node that never joined, in the words of
    the platform's compute service (its descriptor's ``launches``)."""
    cloud = launches.service
    if re.search(r"VcpuLimitExceeded|VCPULimitExceeded|MaxSpotInstanceCountExceeded|quota", text, re.I):
        return Finding("quota", source, f"{cloud} refused the GPU instance{_for(group)}: the account's quota for the "
                       "GPU family is used up", text, (launches.quota_fix,))
    if re.search(r"AccessDenied|UnauthorizedOperation|not authorized", text):
        return Finding("iam", source, f"the autoscaler's IAM role may not resize {group or 'the node group'}", text,
                       ("its IAM role needs autoscaling:SetDesiredCapacity and TerminateInstanceInAutoScalingGroup "
                        "on the cluster's tagged groups (gpuready:autoscaler builds it)",))
    if re.search(r"failed to register|ScaleUpTimedOut", text):
        return Finding("not-registered", source, f"a node was started{_for(group)} but never joined the cluster",
                       text, (launches.join_fix,))
    capacity = re.search(r"InsufficientInstanceCapacity|insufficient capacity|Unfulfillable|"
                         r"placeholder-cannot-be-fulfilled|cannot provision|RESOURCE_POOL_EXHAUSTED|STOCKOUT|"
                         r"AllocationFailed|SkuNotAvailable", text, re.I)
    summary = (f"{cloud} could not launch the GPU instance{_for(group)}: no capacity for the type in its zones right "
               "now" + ("" if not launches.quota_in_capacity or
                        re.search(r"InsufficientInstanceCapacity|insufficient capacity", text, re.I)
                        else ", or the account's vCPU quota"))
    cause = f"; the cause: {launches.cause.format(group=group)}" if launches.cause and group else ""
    fix = launches.capacity_fix + cause
    return Finding("capacity" if capacity else "scale-up-failed", source,
                   summary if capacity else f"a scale-up failed{_for(group)}", text, (fix,))


def _for(group: str) -> str:
    return f" for group {group}" if group else ""
