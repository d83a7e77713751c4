"""The Kubernetes target: a Job asking for ``nvidia.com/gpu`` on the stack's GPU nodes, the probe delivered in a
ConfigMap (no image of ours), followed with a watch, its logs read, and everything it created deleted."""

from __future__ import annotations

import abc
import contextlib
import json
import logging
import sys
import time
import uuid
from dataclasses import asdict, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Optional, TextIO

from gpuready_components import platforms
from gpuready_components.images import SMOKE_IMAGE
from gpuready_components.k8s_gpu.facts import capacity_of

from ..errors import UserError
from ..probe import Check, ProbeReport, burn, core
from . import dra, kueue, scaler
from .scaler import reservations
from .outputs import StackOutputs
from .result import SmokeResult
from .retry import FLOOR, Backoff, Deadline, HeldInterrupt, persist, retry
from .target import Request, SmokeTarget, drive

TTL_SECONDS = 600
"""Kubernetes deletes the finished Job after this long even if gpuready cannot (interrupted, lost connection)."""
CLEANUP_GRACE = 8.0
"""Seconds the deletes may take beyond ``--timeout`` (each retried on any error but NotFound until then)."""
LATE_CREATE = 1.0
"""Seconds after which the deletes are repeated when a create's answer was lost (it may land after the first)."""
RETRYABLE_STATUS = (429, 500, 502, 503, 504)
BACKOFF = Backoff(0.2, 2.0)
"""Pauses between tries of a call that met a passing fault (and of a delete, on any error)."""
ADMISSION_POLL = 2.0
"""Seconds between reads of a queued job's Workload while Kueue has not admitted it."""


def manifests(name: str, namespace: str, gpus: int, taints: list[dict[str, str]], node_labels: dict[str, str],
              timeout: float, full: bool = False, image: str = SMOKE_IMAGE,
              sharing: Optional[str] = None) -> tuple[dict, dict]:
    """The ConfigMap holding the probe and the Job running it on one GPU node (tolerating every taint in
    ``taints``, selecting ``node_labels``; ``sharing``: the stack's ``gpuSharing``, told to the probe)."""
    files = {"probe.py": Path(core.__file__).read_text(), "burn.py": Path(burn.__file__).read_text()}
    labels = {"app.kubernetes.io/name": "gpuready-smoke", "app.kubernetes.io/instance": name}
    config_map = {"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": name, "namespace": namespace, "labels": labels},
                  "data": files}
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
                        "command": ["python3", "/gpuready/probe.py", "--gpus", str(gpus),
                                    *(["--full"] if full else []), *(["--sharing", sharing] if sharing else [])],
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


def kubernetes_platforms() -> tuple[str, ...]:
    """The platforms whose outputs the Kubernetes targets read (``platform``): every one the registry knows whose GPU
    work runs as Kubernetes pods."""
    return tuple(platform.name for platform in platforms.every(kubernetes=True))


def api_client(kubeconfig: str, trust_exec: bool = False):
    """The client module and an ApiClient that never retries on its own: :class:`BoundedCalls` retries, within the
    caller's deadline."""
    try:
        from kubernetes import client, config
    except ImportError:
        from gpuready_components.sdk import install_command

        raise UserError(f"the kubernetes client is not installed: {install_command('k8s')}") from None
    try:
        data = json.loads(kubeconfig)
    except json.JSONDecodeError:
        import yaml

        data = yaml.safe_load(kubeconfig)
    from .kubeconfig import checked, credential_command, usable

    configuration = type.__call__(client.Configuration)
    configuration.retries = False  # urllib3 would otherwise retry each call 3 times, each up to its read timeout
    data = checked(usable(data), trust_exec)
    try:
        with _client_errors() as errors:
            api = config.new_client_from_config_dict(data, client_configuration=configuration)
    except config.ConfigException as error:
        raise UserError(f"the kubeconfig in the stack's outputs cannot be used ({error}): re-save the outputs with "
                        "`pulumi stack output --json --show-secrets > outputs.json`") from None
    if errors:  # the client logs a failed credential command (exec) and goes on without credentials
        why = " ".join(errors[0].split())
        raise UserError(f"the kubeconfig's credential command failed ({why[:300]}): run it yourself to see why "
                        f"(`{credential_command(data)}`), fix its credentials, then retry")
    return client, api


class _Collected(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextlib.contextmanager
def _client_errors() -> Iterator[list[str]]:
    """The errors the kubernetes client logs in the block (through the root logger, which would print them raw as
    ``ERROR:root:...``), collected instead of printed."""
    handler = _Collected()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler.messages
    finally:
        root.removeHandler(handler)


class BoundedCalls:
    """API calls bounded in time: each has a connect and read timeout derived from ``--timeout``, shortened to the
    time left before its deadline (:meth:`within`; :attr:`limits`: before the run's, ``until``); passing faults
    (throttling, 5xx, a reset or unanswered connection) are retried with backoff until a deadline."""

    def __init__(self, client: Any, timeout: float, clock: Callable[[], float],
                 until: float = float("inf")) -> None:
        self.client, self.clock, self.until = client, clock, until
        self.base = (max(1.0, min(3.0, timeout / 6)), max(1.0, min(5.0, timeout / 3)))
        self.lost = False
        self.sent = 0
        """Create calls that may have created something (sent, or in flight when stopped); 0: there is nothing to
        delete."""

    def within(self, deadline: float) -> tuple[float, float]:
        """The ``(connect, read)`` timeouts of a call that must end by ``deadline`` (:meth:`.retry.Deadline.limits`)."""
        return Deadline(deadline, self.clock).limits(*self.base)

    @property
    def limits(self) -> tuple[float, float]:
        """The ``(connect, read)`` timeouts of a call that must end by the run's deadline (``until``)."""
        return self.within(self.until)

    def retryable(self, error: BaseException) -> bool:
        import urllib3

        if isinstance(error, self.client.exceptions.ApiException):
            return error.status in RETRYABLE_STATUS
        return isinstance(error, (urllib3.exceptions.HTTPError, ConnectionError, TimeoutError))

    def __call__(self, method: Callable[..., Any], *args: Any, deadline: float, **kwargs: Any) -> Any:
        """``method(*args, **kwargs)``, retried on passing faults until ``deadline`` (on ``clock``)."""
        return retry(lambda: method(*args, _request_timeout=self.within(deadline), **kwargs),
                     retryable=self.retryable, backoff=BACKOFF, deadline=deadline, clock=self.clock)

    def create(self, method: Callable[..., Any], namespace: str, body: dict, deadline: float) -> None:
        """Create ``body`` once: after a call whose answer was lost, AlreadyExists means that call landed (the
        name is unique to this run), so a retry never makes a second object. Sets ``lost`` when a call's answer
        was lost (it may still land later); counts in ``sent`` every call but those that surely created nothing
        (refused, or never connected)."""
        import urllib3

        maybe_landed = False

        def attempt() -> None:
            nonlocal maybe_landed
            self.sent += 1
            try:
                method(namespace, body, _request_timeout=self.within(deadline))
            except BaseException as error:  # noqa: BLE001 (sorted: passing faults are retried, Ctrl-C raised)
                refused = isinstance(error, self.client.exceptions.ApiException) and error.status < 500
                if refused and error.status == 409 and maybe_landed:
                    return
                unsent = isinstance(error, urllib3.exceptions.ConnectTimeoutError)  # and NewConnectionError
                self.sent -= refused or unsent
                maybe_landed = maybe_landed or not (refused or unsent)
                self.lost = self.lost or not (refused or unsent)
                raise
        retry(attempt, retryable=self.retryable, backoff=BACKOFF, deadline=deadline, clock=self.clock)


def explain_pending(client: Any, api: Any, namespace: str, pod: str, context: scaler.Context, pending_for: float,
                    since: Optional[datetime] = None, limits: tuple[float, float] = (3.0, 5.0)
                    ) -> list[scaler.Finding]:
    """Why a GPU pod stays Pending: what the autoscalers said (the pod's events from every source,
    cluster-autoscaler's status ConfigMap and its events, Karpenter's NodeClaims), the scheduler's last word, and GPU
    nodes that advertise no GPU. Objects the caller may not read are left out; each call is bounded by ``limits``
    (connect, read seconds)."""
    core_api, plain = client.CoreV1Api(api), api.sanitize_for_serialization

    def events(ns: str, name: str) -> list[dict]:
        return [plain(e) for e in core_api.list_namespaced_event(ns, field_selector=f"involvedObject.name={name}",
                                                                 _request_timeout=limits).items]

    pod_events = events(namespace, pod)
    ns, name = scaler.CA_STATUS
    _, status = read_if_allowed(client, lambda: plain(core_api.read_namespaced_config_map(
        name, ns, _request_timeout=limits)))
    status_events = (read_if_allowed(client, lambda: events(ns, name))[1] or []) if status else []
    claims, claim_events = {}, []
    for claim in scaler.nominated(pod_events)[-1:]:
        found, value = read_if_allowed(client, lambda: client.CustomObjectsApi(api).get_cluster_custom_object(
            "karpenter.sh", "v1", "nodeclaims", claim, _request_timeout=limits))
        if found:
            claims[claim] = value
        if found and value is None:  # deleted: a cluster-scoped object's events live in "default"
            claim_events = read_if_allowed(client, lambda: events("default", claim))[1] or []
    selector = ",".join(f"{k}={v}" for k, v in context.node_labels.items())
    nodes = [plain(n) for n in core_api.list_node(label_selector=selector, _request_timeout=limits).items] \
        if selector else []
    now = datetime.now(timezone.utc)
    return reservations.explain(context, nodes, now) + \
        scaler.explain(pod_events, context, pending_for=pending_for, status=status, status_events=status_events,
                       nodeclaims=claims, nodeclaim_events=claim_events, since=since, now=now) + \
        scaler.scheduler(pod_events, nodes, context)


def read_if_allowed(client: Any, call: Callable[[], Any]) -> tuple[bool, Any]:
    """(True, object), (True, None) when it does not exist, (False, None) when we may not read it."""
    try:
        return True, call()
    except client.exceptions.ApiException as error:
        if error.status == 404:
            return True, None
        if error.status in (401, 403):
            return False, None
        raise


class KubernetesRun(SmokeTarget):
    """What the Kubernetes targets share: the cluster's client, from the outputs' kubeconfig (its credential command
    checked before anything runs: :mod:`.kubeconfig`), API calls bounded by ``--timeout`` (:class:`BoundedCalls`),
    and a cleanup that deletes what the run created (:func:`delete_objects`), once, unless ``--keep`` (the Job's TTL
    removes a kept Job and its pod); a Ctrl-C is a failing ``job_finished``. Progress goes to ``progress``
    (default: stderr); time is read from ``clock``."""

    def __init__(self, outputs: Mapping[str, Any], request: Request, *, namespace: str = "default",
                 progress: Optional[TextIO] = None, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(outputs, request)
        self.namespace, self.progress, self.clock = namespace, progress or sys.stderr, clock
        self.cleaned = False
        self.undone: Optional[str] = None
        """What the cleanup did, for the verdict (:func:`undone`); None before it ran."""
        self.team: Optional[Mapping[str, Any]] = None
        """The queue the run goes through: a team's item (the stack's ``teams`` output), or the operators' queue
        (:func:`.kueue.stack_operators`); None: no queue."""
        self.teams: list[Mapping[str, Any]] = []
        self.admission_poll = ADMISSION_POLL
        self.claims: list[tuple[str, Callable[..., Any]]] = []
        """(name, delete) of each ResourceClaimTemplate a create was sent for (a stack whose GPUs are DRA's)."""

    def claim_gpus(self, stack: StackOutputs, manifest: dict[str, Any]) -> tuple[dict[str, Any], list[dict]]:
        """``manifest`` claiming its GPUs through ResourceClaimTemplates where the stack gives GPUs through DRA
        (:func:`.dra.claiming`), with the templates to create before it; as it is, and none, elsewhere."""
        device_class = dra.device_class(stack)
        return dra.claiming(manifest, device_class) if device_class else (manifest, [])

    def create_claims(self, templates: list[dict]) -> None:
        """Create ``templates`` (before the Jobs that claim from them), each deleted by the cleanup."""
        dra.create(self.calls, self.client, self.api, self.namespace, templates, self.deadline,
                   lambda name, delete: self.claims.append((name, delete)))

    def claim_deletions(self) -> list[tuple[str, Callable[..., Any]]]:
        """The deletes of every template a create was sent for, as :func:`delete_objects` takes them."""
        return [(f"ResourceClaimTemplate {name}", delete) for name, delete in self.claims]

    def choose_team(self, stack: StackOutputs) -> None:
        """The run's queue (:func:`.kueue.choose`): ``--team``'s, or on a stack with teams and no ``--team`` the
        operators' queue; its namespace becomes the run's. A stack with teams, no ``--team`` and no operators'
        queue (deployed by an older gpuready) is a UserError (every GPU job there goes through a team's queue)."""
        self.teams = kueue.stack_teams(stack)
        operators = kueue.stack_operators(stack) if self.teams else None
        self.team = kueue.choose(self.teams, self.request.team, stack.platform, operators=operators)
        if self.team is not None:
            self.namespace = str(self.team.get("namespace") or self.team["name"])
        if kueue.is_operators(self.team):
            print(f"gpuready: no --team: through the operators' queue {self.namespace}/{self.team['localQueue']} "
                  f"(priority {self.team['priorityClass']}; it borrows the GPUs the teams leave idle); pass --team "
                  "NAME to go through a team's quota", file=self.progress)

    def queue(self, manifest: dict[str, Any]) -> dict[str, Any]:
        """``manifest`` handed to the run's LocalQueue (:func:`.kueue.queued`), with the queue's priority class (the
        operators' queue has one); unchanged without a queue."""
        return kueue.queued(manifest, str(self.team.get("localQueue") or self.team["name"]),
                            self.team.get("priorityClass")) if self.team else manifest

    def queued_as(self) -> dict[str, Any]:
        """What ``result.job`` says of the run's queue: ``team`` (a team's), ``queue`` (``namespace/localQueue``);
        empty without a queue."""
        if self.team is None:
            return {}
        where = {"queue": f"{self.namespace}/{self.team.get('localQueue') or self.team['name']}"}
        return where if kueue.is_operators(self.team) else {"team": self.team["name"], **where}

    def await_admission(self, kind: str, name: str) -> bool:
        """Without a team: True at once. With one: follow the Workload Kueue made for the ``kind`` ``name`` (found
        by its owner reference) until Kueue admits it (True: the time to admission and the flavors go to
        ``result.job["admission"]`` and an ``admitted`` check passes) or ``--timeout`` (False: ``admitted`` and
        ``job_finished`` fail, the Workload's conditions and the queues' status explained in the diagnosis)."""
        if self.team is None:
            return True
        started, workload, said = self.clock(), None, None
        while self.clock() < self.deadline:
            try:
                workload = self.find_workload(kind, name)
            except Exception as error:  # noqa: BLE001 (a passing fault: read again, until the deadline)
                if not self.calls.retryable(error):
                    raise
            if kueue.admitted(workload):
                waited = self.clock() - started
                given = kueue.admission(workload)
                self.result.job["admission"] = {"seconds": round(waited, 1), **given}
                self.result.checks.append(Check("admitted", core.PASS, f"{waited:.0f} s", None,
                                                f"admitted by {given['clusterQueue']} to flavor "
                                                f"{', '.join(given['flavors']) or '(none)'}"))
                print(f"gpuready: {name}: admitted by Kueue after {waited:.0f} s (ClusterQueue "
                      f"{given['clusterQueue']}, flavor {', '.join(given['flavors'])})", file=self.progress)
                return True
            message = (kueue.condition(workload, "QuotaReserved") or {}).get("message") if workload else None
            if message and message != said:
                said = message
                print(f"gpuready: {name}: queued in {kueue.whose(self.team)} queue: {message}", file=self.progress)
            time.sleep(max(0.0, min(self.admission_poll, self.deadline - self.clock())))
        if workload is None:  # never read before the deadline: one last look, a short grace beyond it
            try:
                workload = self.find_workload(kind, name, self.clock() + 1.0)
            except Exception as error:  # noqa: BLE001 (a passing fault: explained without it)
                if not self.calls.retryable(error):
                    raise
        findings = self.explain_queue(workload)
        self.result.diagnosis = [f.text() for f in findings]
        self.result.findings = [{**asdict(f), "waiting": f.waiting} for f in findings]
        self.result.job["admission"] = None
        self.result.checks.append(Check("admitted", core.FAIL, None, "admitted", f"not admitted by Kueue in "
                                        f"{self.request.timeout:g} s ({kueue.whose(self.team)} queue)"))
        self.result.checks.append(unfinished("Queued", self.request.timeout, self.request.keep, None, "its Workload"))
        return False

    def find_workload(self, kind: str, name: str, deadline: Optional[float] = None) -> Optional[dict]:
        """The Workload Kueue made for the ``kind`` called ``name`` in the run's namespace (its owner reference),
        or None; passing faults retried until ``deadline`` (default: the run's)."""
        custom = self.client.CustomObjectsApi(self.api)
        found = self.calls(custom.list_namespaced_custom_object, kueue.GROUP, kueue.VERSION, self.namespace,
                           "workloads", deadline=deadline or self.deadline)
        return next((w for w in found.get("items") or () if kueue.owned_by(w, kind, name)), None)

    def explain_queue(self, workload: Optional[dict]) -> list[scaler.Finding]:
        """:func:`.kueue.explain` on ``workload`` with the team's LocalQueue and ClusterQueue and the cohort's
        ClusterQueues, each read if we may (a short grace beyond the deadline)."""
        custom, limits = self.client.CustomObjectsApi(self.api), self.calls.limits
        team = self.team
        lq_name, cq_name = team.get("localQueue") or team["name"], team.get("clusterQueue") or team["name"]

        def read(call: Callable[[], Any]) -> tuple[bool, Any]:
            try:
                return read_if_allowed(self.client, call)
            except Exception as error:  # noqa: BLE001 (a diagnosis never fails the run: unread is unknown)
                if not self.calls.retryable(error):
                    raise
                return False, None
        local = read(lambda: custom.get_namespaced_custom_object(kueue.GROUP, kueue.VERSION, self.namespace,
                                                                 "localqueues", lq_name, _request_timeout=limits))
        cluster = read(lambda: custom.get_cluster_custom_object(kueue.GROUP, kueue.VERSION, "clusterqueues",
                                                                cq_name, _request_timeout=limits))
        _, every = read(lambda: custom.list_cluster_custom_object(kueue.GROUP, kueue.VERSION, "clusterqueues",
                                                                  _request_timeout=limits))
        cohort = team.get("cohort")
        queues = [q for q in (every or {}).get("items") or ()
                  if cohort is None or (q.get("spec") or {}).get("cohortName") == cohort]
        return kueue.explain(workload, team, local_queue=local, cluster_queue=cluster, cohort=queues)

    def workload_deletion(self, kind: str, name: str) -> tuple[str, Callable[..., Any]]:
        """The ``(kind, delete)`` of the Workload of the ``kind`` called ``name``: Kueue's Workload goes with its
        Job (owner reference), but one the garbage collector has not removed yet (an interrupted run) is deleted
        here."""
        custom = self.client.CustomObjectsApi(self.api)

        def delete(**kw: Any) -> None:
            found = custom.list_namespaced_custom_object(kueue.GROUP, kueue.VERSION, self.namespace, "workloads",
                                                         **kw)
            for workload in found.get("items") or ():
                if kueue.owned_by(workload, kind, name):
                    custom.delete_namespaced_custom_object(kueue.GROUP, kueue.VERSION, self.namespace, "workloads",
                                                           workload["metadata"]["name"], **kw)
        return "Workload", delete

    def connect(self, stack: StackOutputs) -> None:
        """The stack's cluster: its client and APIs, calls bounded by ``--timeout``, and the run's deadline (from
        now)."""
        self.client, self.api = api_client(stack["kubeconfig"], self.request.trust_kubeconfig_exec)
        self.core_api, self.batch_api = self.client.CoreV1Api(self.api), self.client.BatchV1Api(self.api)
        self.deadline = self.clock() + self.request.timeout
        self.calls = BoundedCalls(self.client, self.request.timeout, self.clock, self.deadline)

    @abc.abstractmethod
    def deletions(self) -> tuple[list[tuple[str, Callable[..., Any]]], str, str]:
        """What :meth:`cleanup` deletes, as :func:`delete_objects` takes it: the ``(kind, delete)`` of every
        object the run may have created, what they are, and the ``kubectl`` command that deletes them."""

    def cleanup(self, reason: str) -> None:
        if self.request.keep or self.cleaned:
            return
        self.cleaned = True
        deletes, what, command = self.deletions()
        held = HeldInterrupt()
        self.undone = undone(self.calls, delete_objects(self.client, self.calls, deletes, what, command,
                                                        self.progress, held))
        self.result.checks[:] = [c if c.name != "job_finished" else replace(c, detail=c.detail.replace(
            "; deleted", f"; {self.undone}")) for c in self.result.checks]
        held.raise_held()

    def interrupted(self) -> Any:
        self.result.checks.append(interrupted_check(self.request.keep, self.undone))
        return self.result


class KubernetesTarget(KubernetesRun):
    """The probe as one Job on the stack's GPU nodes (``--gpus`` GPUs), the probe in a ConfigMap, the pod followed
    with a watch; a Pending pod is explained after ``explain_after`` seconds and again as often. Every API call fits
    inside ``--timeout``; the deletes take at most :data:`CLEANUP_GRACE` more."""

    def __init__(self, outputs: Mapping[str, Any], request: Request, *, namespace: str = "default",
                 explain_after: float = 20.0, progress: Optional[TextIO] = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(outputs, request, namespace=namespace, progress=progress, clock=clock)
        self.gpus, self.explain_after = request.gpus or 1, explain_after
        self.pod: Optional[str] = None
        self.phase: Optional[str] = None
        self.platform: Optional[str] = None

    def preflight(self) -> bool:
        stack = StackOutputs(self.outputs, kubernetes_platforms())
        self.choose_team(stack)
        self.platform = stack.platform
        if self.team is not None:
            refused = kueue.too_large(self.team, self.teams, self.gpus, f"a job of {self.gpus} GPUs")
            if refused:
                raise UserError(refused)
        self.connect(stack)
        taints, labels = stack.gpu_taints(), stack.get("gpuNodeLabels", {})
        self.name = f"gpuready-smoke-{uuid.uuid4().hex[:10]}"
        self.context = scaler.Context(gpus=self.gpus, node_labels=dict(labels), taints=tuple(taints),
                                      autoscaler=stack.get("autoscaler") if "autoscaler" in stack.contract else None,
                                      platform=stack.platform, reservations=tuple(stack.get("gpuReservations", [])),
                                      device_class=dra.device_class(stack))
        self.config_map, self.manifest = manifests(self.name, self.namespace, self.gpus, taints, labels,
                                                   self.request.timeout, self.request.full,
                                                   sharing=stack.get("gpuSharing"))
        self.manifest, self.templates = self.claim_gpus(stack, self.manifest)
        self.manifest = self.queue(self.manifest)
        self.result = SmokeResult(target="kubernetes", job={"name": self.name, "namespace": self.namespace})
        self.result.job.update(self.queued_as())
        return True

    def submit(self) -> None:
        self.calls.create(self.core_api.create_namespaced_config_map, self.namespace, self.config_map, self.deadline)
        self.create_claims(self.templates)
        self.calls.create(self.batch_api.create_namespaced_job, self.namespace, self.manifest, self.deadline)

    def follow(self) -> bool:
        if not self.await_admission("Job", self.name):
            return False
        self.phase, self.pod, unread = _wait(self.client, self.api, self.calls, self.namespace, self.name,
                                             self.deadline, self.explain_after, self.context, self.result,
                                             self.progress, self.clock)
        self.result.job.update({"pod": self.pod, "phase": self.phase})
        if self.phase not in ("Succeeded", "Failed"):
            self.result.checks.append(unfinished(self.phase, self.request.timeout, self.request.keep, unread,
                                                 "its pod"))
            return False
        return True

    def collect(self) -> None:
        self.result.checks.append(Check("job_status", core.PASS if self.phase == "Succeeded" else core.FAIL,
                                        self.phase, "Succeeded"))
        self.result.job.update(ran_on(self.client, self.core_api, self.calls, self.pod, self.namespace, self.platform,
                                      self.deadline))
        found = core.find_report(probe_logs(self.client, self.core_api, self.calls, self.pod, self.namespace,
                                            self.deadline))
        self.result.add_probe(ProbeReport.from_json(found) if found else None)

    def deletions(self) -> tuple[list[tuple[str, Callable[..., Any]]], str, str]:
        """The Job (its pod with it), the ConfigMap and the ResourceClaimTemplates (DRA)."""
        name, namespace = self.name, self.namespace
        body = self.client.V1DeleteOptions(propagation_policy="Background")
        queued = [self.workload_deletion("Job", name)] if self.team is not None else []
        claims = f"; kubectl -n {namespace} delete resourceclaimtemplate -l app.kubernetes.io/instance={name}" \
            if self.claims else ""
        return ([("Job", lambda **kw: self.batch_api.delete_namespaced_job(name, namespace, body=body, **kw)),
                 *queued,
                 ("ConfigMap", lambda **kw: self.core_api.delete_namespaced_config_map(name, namespace, **kw)),
                 *self.claim_deletions()],
                f"{namespace}/{name}", f"kubectl -n {namespace} delete job,configmap {name}{claims}")


def run(outputs: dict[str, Any], *, gpus: int = 1, timeout: float = 1800, keep: bool = False, full: bool = False,
        namespace: str = "default", explain_after: float = 20.0, progress: Optional[TextIO] = None,
        clock: Callable[[], float] = time.monotonic, trust_kubeconfig_exec: bool = False,
        team: Optional[str] = None, admission_poll: float = ADMISSION_POLL) -> SmokeResult:
    """Run the probe as a Job on the stack's GPU nodes and report what it found (:class:`KubernetesTarget`), through
    ``team``'s Kueue queue when given, else on a stack with teams the operators' queue (Workloads read every
    ``admission_poll`` seconds). The kubeconfig's credential command runs only when a stack writes such commands, or
    with ``trust_kubeconfig_exec``."""
    target = KubernetesTarget(outputs, Request(timeout=timeout, gpus=gpus, keep=keep, full=full, team=team,
                                               trust_kubeconfig_exec=trust_kubeconfig_exec),
                              namespace=namespace, explain_after=explain_after, progress=progress, clock=clock)
    target.admission_poll = admission_poll
    return drive(target)


def node_capacity(platform: Optional[str], labels: Mapping[str, str]) -> Optional[str]:
    """Where a node of ``platform`` gets its capacity, as its ``labels`` say (:func:`capacity_of` with the platform's
    :attr:`~gpuready_components.k8s_gpu.facts.NodeFacts.capacity_labels`); ``None`` where they do not say."""
    try:
        facts = platforms.node_facts(platform).capacity_labels if platform else ()
    except KeyError:
        return None
    return capacity_of(labels, facts)


def ran_on(client: Any, core_api: Any, calls: "BoundedCalls", pod: Optional[str], namespace: str,
           platform: Optional[str], deadline: float) -> dict[str, Any]:
    """``node``, its ``instance_type`` and ``capacity`` (:func:`node_capacity`) of the node ``pod`` ran on; what
    could be read (nothing for no pod, one never scheduled, or a node gone or not readable: 403, 404)."""
    if pod is None:
        return {}
    try:
        node = calls(core_api.read_namespaced_pod, pod, namespace, deadline=max(deadline, calls.clock() + CLEANUP_GRACE))
        name = node.spec.node_name if node.spec else None
        if not name:
            return {}
        labels = calls(core_api.read_node, name, deadline=max(deadline, calls.clock() + CLEANUP_GRACE)).metadata.labels \
            or {}
    except client.exceptions.ApiException as error:
        if error.status in (403, 404):
            return {}
        raise
    capacity = node_capacity(platform, labels)
    return {"node": name, "instance_type": labels.get("node.kubernetes.io/instance-type"),
            **({"capacity": capacity} if capacity else {})}


def probe_logs(client: Any, core_api: Any, calls: "BoundedCalls", pod: Optional[str], namespace: str,
               deadline: float) -> str:
    """The probe container's logs of ``pod``: "" for no pod, or one that never started (400) or is gone (404)."""
    if pod is None:
        return ""
    try:
        return calls(core_api.read_namespaced_pod_log, pod, namespace, container="probe",
                     deadline=max(deadline, calls.clock() + CLEANUP_GRACE)) or ""  # a pod that ended at the deadline
    except client.exceptions.ApiException as error:
        if error.status in (400, 404):
            return ""
        raise


def unfinished(measured: Any, timeout: float, keep: bool, unread: Optional[BaseException], what: str) -> Check:
    """The failing ``job_finished`` check of a run that reached ``--timeout`` (``unread``: why ``what`` could not
    be watched at the end, or None)."""
    return Check("job_finished", core.FAIL, measured, "Succeeded",
                 f"not finished after {timeout:g} s" + ("" if keep else "; deleted")
                 + (f"; {what} could not be watched: {type(unread).__name__}" if unread else ""))


def interrupted_check(keep: bool, done: Optional[str] = "deleted") -> Check:
    """The failing ``job_finished`` check of a run stopped by Ctrl-C (``done``: what the cleanup did,
    :func:`undone`)."""
    return Check("job_finished", core.FAIL, None, "Succeeded", "interrupted" + ("" if keep else f"; {done}"))


def undone(calls: BoundedCalls, left: list[str]) -> str:
    """What a cleanup did, in a verdict's words: ``deleted``, ``nothing was created``, or the kinds it could not
    delete (``left``, as :func:`delete_objects` returns them)."""
    if left:
        return f"could not delete {', '.join(left)}"
    return "deleted" if calls.sent else "nothing was created"


class PendingExplainer:
    """Explains a Pending pod into ``result`` (diagnosis and findings: the latest word) and prints each new finding
    to ``progress``, once; a passing fault skips a round (the next explains again)."""

    def __init__(self, client: Any, api: Any, calls: "BoundedCalls", namespace: str, name: str, context: scaler.Context,
                 result: SmokeResult, progress: TextIO) -> None:
        self.client, self.api, self.calls, self.namespace, self.name = client, api, calls, namespace, name
        self.context, self.result, self.progress = context, result, progress
        self.shown: Optional[set[str]] = None
        """What was printed so far; None until a round succeeded."""

    def __call__(self, pod_name: str, pending_for: float, since: Optional[datetime]) -> None:
        try:
            findings = explain_pending(self.client, self.api, self.namespace, pod_name, self.context, pending_for,
                                       since, self.calls.limits)
        except Exception as error:  # noqa: BLE001 (a passing fault: the next round explains again)
            if not self.calls.retryable(error):
                raise
            return
        self.result.diagnosis = [f.text() for f in findings]
        self.result.findings = [{**asdict(f), "waiting": f.waiting} for f in findings]
        for text in self.result.diagnosis:
            if text not in (self.shown or ()):
                print(f"gpuready: {self.name}: {text}", file=self.progress)
        self.shown = set(self.result.diagnosis) | (self.shown or set())


def watch_pods(client: Any, api: Any, calls: BoundedCalls, namespace: str, selector: str,
               seconds: int) -> Iterator[dict]:
    """The events of one watch of the pods in ``namespace`` matching the label ``selector``, which the API server
    ends after ``seconds``; no read waits longer than that, nor past the run's deadline (``calls.until``) by more
    than :data:`.retry.FLOOR`."""
    from kubernetes import watch

    left = calls.until - calls.clock()  # a watch may stay silent for its ``seconds``, the deadline at most
    read = min(seconds + calls.base[1], max(seconds, left) + FLOOR)
    return watch.Watch().stream(client.CoreV1Api(api).list_namespaced_pod, namespace, label_selector=selector,
                                timeout_seconds=seconds, _request_timeout=(calls.limits[0], read))


def _wait(client, api, calls, namespace, name, deadline, explain_after, context, result, progress, clock):
    """Follow the Job's pod with watches until it ends or ``deadline``: (phase, pod name, the error that ended the
    last watch or None). A watch that fails on a passing fault is opened again; a Pending pod is explained every
    ``explain_after`` seconds."""
    started, phase, pod_name, since, unread = clock(), None, None, None, None
    explainer = PendingExplainer(client, api, calls, namespace, name, context, result, progress)

    def explain() -> None:
        explainer(pod_name, clock() - started, since)

    while clock() < deadline:
        seconds = max(1, min(int(deadline - clock()), int(explain_after)))
        try:
            for event in watch_pods(client, api, calls, namespace, f"job-name={name}", seconds):
                pod = event["object"]
                pod_name, since = pod.metadata.name, pod.metadata.creation_timestamp
                if pod.status.phase != phase:
                    phase = pod.status.phase
                    print(f"gpuready: {name}: pod {pod_name} {phase} after {clock() - started:.0f} s", file=progress)
                if phase in ("Succeeded", "Failed"):
                    return phase, pod_name, None
            unread = None
        except Exception as error:  # noqa: BLE001 (a passing fault: watch again, until the deadline)
            if not calls.retryable(error):
                raise
            unread = error
            time.sleep(min(0.5, max(0.0, deadline - clock())))
        if phase == "Pending" and pod_name and clock() - started >= explain_after:
            explain()
    if phase == "Pending" and pod_name and explainer.shown is None:
        explain()
    return phase, pod_name, unread


def delete_objects(client: Any, calls: BoundedCalls, deletes: list[tuple[str, Callable[..., Any]]], what: str,
                   command: str, progress: TextIO, held: Optional[HeldInterrupt] = None) -> list[str]:
    """Call each ``(kind, delete)`` of ``deletes`` (``delete(_request_timeout=...)``), each retried on any error but
    NotFound for :data:`CLEANUP_GRACE` seconds in all, each kind for its share of what is left (each call bounded
    by it; a second round past the grace is not tried): deleting is idempotent, and a pod left behind holds a GPU.
    When a create's answer was lost, that create may land after the delete: all are deleted again
    :data:`LATE_CREATE` seconds later (beyond that, the Job's activeDeadlineSeconds stops its pods at
    ``--timeout``). A delete that keeps failing is reported to ``progress`` once, with ``what`` it was and the
    ``command`` that removes it; the kinds left are returned. When no create may have created anything (``calls.sent``), nothing is called. A Ctrl-C
    meanwhile is raised once all is deleted, or put in ``held`` for the caller to raise."""
    deadline, failed, caller_raises = calls.clock() + CLEANUP_GRACE, {}, held is not None
    held = held or HeldInterrupt()
    if not calls.sent:
        return []

    def unless_gone(delete: Callable[..., Any], until: float) -> None:
        try:
            delete(_request_timeout=calls.within(until))
        except client.exceptions.ApiException as error:
            if error.status != 404:
                raise
    for round_ in range(2 if calls.lost else 1):
        if round_:
            time.sleep(max(0.0, min(LATE_CREATE, deadline - calls.clock())))
        for index, (kind, delete) in enumerate(deletes):
            left = deadline - calls.clock()
            if left <= 0:  # no time left to try (a second round): said as a delete that timed out
                failed.setdefault(kind, TimeoutError(f"no time left in {CLEANUP_GRACE:g} s"))
                continue
            share = calls.clock() + left / (len(deletes) - index)  # one kind refused for good starves no other
            try:
                persist(lambda: unless_gone(delete, share), backoff=BACKOFF, deadline=share, held=held,
                        clock=calls.clock)
                failed.pop(kind, None)
            except (Exception, KeyboardInterrupt) as error:  # noqa: BLE001 (reported: Kubernetes' TTL is the backstop)
                failed[kind] = error
    for kind, error in failed.items():
        backstop = f"Kubernetes removes the Job {TTL_SECONDS} s after it ends" if kind.split()[0] == "Job" else \
            "remove it"
        print(f"gpuready: could not delete {kind} {what} ({error.__class__.__name__}); {backstop}: `{command}`",
              file=progress)
    if not caller_raises:
        held.raise_held()
    return list(failed)
