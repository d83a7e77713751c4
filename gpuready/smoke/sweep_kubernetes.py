"""The sweep on Kubernetes: one Job pinned to each GPU node (the stack's ``gpuNodeLabels``), asking for all of its
allocatable ``nvidia.com/gpu``, the probe in one shared ConfigMap, one watch for all the Jobs' pods, each pod's logs
read, every object deleted on every exit path (:func:`.kubernetes.delete_objects`)."""

from __future__ import annotations

import copy
import time
import uuid
from typing import Any, Callable, Mapping, Optional, TextIO

from gpuready_components.k8s_gpu.facts import POOL_LABEL

from ..errors import UserError
from ..probe import ProbeReport, core
from . import dra, kubernetes, sweep
from .outputs import StackOutputs
from .target import Request, drive

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


def on_flavor(job: dict, pool: Optional[str]) -> dict:
    """``job`` (pinned to a node of GPU pool ``pool`` by name) also selecting the pool's label
    (:data:`POOL_LABEL`, which the pool's ResourceFlavor selects on a stack with teams): Kueue assigns a Workload only
    a flavor whose ``nodeLabels`` its pods' ``nodeSelector`` and required node affinity allow (Kueue's
    "Resource Flavor" concept page), and cannot read a pin by node name, so without it a queue with several pools
    could admit the Job on another pool's quota and its pod would then never fit its node. Unchanged without a
    pool."""
    if pool:
        job["spec"]["template"]["spec"].setdefault("nodeSelector", {})[POOL_LABEL] = pool
    return job


class KubernetesSweepTarget(kubernetes.KubernetesRun):
    """The sweep on Kubernetes: the stack's GPU nodes (the first ``--nodes`` of them by name, default all), one Job
    pinned to each, a row per node; with ``--quarantine``, each node whose probe failed tainted with :data:`TAINT`
    and labelled (:data:`LABEL`, :data:`REASON`). Every Job and the ConfigMap are deleted on every way out
    (``--keep`` does not apply)."""

    def __init__(self, outputs: Mapping[str, Any], request: Request, *, namespace: str = "default",
                 progress: Optional[TextIO] = None, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(outputs, request, namespace=namespace, progress=progress, clock=clock)
        self.created: list[tuple[str, str, Callable[..., Any]]] = []
        """(kind, name, delete) of each object a create was sent for, the Jobs first."""
        self.pods: dict[str, tuple] = {}
        self.ended = False
        """Every Job's pod was judged (:meth:`collect` ran to its end): the rows are the sweep's verdict."""

    def preflight(self) -> bool:
        stack = StackOutputs(self.outputs, kubernetes.kubernetes_platforms())
        self.choose_team(stack)
        self.connect(stack)
        taints = stack.gpu_taints()
        labels = dict(stack.get("gpuNodeLabels", {}))
        self.run_name = run_name = f"gpuready-sweep-{uuid.uuid4().hex[:10]}"
        self.result = result = sweep.SweepResult(target="kubernetes",
                                                 job={"name": run_name, "namespace": self.namespace,
                                                      **self.queued_as()})
        found = gpu_nodes(self.core_api, self.calls, labels, self.deadline)
        if not found:
            result.notes.append("no node carries the GPU labels " + ",".join(f"{k}={v}" for k, v in labels.items())
                                + ": a pool scaled to zero has no node to sweep (scale it up first)")
            return False
        nodes = self.request.nodes
        if nodes and nodes < len(found):
            result.notes.append(f"{nodes} of the {len(found)} GPU nodes swept (--nodes)")
            found = found[:nodes]
        swept: list[tuple[str, int]] = []
        pools: dict[str, str] = {}
        device_class = dra.device_class(stack)  # DRA: a node's GPUs are in its ResourceSlices, not its allocatable
        published = dra.list_node_gpus(self.calls, self.client, self.api, self.deadline) if device_class else None
        for node in found:
            name = node["metadata"]["name"]
            gpus = allocatable_gpus(node) if published is None else published.get(name, 0)
            node_labels = node["metadata"].get("labels") or {}
            kind, capacity = node_labels.get(INSTANCE_TYPE_LABEL), kubernetes.node_capacity(stack.platform, node_labels)
            if (node.get("spec") or {}).get("unschedulable"):
                result.rows.append(sweep.SweepRow(node=name, instance_type=kind, capacity=capacity, verdict=core.SKIP,
                                                  detail="cordoned (spec.unschedulable): not swept"))
            elif gpus < 1:
                result.rows.append(sweep.row(name, None, instance_type=kind, problem=(
                    "advertises no allocatable nvidia.com/gpu: the device plugin is not running there, or its GPUs "
                    "are lost (not swept)") if published is None else (
                    f"advertises no allocatable GPU: no ResourceSlice of {dra.DRA_DRIVER_NAME} lists a GPU of it (the "
                    "DRA driver's kubelet plugin is not running there, or its GPUs are lost; not swept)")))
                result.rows[-1].capacity = capacity
            else:
                swept.append((name, gpus))
                if POOL_LABEL in node_labels:
                    pools[name] = node_labels[POOL_LABEL]
                result.rows.append(sweep.SweepRow(node=name, instance_type=kind, capacity=capacity))
        self.config_map, self.jobs = manifests(run_name, self.namespace, swept, taints, labels, self.request.timeout,
                                               self.request.full, sharing=stack.get("gpuSharing"))
        self.templates = []
        if device_class:  # each Job claims its node's GPUs; one template per GPU count, named after the run
            claimed = [dra.claiming({**job, "metadata": {**job["metadata"], "name": run_name}}, device_class)
                       for job in self.jobs]
            self.jobs = [{**new, "metadata": job["metadata"]} for job, (new, _) in zip(self.jobs, claimed)]
            self.templates = list({t["metadata"]["name"]: t for _, ts in claimed for t in ts}.values())
        if self.team is not None:  # each Job its own Workload in the run's queue, on its node's pool's flavor
            self.jobs = [self.queue(on_flavor(job, pools.get(node))) for job, (node, _) in zip(self.jobs, swept)]
        rows = {r.node: r for r in result.rows}
        self.by_job = {job["metadata"]["name"]: rows[node] for job, (node, _) in zip(self.jobs, swept)}
        for job_name, r in self.by_job.items():
            r.job = {"name": job_name}
        print(f"gpuready: {run_name}: {len(self.jobs)} Jobs, one pinned to each GPU node", file=self.progress)
        return True

    def submit(self) -> None:
        namespace, run_name = self.namespace, self.run_name
        body = self.client.V1DeleteOptions(propagation_policy="Background")
        if self.jobs:
            self.created.append(("ConfigMap", run_name, lambda **kw: self.core_api.delete_namespaced_config_map(
                run_name, namespace, **kw)))
            self.calls.create(self.core_api.create_namespaced_config_map, namespace, self.config_map, self.deadline)
        self.create_claims(self.templates)
        for job in self.jobs:
            job_name = job["metadata"]["name"]
            self.created.insert(0, ("Job", job_name, lambda job_name=job_name, **kw:
                                    self.batch_api.delete_namespaced_job(job_name, namespace, body=body, **kw)))
            self.calls.create(self.batch_api.create_namespaced_job, namespace, job, self.deadline)

    def follow(self) -> bool:
        self.pods = _wait(self.client, self.api, self.calls, self.namespace, self.run_name, set(self.by_job),
                          self.deadline, self.progress, self.clock) if self.jobs else {}
        return True

    def collect(self) -> None:
        for job_name, r in self.by_job.items():
            pod_name, phase = self.pods.get(job_name, (None, None))
            r.job.update({"pod": pod_name, "phase": phase})
            if phase not in TERMINAL:
                _replace(r, sweep.row(r.node, None, instance_type=r.instance_type, job=r.job, problem=(
                    f"not finished after {self.request.timeout:g} s ({phase or 'no pod'}: its GPUs busy with other "
                    "pods, or the node not ready); deleted")))
                continue
            report = core.find_report(kubernetes.probe_logs(self.client, self.core_api, self.calls, pod_name,
                                                            self.namespace, self.deadline))
            _replace(r, sweep.row(r.node, ProbeReport.from_json(report) if report else None,
                                  instance_type=r.instance_type, job=r.job,
                                  problem="" if report or phase == "Succeeded" else f"pod {phase} without a report"))
        if self.request.quarantine:
            _quarantine(self.client, self.core_api, self.calls, self.result, self.progress, self.clock)
        self.ended = True

    def deletions(self) -> tuple[list[tuple[str, Callable[..., Any]]], str, str]:
        """Every Job and the ConfigMap a create was sent for."""
        queued = [self.workload_deletion("Job", name) for kind, name, _ in self.created if kind == "Job"] \
            if self.team is not None else []
        return ([(f"{kind} {name}", delete) for kind, name, delete in self.created] + queued + self.claim_deletions(),
                f"in namespace {self.namespace}",
                f"kubectl -n {self.namespace} delete job,configmap{',resourceclaimtemplate' if self.claims else ''} "
                f"-l app.kubernetes.io/instance={self.run_name}")

    def cleanup(self, reason: str) -> None:
        """Delete whatever was created, ``--keep`` or not: a sweep leaves nothing on the nodes it swept."""
        if self.cleaned or not (self.created or self.claims):
            return
        self.cleaned = True
        kubernetes.delete_objects(self.client, self.calls, *self.deletions(), self.progress)
        self.result.job["deleted"] = [f"{kind}/{name}" for kind, name, _ in self.created] + [
            f"{dra.KIND}/{name}" for name, _ in self.claims]

    def interrupted(self) -> sweep.SweepResult:
        for r in self.by_job.values():
            if not r.checks:
                _replace(r, sweep.row(r.node, None, instance_type=r.instance_type, job=r.job,
                                      problem="interrupted; deleted"))
        self.result.notes.append("interrupted: every Job deleted")
        return self.result


def run(outputs: dict[str, Any], *, nodes: Optional[int] = None, timeout: float = 1800, full: bool = False,
        quarantine: bool = False, namespace: str = "default", progress: Optional[TextIO] = None,
        clock: Callable[[], float] = time.monotonic, trust_kubeconfig_exec: bool = False,
        team: Optional[str] = None) -> sweep.SweepResult:
    """Sweep the stack's GPU nodes (the first ``nodes`` of them by name, default all) and, with ``quarantine``,
    take the failing ones out of service (:class:`KubernetesSweepTarget`); ``team``: each Job through that team's
    Kueue queue (none, on a stack with teams: the operators' queue). Progress goes to ``progress`` (default: stderr)."""
    return drive(KubernetesSweepTarget(outputs, Request(timeout=timeout, nodes=nodes, full=full, quarantine=quarantine,
                                                        trust_kubeconfig_exec=trust_kubeconfig_exec, team=team),
                                       namespace=namespace, progress=progress, clock=clock))


def _replace(old: sweep.SweepRow, new: sweep.SweepRow) -> sweep.SweepRow:
    """``old`` (the row already in the result) made ``new``."""
    new.capacity = new.capacity or old.capacity  # read from the node's labels before the job ran
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
    lost, or a concurrent writer's); through :func:`patch_node`."""
    reason = reason[:REASON_LIMIT]

    def change(current: dict) -> Optional[list[dict]]:
        taints = (current.get("spec") or {}).get("taints") or []
        labels, notes = (current["metadata"].get(k) or {} for k in ("labels", "annotations"))
        tainted = any(t.get("key") == TAINT["key"] and t.get("effect") == TAINT["effect"] for t in taints)
        if tainted and labels.get(LABEL) == "failed" and notes.get(REASON) == reason:
            return None
        return ([] if tainted else [{"op": "add", "path": "/spec/taints", "value": [*taints, dict(TAINT)]}]) + [
            {"op": "add", "path": "/metadata/labels", "value": {**labels, LABEL: "failed"}},
            {"op": "add", "path": "/metadata/annotations", "value": {**notes, REASON: reason}}]
    return patch_node(core_api, calls, node, change, deadline)


def patch_node(core_api: Any, calls: kubernetes.BoundedCalls, node: str,
               change: Callable[[dict], Optional[list[dict]]], deadline: float) -> str:
    """Patch ``node`` with the JSON Patch ``change`` makes of the node as read (None: nothing to change), behind a
    test of its resourceVersion, so that a concurrent change is never overwritten: on a conflict the node is read
    again and ``change`` asked again (three tries, then the conflict is raised). ``added`` (patched), ``already``
    (nothing to change at the first read) or ``found`` (nothing to change after a conflict)."""
    plain = core_api.api_client.sanitize_for_serialization
    for attempt in range(3):
        current = plain(calls(core_api.read_node, node, deadline=deadline))
        ops = change(current)
        if ops is None:
            return "found" if attempt else "already"
        version = current["metadata"].get("resourceVersion")
        patch = [{"op": "test", "path": "/metadata/resourceVersion", "value": version}] if version else []
        try:
            calls(core_api.patch_node, node, copy.deepcopy(patch + ops), deadline=deadline)
            return "added"
        except Exception as error:  # noqa: BLE001 (a conflict: read again)
            if getattr(error, "status", None) not in (409, 422) or attempt == 2:
                raise
    raise AssertionError("unreachable")  # pragma: no cover
