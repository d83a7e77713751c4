"""Karpenter's words (also EKS Auto Mode's): ``Nominated`` and ``FailedScheduling`` on the pod, then the nominated
NodeClaim's conditions and events (kubernetes-sigs/karpenter: pkg/controllers/provisioning/scheduling, nodeclaim)."""

from __future__ import annotations

import re
from typing import Any, Mapping, Optional

from .base import UNKNOWN_CLOUD, Context, Finding, cloud_error, component, latest, launches_of

NOMINATED = re.compile(r"nodeclaim/([\w.-]+)")
"""provisioning/scheduling NominatePodEvent: ``Pod should schedule on: nodeclaim/NAME[, node/NAME]``."""


def conditions(nodeclaim: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {c.get("type"): c for c in (nodeclaim.get("status") or {}).get("conditions") or []}


def nodeclaim_state(name: str, nodeclaim: Optional[Mapping[str, Any]], events=(), launches=UNKNOWN_CLOUD) -> Finding:
    """What a nominated NodeClaim is waiting for: Launched, then Registered, then Initialized (GPUs advertised);
    a failed launch in the words of the platform's compute service (``launches``)."""
    if nodeclaim is None:
        said = latest([e for e in events if (e.get("involvedObject") or {}).get("name") == name],
                      ("InsufficientCapacityError", "NodeClassNotReady"))
        if said and said[-1]["reason"] == "InsufficientCapacityError":
            return cloud_error(said[-1].get("message", ""), "", launches, "karpenter")
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
            return cloud_error(quote, "", launches, "karpenter")
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


def explain(pod_events, context: Context, nodeclaims: Optional[Mapping[str, Any]] = None,
            nodeclaim_events=()) -> list[Finding]:
    """Its latest word on the pod: a nomination (then the NodeClaim's state; ``nodeclaims[name]`` None: deleted) or
    a refusal, quoted with a fix per NodePool."""
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
        return [nodeclaim_state(name, nodeclaims[name], nodeclaim_events, launches_of(context.platform))]
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


def nominated(pod_events: list[Mapping[str, Any]]) -> list[str]:
    """The NodeClaims Karpenter nominated for the pod, newest last (to be read before ``explain``)."""
    return [m[1] for e in latest(pod_events, ("Nominated",)) if (m := NOMINATED.search(e.get("message", "")))]
