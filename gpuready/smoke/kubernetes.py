"""The Kubernetes target: a Job asking for ``nvidia.com/gpu`` on the stack's GPU nodes, the probe delivered in a
ConfigMap (no image of ours), followed with a watch, its logs read, and everything it created deleted."""

from __future__ import annotations

import json
import sys
import time
import uuid
from dataclasses import asdict
from datetime import datetime, timezone
from typing import Any, Callable, Optional

from components.batch_gpu.facts import SMOKE_IMAGE

from ..errors import UserError
from ..probe import Check, ProbeReport, core
from . import scaler
from .result import SmokeResult

TTL_SECONDS = 600
"""Kubernetes deletes the finished Job after this long even if gpuready cannot (interrupted, lost connection)."""


def manifests(name: str, namespace: str, gpus: int, taints: list[dict[str, str]], node_labels: dict[str, str],
              timeout: float, full: bool = False, image: str = SMOKE_IMAGE) -> tuple[dict, dict]:
    """The ConfigMap holding the probe and the Job running it on one GPU node (tolerating every taint in
    ``taints``, selecting ``node_labels``)."""
    with open(core.__file__) as f:
        source = f.read()
    labels = {"app.kubernetes.io/name": "gpuready-smoke", "app.kubernetes.io/instance": name}
    config_map = {"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": name, "namespace": namespace, "labels": labels},
                  "data": {"probe.py": source}}
    tolerations = [{"key": t["key"], "operator": "Exists", "effect": t["effect"]} for t in taints]
    job = {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": int(timeout),
            "ttlSecondsAfterFinished": TTL_SECONDS,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "restartPolicy": "Never",
                    "nodeSelector": dict(node_labels),
                    "tolerations": tolerations,
                    "containers": [{
                        "name": "probe",
                        "image": image,
                        "command": ["python3", "/gpuready/probe.py", "--gpus", str(gpus), *(["--full"] if full
                                                                                             else [])],
                        "env": [{"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"}],
                        "resources": {"limits": {"nvidia.com/gpu": str(gpus)}},
                        "volumeMounts": [{"name": "probe", "mountPath": "/gpuready", "readOnly": True}],
                    }],
                    "volumes": [{"name": "probe", "configMap": {"name": name}}],
                },
            },
        },
    }
    return config_map, job


def _client(kubeconfig: str, trust_exec: bool = False):
    try:
        from kubernetes import client, config
    except ImportError:
        raise UserError("the kubernetes client is not installed: pip install 'gpuready[k8s]'") from None
    try:
        data = json.loads(kubeconfig)
    except json.JSONDecodeError:
        import yaml

        data = yaml.safe_load(kubeconfig)
    from .kubeconfig import checked

    return client, config.new_client_from_config_dict(checked(data, trust_exec))


def explain_pending(client: Any, api: Any, namespace: str, pod: str, context: scaler.Context, pending_for: float,
                    since: Optional[datetime] = None) -> list[scaler.Finding]:
    """Why a GPU pod stays Pending: what the autoscalers said (the pod's events from every source,
    cluster-autoscaler's status ConfigMap and its events, Karpenter's NodeClaims), the scheduler's last word, and GPU
    nodes that advertise no GPU. Objects the caller may not read are left out."""
    core_api, plain = client.CoreV1Api(api), api.sanitize_for_serialization

    def events(ns: str, name: str) -> list[dict]:
        return [plain(e) for e in core_api.list_namespaced_event(ns, field_selector=f"involvedObject.name={name}")
                .items]

    pod_events = events(namespace, pod)
    ns, name = scaler.CA_STATUS
    _, status = _read(client, lambda: plain(core_api.read_namespaced_config_map(name, ns)))
    status_events = (_read(client, lambda: events(ns, name))[1] or []) if status else []
    claims, claim_events = {}, []
    for claim in scaler.nominated(pod_events)[-1:]:
        found, value = _read(client, lambda: client.CustomObjectsApi(api).get_cluster_custom_object(
            "karpenter.sh", "v1", "nodeclaims", claim))
        if found:
            claims[claim] = value
        if found and value is None:  # deleted: a cluster-scoped object's events live in "default"
            claim_events = _read(client, lambda: events("default", claim))[1] or []
    selector = ",".join(f"{k}={v}" for k, v in context.node_labels.items())
    nodes = [plain(n) for n in core_api.list_node(label_selector=selector).items] if selector else []
    return scaler.explain(pod_events, context, pending_for=pending_for, status=status, status_events=status_events,
                          nodeclaims=claims, nodeclaim_events=claim_events, since=since,
                          now=datetime.now(timezone.utc)) + scaler.scheduler(pod_events, nodes, context)


def _read(client: Any, call: Callable[[], Any]) -> tuple[bool, Any]:
    """(True, object), (True, None) when it does not exist, (False, None) when we may not read it."""
    try:
        return True, call()
    except client.exceptions.ApiException as error:
        if error.status == 404:
            return True, None
        if error.status in (401, 403):
            return False, None
        raise


def run(outputs: dict[str, Any], *, gpus: int = 1, timeout: float = 1800, keep: bool = False, full: bool = False,
        namespace: str = "default", explain_after: float = 20.0, progress=sys.stderr,
        clock: Callable[[], float] = time.monotonic, trust_kubeconfig_exec: bool = False) -> SmokeResult:
    """Run the probe as a Job on the stack's GPU nodes and report what it found. A Pending pod is explained after
    ``explain_after`` seconds and again as often; what changed is printed to ``progress``. The kubeconfig's
    credential command runs only when a stack writes such commands, or with ``trust_kubeconfig_exec``."""
    kubeconfig = outputs.get("kubeconfig")
    if not kubeconfig:
        raise UserError("the stack's outputs lack kubeconfig: pass outputs read with --show-secrets")
    client, api = _client(kubeconfig, trust_kubeconfig_exec)
    core_api, batch_api = client.CoreV1Api(api), client.BatchV1Api(api)
    taints = outputs.get("gpuNodeTaints") or ([outputs["gpuTaint"]] if outputs.get("gpuTaint") else [])
    labels = outputs.get("gpuNodeLabels") or {}
    name = f"gpuready-smoke-{uuid.uuid4().hex[:10]}"
    context = scaler.Context(gpus=gpus, node_labels=dict(labels), taints=tuple(taints),
                             autoscaler=outputs.get("autoscaler"), platform=outputs.get("platform"))
    config_map, job = manifests(name, namespace, gpus, taints, labels, timeout, full)
    result = SmokeResult(target="kubernetes", job={"name": name, "namespace": namespace})
    try:  # from here on, every exit (error, Ctrl-C, SIGTERM) deletes what may have been created
        core_api.create_namespaced_config_map(namespace, config_map)
        batch_api.create_namespaced_job(namespace, job)
        phase, pod_name = _wait(client, api, namespace, name, timeout, explain_after, context, result, progress,
                                clock)
        result.job.update({"pod": pod_name, "phase": phase})
        if phase not in ("Succeeded", "Failed"):
            result.checks.append(Check("job_finished", core.FAIL, phase, "Succeeded",
                                       f"not finished after {timeout:g} s" + ("" if keep else "; deleted")))
            return result
        result.checks.append(Check("job_status", core.PASS if phase == "Succeeded" else core.FAIL, phase,
                                   "Succeeded"))
        logs = core_api.read_namespaced_pod_log(pod_name, namespace, container="probe")
        found = core.find_report(logs or "")
        result.add_probe(ProbeReport.from_json(found) if found else None)
        return result
    except KeyboardInterrupt as stop:
        if type(stop) is not KeyboardInterrupt:  # SIGTERM (the CLI's subclass): the finally deletes, then stop
            raise
        result.checks.append(Check("job_finished", core.FAIL, None, "Succeeded",
                                   "interrupted" + ("" if keep else "; deleted")))
        return result
    finally:
        if not keep:
            _delete(client, core_api, batch_api, namespace, name, progress)


def _wait(client, api, namespace, name, timeout, explain_after, context, result, progress, clock):
    from kubernetes import watch

    core_api = client.CoreV1Api(api)
    started, phase, pod_name, since, shown = clock(), None, None, None, None

    def explain() -> None:
        nonlocal shown
        findings = explain_pending(client, api, namespace, pod_name, context, clock() - started, since)
        result.diagnosis = [f.text() for f in findings]
        result.findings = [{**asdict(f), "waiting": f.waiting} for f in findings]
        for text in result.diagnosis:
            if text not in (shown or ()):
                print(f"gpuready: {name}: {text}", file=progress)
        shown = set(result.diagnosis) | (shown or set())

    while clock() - started < timeout:
        remaining = max(1, int(timeout - (clock() - started)))
        stream = watch.Watch().stream(core_api.list_namespaced_pod, namespace, label_selector=f"job-name={name}",
                                      timeout_seconds=min(remaining, max(1, int(explain_after))))
        for event in stream:
            pod = event["object"]
            pod_name, since = pod.metadata.name, pod.metadata.creation_timestamp
            if pod.status.phase != phase:
                phase = pod.status.phase
                print(f"gpuready: {name}: pod {pod_name} {phase} after {clock() - started:.0f} s", file=progress)
            if phase in ("Succeeded", "Failed"):
                return phase, pod_name
        if phase == "Pending" and pod_name and clock() - started >= explain_after:
            explain()
    if phase == "Pending" and pod_name and shown is None:
        explain()
    return phase, pod_name


def _delete(client, core_api, batch_api, namespace, name, progress) -> None:
    body = client.V1DeleteOptions(propagation_policy="Background")
    for kind, delete in (("Job", lambda: batch_api.delete_namespaced_job(name, namespace, body=body)),
                         ("ConfigMap", lambda: core_api.delete_namespaced_config_map(name, namespace))):
        try:
            delete()
        except Exception as error:  # noqa: BLE001 (reported; the Job's TTL removes it anyway)
            print(f"gpuready: could not delete {kind} {namespace}/{name} ({error.__class__.__name__}); "
                  f"Kubernetes removes the Job {TTL_SECONDS} s after it ends", file=progress)
