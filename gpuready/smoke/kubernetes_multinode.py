"""The Kubernetes target on several nodes: one pod on each of N GPU nodes, each with all the node's GPUs, each
running the probe, then an NCCL all-reduce across all of them (:mod:`gpuready.probe.nccl`, started by its launcher).

The gang is an Indexed Job behind a headless Service (no controller to install: pod ``i`` gets
``JOB_COMPLETION_INDEX=i`` and pod 0 is reachable as ``<job>-0.<service>``), or a JobSet where its CRD is installed
(what Metaflow's ``@parallel`` on Kubernetes uses) with the same pod template. The probe files travel in a ConfigMap.
Followed with one watch on the gang's pods; everything created is deleted on every exit path (see
:mod:`.kubernetes`, whose calls, explanations and deletes this reuses)."""

from __future__ import annotations

import copy
import time
import uuid
from typing import Any, Callable, Mapping, Optional, TextIO

from gpuready_components.images import SMOKE_IMAGE

from ..errors import UserError
from ..probe import Check, ProbeReport, core, nccl
from . import compute_domains, dra, gang, kubernetes, kueue, scaler
from .batch_probe import launcher_limits, probe_files
from .kubernetes import (TTL_SECONDS, BoundedCalls, PendingExplainer, kubernetes_platforms, probe_logs,
                         read_if_allowed, unfinished, watch_pods)
from .outputs import StackOutputs
from .result import SmokeResult
from .target import Request, drive
from .scaler.cluster_autoscaler import max_size_setting

RENDEZVOUS_PORT = 29500
"""torchrun's rendezvous port on the main pod (index 0)."""
JOBSET = ("jobset.x-k8s.io", "v1alpha2", "jobsets")
"""The JobSet API: group, version, plural."""
REPLICATED_JOB = "node"
"""The JobSet's one replicated job: its child Job is ``<jobset>-node-0``, its pods ``<jobset>-node-0-<index>``."""
FABRIC_TRANSPORTS = ("efa", "ib", "tcpx", "tcpxo")
"""``gpuFabric`` values, each the transport NCCL must use; without a fabric NCCL uses TCP sockets."""
SOCKET = "socket"
EFA_RESOURCE = "vpc.amazonaws.com/efa"
"""The AWS EFA device plugin's resource: one per EFA interface."""
IB_RESOURCE = "rdma/shared_ib"
"""The NVIDIA Network Operator's RDMA shared device plugin resource (InfiniBand on AKS ND)."""
INDEX_KEY = "batch.kubernetes.io/job-completion-index"
ANTI_AFFINITY_FIX = ("the pods must run one per node (required anti-affinity on kubernetes.io/hostname): was the pod "
                     "template changed?")
"""The annotation (and, from Kubernetes 1.28, label) an Indexed Job's pod carries its index in."""
FAILED_GRACE = 30.0
"""Seconds the other pods are followed after one failed (the Job controller stops them: backoffLimit 0)."""
TERMINAL = ("Succeeded", "Failed")


def main_address(name: str, namespace: str, jobset: bool) -> str:
    """The DNS name of pod 0 behind the headless Service ``name``."""
    pod = f"{name}-{REPLICATED_JOB}-0-0" if jobset else f"{name}-0"
    return f"{pod}.{name}.{namespace}.svc"


def manifests(name: str, namespace: str, *, nodes: int, gpus: int, taints: list[dict[str, str]],
              node_labels: dict[str, str], timeout: float, transport: str = SOCKET, efa_interfaces: int = 0,
              full: bool = False, jobset: bool = False, image: str = SMOKE_IMAGE) -> tuple[dict, dict, dict]:
    """(ConfigMap with :func:`probe_files`, headless Service, Indexed Job or JobSet), all named ``name``: ``nodes``
    pods, at most one per node (required anti-affinity on the hostname), each asking for ``gpus`` GPUs (and
    ``efa_interfaces`` EFA devices with the ``efa`` transport, the RDMA device with ``ib``), tolerating ``taints`` and
    selecting ``node_labels``; the launcher runs with ``--transport transport``."""
    labels = {"app.kubernetes.io/name": "gpuready-smoke", "app.kubernetes.io/instance": name}
    metadata = {"name": name, "namespace": namespace, "labels": labels}
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": copy.deepcopy(metadata),
                  "data": {file: data.decode() for file, data in probe_files().items()}}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": copy.deepcopy(metadata),
               "spec": {"clusterIP": "None", "selector": dict(labels), "publishNotReadyAddresses": True,
                        "ports": [{"name": "rendezvous", "port": RENDEZVOUS_PORT, "targetPort": RENDEZVOUS_PORT,
                                   "protocol": "TCP"}]}}
    limits = {"nvidia.com/gpu": str(gpus)}
    env = [{"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"}, {"name": "NCCL_DEBUG", "value": "INFO"}]
    container: dict[str, Any] = {}
    if transport == "efa":
        limits[EFA_RESOURCE] = str(max(1, efa_interfaces))
        env.append({"name": "FI_PROVIDER", "value": "efa"})
    if transport == "ib":
        limits[IB_RESOURCE] = "1"
    if transport in ("efa", "ib"):  # registering GPU memory with the NIC pins it
        container["securityContext"] = {"capabilities": {"add": ["IPC_LOCK"]}}
    command = ["python3", "/gpuready/nccl.py", "launch", "--nodes", str(nodes), "--gpus-per-node", str(gpus),
               "--main-address", main_address(name, namespace, jobset), "--transport", transport,
               *(["--full"] if full else []), *launcher_limits(timeout)]
    pod_spec = {
        "restartPolicy": "Never",
        "subdomain": name,
        "nodeSelector": dict(node_labels),
        "tolerations": [{"key": t["key"], "operator": "Exists", "effect": t["effect"]} for t in taints],
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": dict(labels)}, "topologyKey": "kubernetes.io/hostname"}]}},
        "containers": [{
            "name": "probe",
            "image": image,
            "command": command,
            "env": env,
            "ports": [{"name": "rendezvous", "containerPort": RENDEZVOUS_PORT, "protocol": "TCP"}],
            "resources": {"limits": limits},
            **container,
            "volumeMounts": [{"name": "probe", "mountPath": "/gpuready", "readOnly": True},
                             {"name": "shm", "mountPath": "/dev/shm"}],
        }],
        "volumes": [{"name": "probe", "configMap": {"name": name}},
                    {"name": "shm", "emptyDir": {"medium": "Memory"}}],  # Docker's 64 MiB default stalls NCCL
    }
    job_spec = {"completionMode": "Indexed", "completions": nodes, "parallelism": nodes, "backoffLimit": 0,
                "activeDeadlineSeconds": int(timeout),
                "template": {"metadata": {"labels": dict(labels)}, "spec": pod_spec}}
    if not jobset:
        job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": copy.deepcopy(metadata),
               "spec": {**job_spec, "ttlSecondsAfterFinished": TTL_SECONDS}}
        return config_map, service, job
    group, version, _ = JOBSET
    job_set = {"apiVersion": f"{group}/{version}", "kind": "JobSet", "metadata": copy.deepcopy(metadata),
               "spec": {"network": {"enableDNSHostnames": True, "subdomain": name, "publishNotReadyAddresses": True},
                        "failurePolicy": {"maxRestarts": 0},
                        "ttlSecondsAfterFinished": TTL_SECONDS,
                        "replicatedJobs": [{"name": REPLICATED_JOB, "replicas": 1,
                                            "template": {"metadata": {"labels": dict(labels)}, "spec": job_spec}}]}}
    return config_map, service, job_set


def pool_check(stack: StackOutputs, nodes: int, gpus: int) -> Check:
    """``pool_size``: whether the GPU pool at its largest holds ``nodes`` pods of ``gpus`` GPUs (``maxGpusPerNode``,
    ``maxGpus``); a failure names the stack setting that fixes it."""
    per_node, total = stack["maxGpusPerNode"], stack["maxGpus"]
    key = max_size_setting(stack.platform)
    if gpus > per_node:
        return Check("pool_size", core.FAIL, f"{per_node} GPUs per node", f"{gpus} GPUs per node",
                     f"the pool's largest node has {per_node} GPUs: ask for at most that many (--gpus {per_node}), "
                     "or give the pool a machine type with more GPUs")
    if nodes * gpus > total:
        return Check("pool_size", core.FAIL, f"{total} GPUs", f"{nodes * gpus} GPUs",
                     f"the GPU pool holds at most {total} GPUs ({total // per_node} nodes of {per_node}); {nodes} "
                     f"nodes x {gpus} GPUs do not fit, and the gang would wait for its last pod forever: raise the "
                     f"pool's max size to {nodes} nodes or more (pulumi config set {key} {nodes}; pulumi up), or "
                     "run on fewer nodes (--nodes)")
    return Check("pool_size", core.PASS, f"{total} GPUs", f"{nodes * gpus} GPUs")


def jobset_installed(client: Any, api: Any, calls: BoundedCalls, deadline: float) -> bool:
    """Whether the cluster serves JobSets, from API discovery (a discovery we may not read: not installed)."""
    group, version, plural = JOBSET
    discovery = client.CustomObjectsApi(api).get_api_resources
    found, resources = read_if_allowed(client, lambda: calls(discovery, group, version, deadline=deadline))
    return bool(found and resources and any(r.name == plural for r in resources.resources or ()))


class KubernetesGangTarget(kubernetes.KubernetesRun):
    """The probe and the NCCL all-reduce on ``--nodes`` GPU nodes of the stack (``--gpus`` each, default all of a
    node's: ``maxGpusPerNode``): the pool size (checked before anything is created), the pods' run on distinct
    nodes, each node's probe checks prefixed ``node{i}.``, then :func:`nccl.checks`. A JobSet when ``jobset`` or
    (None) when the cluster serves JobSets, else an Indexed Job. A Pending pod is explained every
    ``explain_after`` seconds. Every API call fits inside ``--timeout``; the deletes take at most
    :data:`.kubernetes.CLEANUP_GRACE` more."""

    def __init__(self, outputs: Mapping[str, Any], request: Request, *, namespace: str = "default",
                 explain_after: float = 20.0, progress: Optional[TextIO] = None,
                 clock: Callable[[], float] = time.monotonic, jobset: Optional[bool] = None) -> None:
        super().__init__(outputs, request, namespace=namespace, progress=progress, clock=clock)
        self.nodes, self.explain_after, self.jobset = request.nodes or 0, explain_after, jobset
        self.pods: dict[int, Any] = {}
        self.domain: Optional[dict] = None

    def preflight(self) -> bool:
        nodes = self.nodes
        if nodes < 2:
            raise UserError(f"--nodes {nodes}: a multi-node smoke test needs 2 nodes or more (1 is the plain smoke "
                            "test)")
        stack = StackOutputs(self.outputs, kubernetes_platforms())
        self.choose_team(stack)
        self.gpus = gpus = self.request.gpus or stack["maxGpusPerNode"]
        refused = kueue.too_large(self.team, self.teams, nodes * gpus, f"a gang of {nodes} nodes x {gpus} GPUs") \
            if self.team is not None else None
        if refused:  # Kueue admits a gang whole or not at all: one larger than the queue can hold would wait for ever
            raise UserError(refused)
        self.name = name = f"gpuready-nccl-{uuid.uuid4().hex[:10]}"
        self.result = result = SmokeResult(target="kubernetes", title=f"Smoke test on {nodes} nodes",
                                           job={"name": name, "namespace": self.namespace, "nodes": []})
        result.checks.append(pool_check(stack, nodes, gpus))
        if result.checks[-1].verdict == core.FAIL:
            return False
        fabric = stack.get("gpuFabric")
        self.transport = transport = fabric if fabric in FABRIC_TRANSPORTS else SOCKET
        efa_interfaces = stack.get("gpuEfaInterfaces", 0) if transport == "efa" else 0
        if transport == "efa" and not efa_interfaces:
            print(f"gpuready: {name}: the stack does not say how many EFA interfaces a node has (gpuEfaInterfaces): "
                  f"each pod asks for one {EFA_RESOURCE}", file=self.progress)
        taints = stack.gpu_taints()
        labels = stack.get("gpuNodeLabels", {})
        self.context = scaler.Context(gpus=gpus, node_labels=dict(labels), taints=tuple(taints),
                                      autoscaler=stack.get("autoscaler") if "autoscaler" in stack.contract else None,
                                      platform=stack.platform, device_class=dra.device_class(stack))
        self.connect(stack)
        self.custom = self.client.CustomObjectsApi(self.api)
        self.use_jobset = jobset_installed(self.client, self.api, self.calls, self.deadline) if self.jobset is None \
            else self.jobset
        self.config_map, self.service, self.workload = manifests(
            name, self.namespace, nodes=nodes, gpus=gpus, taints=taints, node_labels=labels,
            timeout=self.request.timeout, transport=transport, efa_interfaces=efa_interfaces, full=self.request.full,
            jobset=self.use_jobset)
        # One network domain, preferably, for a gang of whole nodes: Kueue's topology-aware scheduling ignores the
        # pods' anti-affinity, so only a pod that takes every GPU of a node keeps it to one pod per node.
        whole = gpus >= stack["maxGpusPerNode"]
        self.workload, self.templates = self.claim_gpus(stack, self.workload)  # DRA: GPUs claimed, not limits
        self.domain = compute_domains.plan(self.workload, name, self.namespace, nodes,
                                           stack.get(compute_domains.OUTPUT)) if compute_domains.wanted(stack) else None
        self.workload = kueue.placed(self.queue(self.workload), self.team if whole else None)
        result.job.update(self.queued_as())
        result.job.update({"kind": self.workload["kind"], "service": name, "transport": transport,
                           "gpus_per_node": gpus, **({"computeDomain": name} if self.domain else {})})
        print(f"gpuready: {name}: {self.workload['kind']} of {nodes} pods x {gpus} GPUs, NCCL transport "
              f"{transport}", file=self.progress)
        return True

    def submit(self) -> None:
        group, version, plural = JOBSET

        def create(ns: str, body: dict, **kw: Any) -> Any:
            if self.use_jobset:
                return self.custom.create_namespaced_custom_object(group, version, ns, plural, body, **kw)
            return self.batch_api.create_namespaced_job(ns, body, **kw)
        self.calls.create(self.core_api.create_namespaced_config_map, self.namespace, self.config_map, self.deadline)
        self.calls.create(self.core_api.create_namespaced_service, self.namespace, self.service, self.deadline)
        self.create_claims(self.templates)
        if self.domain:
            compute_domains.create(self.custom, self.calls, self.namespace, self.domain, self.deadline, self.client)
        self.calls.create(create, self.namespace, self.workload, self.deadline)

    def follow(self) -> bool:
        if not self.await_admission(self.workload["kind"], self.name):
            self.result.job["nodes"] = [_node(i, None) for i in range(self.nodes)]
            return False
        self.pods, unread = _follow(self.client, self.api, self.calls, self.namespace, self.name, self.nodes,
                                    self.deadline, self.explain_after, self.context, self.result, self.progress,
                                    self.clock)
        self.result.job["nodes"] = [_node(i, self.pods.get(i)) for i in range(self.nodes)]
        phases = [n["phase"] for n in self.result.job["nodes"]]
        if "Failed" not in phases and not all(p == "Succeeded" for p in phases):
            self.result.checks.append(unfinished(", ".join(str(p) for p in phases), self.request.timeout,
                                                 self.request.keep, unread, "its pods"))
            return False
        return True

    def collect(self) -> None:
        _judge(self.result, self.pods, self.nodes, self.transport, self.core_api, self.calls, self.namespace,
               self.deadline, self.client, nvlink=self.domain is not None)

    def deletions(self) -> tuple[list[tuple[str, Callable[..., Any]]], str, str]:
        """The Job or JobSet (its pods with it), the Service and the ConfigMap."""
        name, namespace, kind = self.name, self.namespace, self.workload["kind"]
        group, version, plural = JOBSET
        body = self.client.V1DeleteOptions(propagation_policy="Background")  # the pods go with their Job

        def delete(**kw: Any) -> Any:
            if self.use_jobset:
                return self.custom.delete_namespaced_custom_object(group, version, namespace, plural, name,
                                                                   body=body, **kw)
            return self.batch_api.delete_namespaced_job(name, namespace, body=body, **kw)
        queued = [self.workload_deletion(kind, name)] if self.team is not None else []
        domain = [compute_domains.deletion(self.custom, self.client, namespace, name)] if self.domain else []
        command = f"kubectl -n {namespace} delete {kind.lower()},service,configmap {name}"
        return ([(kind, delete), *queued, *domain,
                 ("Service", lambda **kw: self.core_api.delete_namespaced_service(name, namespace, **kw)),
                 ("ConfigMap", lambda **kw: self.core_api.delete_namespaced_config_map(name, namespace, **kw)),
                 *self.claim_deletions()],
                f"{namespace}/{name}", command + (f"; {compute_domains.kubectl(namespace, name)}" if domain else ""))


def run(outputs: dict[str, Any], *, nodes: int, gpus: Optional[int] = None, timeout: float = 1800,
        keep: bool = False, full: bool = False, namespace: str = "default", explain_after: float = 20.0,
        progress: Optional[TextIO] = None, clock: Callable[[], float] = time.monotonic,
        trust_kubeconfig_exec: bool = False, jobset: Optional[bool] = None, team: Optional[str] = None,
        admission_poll: float = kubernetes.ADMISSION_POLL) -> SmokeResult:
    """Run the probe and the NCCL all-reduce on ``nodes`` GPU nodes of the stack and report what they found
    (:class:`KubernetesGangTarget`), through ``team``'s Kueue queue when given (one Workload for the whole gang)."""
    target = KubernetesGangTarget(outputs, Request(timeout=timeout, gpus=gpus, nodes=nodes, keep=keep, full=full,
                                                   team=team, trust_kubeconfig_exec=trust_kubeconfig_exec),
                                  namespace=namespace, explain_after=explain_after, progress=progress, clock=clock,
                                  jobset=jobset)
    target.admission_poll = admission_poll
    return drive(target)


def _index(pod: Any) -> Optional[int]:
    """An Indexed Job pod's index (annotation, or label from Kubernetes 1.28), or None."""
    for found in (pod.metadata.annotations or {}, pod.metadata.labels or {}):
        if str(found.get(INDEX_KEY, "")).isdigit():
            return int(found[INDEX_KEY])
    return None


def _node(index: int, pod: Any) -> dict[str, Any]:
    """``result.job["nodes"]`` entry: index, pod, node, phase."""
    return {"index": index, "pod": pod.metadata.name if pod else None,
            "node": (pod.spec.node_name if pod and pod.spec else None), "phase": pod.status.phase if pod else None}


def _follow(client, api, calls, namespace, name, nodes, deadline, explain_after, context, result, progress, clock):
    """Follow the gang's pods with one watch (opened again when it ends or fails on a passing fault) until all
    ``nodes`` ended, one failed and the others ended or :data:`FAILED_GRACE` passed, or ``deadline``:
    ({index: latest pod}, the error that ended the last watch or None). The longest-Pending pod is explained every
    ``explain_after`` seconds."""
    started, pods, gone, failed_at, unread, explained = clock(), {}, set(), None, None, None
    explainer = PendingExplainer(client, api, calls, namespace, name, context, result, progress)

    def done() -> bool:
        ended = [i for i, p in pods.items() if p.status.phase in TERMINAL or i in gone]
        if len([i for i in ended if pods[i].status.phase in TERMINAL]) >= nodes:
            return True
        return failed_at is not None and (len(ended) == len(pods) or clock() - failed_at >= FAILED_GRACE)

    def explain() -> None:
        pending = sorted(i for i, p in pods.items() if p.status.phase == "Pending" and i not in gone)
        if pending:
            pod = pods[pending[0]]
            explainer(pod.metadata.name, clock() - started, pod.metadata.creation_timestamp)

    while clock() < deadline:
        seconds = max(1, min(int(deadline - clock()), int(explain_after)))
        try:
            for event in watch_pods(client, api, calls, namespace, f"app.kubernetes.io/instance={name}", seconds):
                pod, index = event["object"], _index(event["object"])
                if index is None:
                    continue
                before = pods.get(index)
                if before is not None and before.metadata.name != pod.metadata.name and event["type"] == "DELETED":
                    continue  # an older pod of this index going away
                pods[index] = pod
                if event["type"] == "DELETED":
                    gone.add(index)
                elif before is None or before.status.phase != pod.status.phase:
                    where = f" on {pod.spec.node_name}" if pod.spec and pod.spec.node_name else ""
                    print(f"gpuready: {name}: pod {pod.metadata.name} (node{index}) {pod.status.phase}{where} "
                          f"after {clock() - started:.0f} s", file=progress)
                if pod.status.phase == "Failed" and failed_at is None:
                    failed_at = clock()
                if done():
                    return pods, None
            unread = None
        except Exception as error:  # noqa: BLE001 (a passing fault: watch again, until the deadline)
            if not calls.retryable(error):
                raise
            unread = error
            time.sleep(min(0.5, max(0.0, deadline - clock())))
        if done():
            return pods, None
        if clock() - started >= explain_after:
            explain()
            explained = True
    if not explained:
        explain()
    return pods, unread


def _judge(result, pods, nodes, transport, core_api, calls, namespace, deadline, client, nvlink=False) -> None:
    """The verdicts on an ended gang: pods_ran, distinct_hosts, each node's probe, then NCCL's (``nvlink``: and
    multi-node NVLink's, on a ComputeDomain)."""
    entries = result.job["nodes"]
    ran = [n for n in entries if n["phase"] == "Succeeded"]
    others = ", ".join(f"node{n['index']} {n['phase'] or 'never started'}" for n in entries if n not in ran)
    result.checks.append(Check("pods_ran", core.PASS if len(ran) == nodes else core.FAIL, len(ran), nodes,
                               others and f"not Succeeded: {others}"))
    logs, reports = {}, {}
    for entry in entries:
        logs[entry["index"]] = text = probe_logs(client, core_api, calls, entry["pod"], namespace, deadline)
        found = core.find_report(text)
        reports[entry["index"]] = ProbeReport.from_json(found) if found else None
        entry["host"] = reports[entry["index"]].host if reports[entry["index"]] else None
    result.checks.append(gang.distinct_hosts({e["index"]: e["node"] for e in entries}, reports, nodes, machine="node",
                                             fix=ANTI_AFFINITY_FIX))
    for i in range(nodes):
        result.probe = result.probe or reports[i]
        result.checks.extend(gang.node_checks(i, reports[i], (
            f"pod {entries[i]['pod'] or '(none)'} left no probe report in its logs: it did not run the probe, "
            "or its logs were lost")))
    report = nccl.find_report(logs.get(0, ""))
    verdicts = nccl.checks(report, nodes=nodes, expected_transport=transport, instance_type=None)
    result.checks.extend(Check(**c) for c in verdicts)
    if nvlink:
        result.checks.extend(compute_domains.nvlink_checks(report, reports))

