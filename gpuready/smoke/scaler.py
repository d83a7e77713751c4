"""Why a GPU pod stays Pending, read from what the node autoscalers said: cluster-autoscaler's pod events and status
ConfigMap, Karpenter's pod events and NodeClaims. Pure functions of API objects (JSON-shaped dicts) to findings."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterable, Mapping, Optional

import yaml

CA_STATUS = ("kube-system", "cluster-autoscaler-status")
"""Where cluster-autoscaler writes its status (``--status-config-map-name``'s default)."""
CA_STALE_S = 180
"""cluster-autoscaler rewrites its status every loop (10 s); older than this, it is not running (its FAQ says 3 min)."""
QUIET_AFTER_S = 120
"""Pending this long without a word from any autoscaler means none is acting on the pod."""
TEMPLATE = "k8s.io/cluster-autoscaler/node-template"
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


@dataclass(frozen=True)
class Finding:
    """One thing that keeps the pod Pending. ``kind``: scaling-up, launching, no-scale-up, capacity, quota, iam,
    not-registered, device-plugin, no-autoscaler, scheduler, no-gpu-node (stable codes for --json)."""
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


# cluster-autoscaler ----------------------------------------------------------------------------------------------

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


def _labels_fix(context: Context) -> str:
    tags = ", ".join(f"{TEMPLATE}/label/{k}={v}" for k, v in sorted(context.node_labels.items())) or "(none)"
    return ("expected for the groups that are not GPU groups; for the GPU group at zero nodes cluster-autoscaler "
            f"knows only the labels its Auto Scaling group is tagged with: tag it with {tags}")


def _taint_fix(context: Context) -> str:
    tolerated = ", ".join(f"{t['key']}:{t['effect']}" for t in context.taints) or "none"
    return ("expected for tainted system groups; for the GPU group, its taint template tags "
            f"({TEMPLATE}/taint/<key>=<value>:<effect>) must be taints the smoke pod tolerates ({tolerated})")


CA_REASONS: tuple[tuple[str, str, Any], ...] = (
    (r"Insufficient nvidia\.com/gpu", "no-scale-up", lambda c: (
        f"no group's template offers {c.gpus} nvidia.com/gpu: at zero nodes cluster-autoscaler learns a group's GPUs "
        f"from its Auto Scaling group's tag {TEMPLATE}/resources/nvidia.com/gpu=<GPUs per node> (or from its first "
        "instance type); tag it, or ask for no more GPUs than the group's instance type has (--gpus)")),
    (r"Insufficient (\S+)", "no-scale-up", lambda c: "no group's node template has enough of that resource for the "
                                                     "pod: a larger instance type, or a smaller request"),
    (r"didn't match Pod's node affinity/selector", "no-scale-up", _labels_fix),
    (r"untolerated taint|didn't tolerate", "no-scale-up", _taint_fix),
    (r"max node group size reached", "no-scale-up", lambda c: (
        "the group is at its maxSize: running GPU work holds its nodes, or raise it "
        "(pulumi config set gpuready:maxSize N; pulumi up)")),
    (r"in backoff after failed scale-up", "no-scale-up", lambda c: (
        "a recent scale-up of the group failed (EC2 capacity, quota or IAM: see cluster-autoscaler-status below); "
        "cluster-autoscaler retries after a backoff of up to 30 min")),
    (r"not ready for scale-up", "no-scale-up", lambda c: (
        "cluster-autoscaler holds the group back (nodes that never registered, or a recent failure): "
        "kubectl -n kube-system describe configmap cluster-autoscaler-status")),
    (r"max total nodes in cluster reached", "no-scale-up", lambda c: "cluster-autoscaler's --max-nodes-total is "
                                                                     "reached"),
    (r"exceeded quota|limit reached", "no-scale-up", lambda c: (
        "cluster-autoscaler's resource limits (--cores-total, --memory-total, --gpu-total) are reached")),
    (r"wouldn't fit if a new node is added", "no-scale-up", lambda c: "no group's node template can hold the pod"),
)


def not_triggered(message: str, context: Context) -> Finding:
    """``pod didn't trigger scale-up: %s``: counts of node groups per reason (processors/status ReasonsMessage)."""
    body = re.sub(r"^pod didn't trigger scale-up:?\s*", "", message)
    reasons = re.findall(r"(\d+) (.+?)(?=, \d+ |$)", body) or [("", body)]
    fixes = []
    for count, reason in reasons:
        for pattern, _, fix in CA_REASONS:
            if re.search(pattern, reason):
                fixes.append(f"{count} {reason}".strip() + f" -> {fix(context)}")
                break
    return Finding("no-scale-up", "cluster-autoscaler", "cluster-autoscaler found no node group that could run the "
                   "pod", message, tuple(fixes))


def cloud_error(text: str, group: str, source: str = "cluster-autoscaler") -> Finding:
    """A failed launch, classified: EC2 capacity, EC2 quota, IAM, or a node that never joined."""
    activities = f"aws autoscaling describe-scaling-activities --auto-scaling-group-name {group} --max-items 3"
    if re.search(r"VcpuLimitExceeded|VCPULimitExceeded|MaxSpotInstanceCountExceeded|quota", text, re.I):
        return Finding("quota", source, f"EC2 refused the GPU instance{_for(group)}: the account's vCPU quota for "
                       "the instance family is used up", text,
                       ("request more in Service Quotas (EC2: 'Running On-Demand G and VT instances' or 'Running "
                        "On-Demand P instances', or their Spot counterparts) for this region, or use a smaller type",))
    if re.search(r"AccessDenied|UnauthorizedOperation|not authorized", text):
        return Finding("iam", source, f"the autoscaler's IAM role may not resize {group or 'the node group'}", text,
                       ("its IAM role needs autoscaling:SetDesiredCapacity and TerminateInstanceInAutoScalingGroup "
                        "on the cluster's tagged groups (gpuready:autoscaler builds it)",))
    if re.search(r"failed to register|ScaleUpTimedOut", text):
        return Finding("not-registered", source, f"a node was started{_for(group)} but never joined the cluster",
                       text, ("check the instance's bootstrap: node IAM role and access entry, subnets' route to "
                              "the API and the registries, the AMI",))
    capacity = re.search(r"InsufficientInstanceCapacity|insufficient capacity|Unfulfillable|"
                         r"placeholder-cannot-be-fulfilled|cannot provision", text, re.I)
    summary = (f"EC2 could not launch the GPU instance{_for(group)}: no capacity for the type in its zones right now"
               + ("" if re.search(r"InsufficientInstanceCapacity|insufficient capacity", text, re.I)
                  else ", or the account's vCPU quota"))
    cause = f"; the cause: {activities}" if group else ""
    return Finding("capacity" if capacity else "scale-up-failed", source,
                   summary if capacity else f"a scale-up failed{_for(group)}", text,
                   ("other zones (subnets) or GPU types (gpuready:instanceTypes), ON_DEMAND instead of SPOT, a quota "
                    f"increase, or retry later{cause}",))


def _for(group: str) -> str:
    return f" for group {group}" if group else ""


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


def cluster_autoscaler(pod_events, context: Context, status: Optional[Mapping[str, Any]] = None,
                       status_events=(), since: Optional[datetime] = None,
                       now: Optional[datetime] = None) -> list[Finding]:
    findings = []
    said = latest(pod_events, ("TriggeredScaleUp", "NotTriggerScaleUp"))
    if said:
        last = said[-1]
        findings.append(triggered(last.get("message", "")) if last["reason"] == "TriggeredScaleUp"
                        else not_triggered(last.get("message", ""), context))
    failures = {}
    for event in latest(status_events, ("FailedToScaleUpGroup", "ScaleUpFailed", "ScaleUpTimedOut"), since):
        message = event.get("message", "")
        name = (re.search(r"group (\S+?)(?::|\s|$)", message) or [None, ""])[1]
        failures[name] = cloud_error(f"{event['reason']}: {message}", name)
    if status is not None:
        state = read_status(status)
        if now and state["updated"] and (now - state["updated"]).total_seconds() > CA_STALE_S:
            findings.append(Finding("no-autoscaler", "cluster-autoscaler", "cluster-autoscaler has not written its "
                                    f"status since {state['updated']:%Y-%m-%d %H:%M:%S %Z}: it is not running",
                                    fixes=(DEPLOYMENTS["cluster-autoscaler"],)))
        for group in state["groups"]:
            if group["scaleUp"] == "Backoff" and group["name"] not in failures:
                failures[group["name"]] = cloud_error(f"ScaleUp: Backoff {group['error']}".strip(), group["name"])
    return findings + list(failures.values())


# Karpenter ------------------------------------------------------------------------------------------------------

NOMINATED = re.compile(r"nodeclaim/([\w.-]+)")
"""provisioning/scheduling NominatePodEvent: ``Pod should schedule on: nodeclaim/NAME[, node/NAME]``."""


def conditions(nodeclaim: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {c.get("type"): c for c in (nodeclaim.get("status") or {}).get("conditions") or []}


def nodeclaim_state(name: str, nodeclaim: Optional[Mapping[str, Any]], events=()) -> Finding:
    """What a nominated NodeClaim is waiting for: Launched, then Registered, then Initialized (GPUs advertised)."""
    if nodeclaim is None:
        said = latest([e for e in events if (e.get("involvedObject") or {}).get("name") == name],
                      ("InsufficientCapacityError", "NodeClassNotReady"))
        if said and said[-1]["reason"] == "InsufficientCapacityError":
            return cloud_error(said[-1].get("message", ""), "", "karpenter")
        if said:
            return Finding("launch-failed", "karpenter", f"Karpenter could not launch nodeclaim {name}: its "
                           "EC2NodeClass is not ready", said[-1].get("message", ""),
                           ("kubectl describe ec2nodeclass (subnets, security groups, AMI, instance profile)",))
        return Finding("launch-failed", "karpenter", f"nodeclaim {name} is gone: Karpenter deleted it",
                       fixes=(f"kubectl get events -A --field-selector involvedObject.name={name}",))
    found = conditions(nodeclaim)
    node = (nodeclaim.get("status") or {}).get("nodeName") or ""
    kind = (nodeclaim.get("metadata") or {}).get("labels", {}).get("node.kubernetes.io/instance-type", "")
    what = f"nodeclaim {name}" + (f" ({kind})" if kind else "")
    launched, registered, initialized = (found.get(t, {}) for t in ("Launched", "Registered", "Initialized"))
    if launched.get("status") != "True":
        quote = ": ".join(filter(None, (launched.get("reason"), launched.get("message"))))
        if re.search(r"capacity|quota|VcpuLimit|not authorized|AccessDenied", quote, re.I):
            return cloud_error(quote, "", "karpenter")
        if launched.get("status") == "False" or launched.get("reason") not in (None, "", "AwaitingReconciliation"):
            return Finding("launch-failed", "karpenter", f"Karpenter cannot launch {what}", quote,
                           ("kubectl describe nodeclaim " + name,))
        return Finding("launching", "karpenter", f"Karpenter is launching {what}: usually 1-3 min before the "
                       "instance joins", quote)
    if registered.get("status") != "True":
        return Finding("launching", "karpenter", f"{what} is running; waiting for it to join the cluster "
                       "(Karpenter deletes it if it has not within 15 min)",
                       ": ".join(filter(None, (registered.get("reason"), registered.get("message")))))
    if initialized.get("status") != "True":
        quote = ": ".join(filter(None, (initialized.get("reason"), initialized.get("message"))))
        if "nvidia.com/gpu" in quote:
            return Finding("device-plugin", "karpenter", f"node {node or name} joined but has no allocatable "
                           "nvidia.com/gpu yet: is the NVIDIA device plugin running on it? (normal for a minute "
                           "after joining)", quote,
                           (f"kubectl get pods -A -o wide --field-selector spec.nodeName={node or 'NODE'}: the "
                            "device plugin must tolerate the GPU taint and select the node's labels",))
        return Finding("launching", "karpenter", f"node {node or name} joined; waiting for it to be ready", quote)
    return Finding("launching", "karpenter", f"node {node or name} is ready with GPUs: the pod should be bound "
                   "any moment")


KARPENTER_REASONS: tuple[tuple[str, Any], ...] = (
    (r"exceed limits|limits have been exhausted", lambda c: (
        "the NodePool's limits (its nvidia.com/gpu cap) are used by running nodes: wait for them, or raise the "
        "stack's GPU cap (gpuready:maxSize)")),
    (r"did not tolerate", lambda c: "expected for tainted NodePools that are not for GPUs; for the GPU NodePool, its "
                                    "taints must be ones the smoke pod tolerates"),
    (r"no instance type .*(enough resources|satisfied resources)", lambda c: (
        f"no instance type the NodePool admits holds {c.gpus} nvidia.com/gpu: admit larger types "
        "(gpuready:instanceTypes) or ask for fewer GPUs (--gpus)")),
    (r"does not have known values|incompatible requirements|not in ", lambda c: (
        "the pod's node selector (" + ", ".join(f"{k}={v}" for k, v in sorted(c.node_labels.items())) +
        ") is not among the NodePool's template labels or requirements")),
    (r"filtered out all", lambda c: "the NodePool's requirements leave no instance type"),
)


def karpenter(pod_events, context: Context, nodeclaims: Optional[Mapping[str, Any]] = None,
              nodeclaim_events=()) -> list[Finding]:
    said = [e for e in latest(pod_events, ("Nominated", "FailedScheduling"))
            if e["reason"] == "Nominated" or component(e) == "karpenter"
            or str(e.get("message", "")).startswith("Failed to schedule pod,")]
    if not said:
        return []
    last = said[-1]
    message = last.get("message", "")
    if last["reason"] == "Nominated":
        match = NOMINATED.search(message)
        if not match:
            return [Finding("launching", "karpenter", "Karpenter nominated an existing node for the pod", message)]
        name = match[1]
        if nodeclaims is None or name not in nodeclaims:
            return [Finding("launching", "karpenter", f"Karpenter is launching nodeclaim {name}", message)]
        return [nodeclaim_state(name, nodeclaims[name], nodeclaim_events)]
    fixes = []
    for part in re.sub(r"^Failed to schedule pod,\s*", "", message).split("; "):
        pool = re.search(r'nodepool "([^"]+)"|NodePool="?([\w.-]+)', part)
        for pattern, fix in KARPENTER_REASONS:
            if re.search(pattern, part):
                name = next((g for g in pool.groups() if g), "") if pool else ""
                fixes.append((f"nodepool {name}: " if name else "") + fix(context))
                break
    return [Finding("no-scale-up", "karpenter", "Karpenter found no NodePool that could run the pod", message,
                    tuple(dict.fromkeys(fixes)))]


# the scheduler and the nodes -------------------------------------------------------------------------------------

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
    for node in nodes:
        allocatable = ((node.get("status") or {}).get("allocatable") or {}).get("nvidia.com/gpu", "0")
        if str(allocatable) in ("0", ""):
            findings.append(Finding("device-plugin", "gpuready", f"GPU node {node['metadata']['name']} advertises 0 "
                                    "nvidia.com/gpu: the NVIDIA device plugin is not running there (tolerations, "
                                    "node selector, or the driver)"))
    return findings


# all together ----------------------------------------------------------------------------------------------------

def no_autoscaler(context: Context) -> Finding:
    scaler = context.autoscaler
    if scaler in DEPLOYMENTS:
        check = f"is the {scaler} controller ready? {DEPLOYMENTS[scaler]}"
    elif scaler == "none":
        check = ("the stack installs no autoscaler (gpuready:autoscaler=none): is the cluster's own one running and "
                 "does it manage the GPU node group? Or keep GPU nodes with gpuready:minSize >= 1")
    elif context.platform in ("gke", "aks"):
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
    findings = cluster_autoscaler(pod_events, context, status, status_events, since, now) + \
        karpenter(pod_events, context, nodeclaims, nodeclaim_events)
    if not findings and pending_for >= QUIET_AFTER_S:
        findings.append(no_autoscaler(context))
    return findings


def nominated(pod_events: list[Mapping[str, Any]]) -> list[str]:
    """The NodeClaims Karpenter nominated for the pod, newest last (to be read before ``explain``)."""
    return [m[1] for e in latest(pod_events, ("Nominated",)) if (m := NOMINATED.search(e.get("message", "")))]
