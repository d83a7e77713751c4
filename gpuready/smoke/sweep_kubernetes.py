"""The sweep on Kubernetes: one Job pinned to each GPU node (the stack's ``gpuNodeLabels``), asking for all of its
allocatable ``nvidia.com/gpu``, the probe in one shared ConfigMap, one watch for all the Jobs' pods, each pod's logs
read, every object deleted on every exit path (:func:`.kubernetes.delete_objects`)."""

from __future__ import annotations

import copy
import sys
import time
import uuid
from typing import Any, Callable, Optional, TextIO

from ..errors import UserError
from ..probe import ProbeReport, core
from . import kubernetes, sweep
from .outputs import StackOutputs

TAINT = {"key": "gpuready.io/sweep", "value": "failed", "effect": "NoSchedule"}
"""What ``--quarantine`` puts on a failing node (and what the sweep's own pods tolerate, to sweep it again)."""
LABEL = "gpuready.io/sweep"
"""The label ``--quarantine`` sets on a failing node (``failed``): ``kubectl get nodes -l gpuready.io/sweep=failed``."""
REASON = "gpuready.io/sweep-reason"
"""The annotation naming why the node failed (the row's detail, at most :data:`REASON_LIMIT` characters)."""
REASON_LIMIT = 1000
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
TERMINAL = ("Succeeded", "Failed")


def gpu_nodes(core_api: Any, calls: kubernetes.BoundedCalls, labels: dict[str, str], deadline: float) -> list[dict]:
    """The GPU nodes (plain dicts), by name: those carrying every label of ``labels``."""
    if not labels:
        raise UserError("the stack's outputs lack gpuNodeLabels (the labels its GPU nodes carry): without them "
                        "gpuready cannot tell GPU nodes from the others; re-read the outputs of a current stack")
    selector = ",".join(f"{k}={v}" for k, v in labels.items())
    found = calls(core_api.list_node, label_selector=selector, deadline=deadline)
    plain = core_api.api_client.sanitize_for_serialization
    return sorted((plain(n) for n in found.items), key=lambda n: n["metadata"]["name"])


def allocatable_gpus(node: dict) -> int:
    value = ((node.get("status") or {}).get("allocatable") or {}).get("nvidia.com/gpu") or "0"
    try:
        return int(value)
    except ValueError:
        return 0


def manifests(run: str, namespace: str, nodes: list[tuple[str, int]], taints: list[dict[str, str]],
              node_labels: dict[str, str], timeout: float, full: bool = False,
              sharing: Optional[str] = None) -> tuple[dict, list[dict]]:
    """The ConfigMap holding the probe and one Job per (node name, GPUs) of ``nodes``, each pinned to its node by
    a required node affinity on the node's name (as the DaemonSet controller pins its pods: the scheduler still
    checks the GPUs are free), tolerating ``taints`` and :data:`TAINT`; ``sharing`` as in kubernetes.manifests."""
    labels = {"app.kubernetes.io/name": "gpuready-sweep", "app.kubernetes.io/instance": run}
    config_map, _ = kubernetes.manifests(run, namespace, 1, taints, node_labels, timeout, full)
    config_map["metadata"]["labels"] = dict(labels)
    jobs = []
    for i, (node, gpus) in enumerate(nodes):
        _, job = kubernetes.manifests(f"{run}-{i}", namespace, gpus, taints, node_labels, timeout, full,
                                      sharing=sharing)
        job["metadata"]["labels"] = dict(labels)
        job["metadata"]["annotations"] = {"gpuready.io/node": node}
        pod = job["spec"]["template"]
        pod["metadata"]["labels"] = dict(labels)
        spec = pod["spec"]
        spec["volumes"][0]["configMap"]["name"] = run
        spec["tolerations"].append({"key": TAINT["key"], "operator": "Exists", "effect": TAINT["effect"]})
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}
        jobs.append(job)
    return config_map, jobs


def run(outputs: dict[str, Any], *, nodes: Optional[int] = None, timeout: float = 1800, full: bool = False,
        quarantine: bool = False, namespace: str = "default", progress: Optional[TextIO] = None,
        clock: Callable[[], float] = time.monotonic, trust_kubeconfig_exec: bool = False) -> sweep.SweepResult:
    """Sweep the stack's GPU nodes (the first ``nodes`` of them by name, default all); with ``quarantine``,
    taint each node whose probe failed with :data:`TAINT` and label it (:data:`LABEL`, :data:`REASON`). Progress goes
    to ``progress`` (default: stderr)."""
    progress = progress or sys.stderr
    stack = StackOutputs(outputs, kubernetes.KUBERNETES_PLATFORMS)
    client, api = kubernetes.api_client(stack["kubeconfig"], trust_kubeconfig_exec)
    core_api, batch_api = client.CoreV1Api(api), client.BatchV1Api(api)
    calls = kubernetes.BoundedCalls(client, timeout, clock)
    taints = stack.gpu_taints()
    labels = dict(stack.get("gpuNodeLabels", {}))
    deadline = clock() + timeout
    run_name = f"gpuready-sweep-{uuid.uuid4().hex[:10]}"
    result = sweep.SweepResult(target="kubernetes", job={"name": run_name, "namespace": namespace})
    found = gpu_nodes(core_api, calls, labels, deadline)
    if not found:
        result.notes.append("no node carries the GPU labels " + ",".join(f"{k}={v}" for k, v in labels.items())
                            + ": a pool scaled to zero has no node to sweep (scale it up first)")
        return result
    if nodes and nodes < len(found):
        result.notes.append(f"{nodes} of the {len(found)} GPU nodes swept (--nodes)")
        found = found[:nodes]
    swept: list[tuple[str, int]] = []
    for node in found:
        name, gpus = node["metadata"]["name"], allocatable_gpus(node)
        kind = (node["metadata"].get("labels") or {}).get(INSTANCE_TYPE_LABEL)
        if (node.get("spec") or {}).get("unschedulable"):
            result.rows.append(sweep.SweepRow(node=name, instance_type=kind, verdict=core.SKIP,
                                              detail="cordoned (spec.unschedulable): not swept"))
        elif gpus < 1:
            result.rows.append(sweep.row(name, None, instance_type=kind, problem=(
                "advertises no allocatable nvidia.com/gpu: the device plugin is not running there, or its GPUs "
                "are lost (not swept)")))
        else:
            swept.append((name, gpus))
            result.rows.append(sweep.SweepRow(node=name, instance_type=kind))
    config_map, jobs = manifests(run_name, namespace, swept, taints, labels, timeout, full,
                                 sharing=stack.get("gpuSharing"))
    rows = {r.node: r for r in result.rows}
    by_job = {job["metadata"]["name"]: rows[node] for job, (node, _) in zip(jobs, swept)}
    for job_name, r in by_job.items():
        r.job = {"name": job_name}
    print(f"gpuready: {run_name}: {len(jobs)} Jobs, one pinned to each GPU node", file=progress)
    created: list[tuple[str, str, Callable[..., Any]]] = []
    body = client.V1DeleteOptions(propagation_policy="Background")
    try:  # from here on, every exit (error, Ctrl-C, SIGTERM) deletes what may have been created
        if jobs:
            created.append(("ConfigMap", run_name, lambda **kw: core_api.delete_namespaced_config_map(
                run_name, namespace, **kw)))
            calls.create(core_api.create_namespaced_config_map, namespace, config_map, deadline)
        for job in jobs:
            job_name = job["metadata"]["name"]
            created.insert(0, ("Job", job_name, lambda job_name=job_name, **kw: batch_api.delete_namespaced_job(
                job_name, namespace, body=body, **kw)))
            calls.create(batch_api.create_namespaced_job, namespace, job, deadline)
        pods = _wait(client, api, calls, namespace, run_name, set(by_job), deadline, progress, clock) if jobs else {}
        for job_name, r in by_job.items():
            pod_name, phase = pods.get(job_name, (None, None))
            r.job.update({"pod": pod_name, "phase": phase})
            if phase not in TERMINAL:
                _replace(r, sweep.row(r.node, None, instance_type=r.instance_type, job=r.job, problem=(
                    f"not finished after {timeout:g} s ({phase or 'no pod'}: its GPUs busy with other pods, or the "
                    "node not ready); deleted")))
                continue
            report = core.find_report(kubernetes.probe_logs(client, core_api, calls, pod_name, namespace, deadline))
            _replace(r, sweep.row(r.node, ProbeReport.from_json(report) if report else None,
                                  instance_type=r.instance_type, job=r.job,
                                  problem="" if report or phase == "Succeeded" else f"pod {phase} without a report"))
        if quarantine:
            _quarantine(client, core_api, calls, result, progress, clock)
        return result
    except KeyboardInterrupt as stop:
        if type(stop) is not KeyboardInterrupt:  # SIGTERM (the CLI's subclass): the finally deletes, then stop
            raise
        for r in by_job.values():
            if not r.checks:
                _replace(r, sweep.row(r.node, None, instance_type=r.instance_type, job=r.job,
                                      problem="interrupted; deleted"))
        result.notes.append("interrupted: every Job deleted")
        return result
    finally:
        if created:
            kubernetes.delete_objects(client, calls, [(f"{kind} {name}", delete) for kind, name, delete in created],
                                      f"in namespace {namespace}", f"kubectl -n {namespace} delete job,configmap "
                                      f"-l app.kubernetes.io/instance={run_name}", progress)
            result.job["deleted"] = [f"{kind}/{name}" for kind, name, _ in created]


def _replace(old: sweep.SweepRow, new: sweep.SweepRow) -> sweep.SweepRow:
    """``old`` (the row already in the result) made ``new``."""
    old.__dict__.update(new.__dict__)
    return old


def _wait(client, api, calls, namespace, run_name, job_names, deadline, progress, clock) -> dict[str, tuple]:
    """Follow every pod of the run with one watch (opened again when it times out or fails on a passing fault)
    until each Job's pod ends or ``deadline``: {job name: (pod name, phase)}."""
    started, pods, shown = clock(), {}, None
    while clock() < deadline:
        seconds = max(1, min(int(deadline - clock()), 60))
        try:
            for event in kubernetes.watch_pods(client, api, calls, namespace,
                                               f"app.kubernetes.io/instance={run_name}", seconds):
                pod = event["object"]
                job_name = (pod.metadata.labels or {}).get("job-name")
                if job_name not in job_names:
                    continue
                pods[job_name] = (pod.metadata.name, pod.status.phase)
                counts: dict[str, int] = {}
                for _, phase in pods.values():
                    counts[phase] = counts.get(phase, 0) + 1
                if counts != shown:
                    shown = counts
                    print(f"gpuready: {run_name}: " + ", ".join(f"{n} {p}" for p, n in sorted(counts.items(), key=str))
                          + f" after {clock() - started:.0f} s", file=progress)
                if len(pods) == len(job_names) and all(p in TERMINAL for _, p in pods.values()):
                    return pods
        except Exception as error:  # noqa: BLE001 (a passing fault: watch again, until the deadline)
            if not calls.retryable(error):
                raise
            time.sleep(min(0.5, max(0.0, deadline - clock())))
    return pods


def _quarantine(client, core_api, calls, result: sweep.SweepResult, progress, clock) -> None:
    """Take each node whose probe failed (or that advertises no GPU) out of service: :data:`TAINT`, the label
    :data:`LABEL` and the cause in :data:`REASON`, and say so; a node the sweep could not finish on is left alone
    (no evidence against it)."""
    for r in result.rows:
        if r.verdict != core.FAIL or not (r.checks or r.detail.startswith("advertises no allocatable")):
            continue
        deadline = clock() + kubernetes.CLEANUP_GRACE
        try:
            how = quarantine(core_api, calls, r.node, r.detail, deadline)
        except client.exceptions.ApiException as error:
            note = f"could not taint {r.node} ({error.status} {error.reason}): `kubectl taint node {r.node} " \
                   f"{TAINT['key']}={TAINT['value']}:{TAINT['effect']}` and `kubectl label node {r.node} " \
                   f"{LABEL}=failed`"
        else:
            note = f"{r.node} tainted {TAINT['key']}={TAINT['value']}:{TAINT['effect']} and labelled {LABEL}=failed" + \
                   {"added": "", "already": " (it was already)",
                    "found": " (found there after a concurrent change of the node)"}[how] + \
                   f": once repaired, `kubectl taint node {r.node} {TAINT['key']}:{TAINT['effect']}-` and " \
                   f"`kubectl label node {r.node} {LABEL}-`"
            r.detail = f"tainted {TAINT['key']}={TAINT['value']}:{TAINT['effect']}; {r.detail}"
        result.notes.append(note)
        print(f"gpuready: {note}", file=progress)


def quarantine(core_api: Any, calls: kubernetes.BoundedCalls, node: str, reason: str, deadline: float) -> str:
    """Put :data:`TAINT`, the label :data:`LABEL` ``failed`` and ``reason`` (:data:`REASON`) on ``node`` unless it
    carries them: ``added``, ``already`` (before any patch), or ``found`` (after a conflict: ours, whose answer was
    lost, or a concurrent writer's). A JSON Patch that tests the node's resourceVersion, so that a concurrent change
    is never overwritten (read again and retried)."""
    plain = core_api.api_client.sanitize_for_serialization
    reason = reason[:REASON_LIMIT]
    for attempt in range(3):
        current = plain(calls(core_api.read_node, node, deadline=deadline))
        taints = (current.get("spec") or {}).get("taints") or []
        labels, notes = (current["metadata"].get(k) or {} for k in ("labels", "annotations"))
        tainted = any(t.get("key") == TAINT["key"] and t.get("effect") == TAINT["effect"] for t in taints)
        if tainted and labels.get(LABEL) == "failed" and notes.get(REASON) == reason:
            return "found" if attempt else "already"
        version = current["metadata"].get("resourceVersion")
        patch = [{"op": "test", "path": "/metadata/resourceVersion", "value": version}] if version else []
        if not tainted:
            patch.append({"op": "add", "path": "/spec/taints", "value": [*taints, dict(TAINT)]})
        patch += [{"op": "add", "path": "/metadata/labels", "value": {**labels, LABEL: "failed"}},
                  {"op": "add", "path": "/metadata/annotations", "value": {**notes, REASON: reason}}]
        try:
            calls(core_api.patch_node, node, copy.deepcopy(patch), deadline=deadline)
            return "added"
        except Exception as error:  # noqa: BLE001 (a conflict: read again)
            if getattr(error, "status", None) not in (409, 422) or attempt == 2:
                raise
    return "found"
