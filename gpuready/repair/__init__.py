"""``gpuready sweep --repair``: ask the platform to reboot or replace the machine behind each node the sweep failed,
within the limits the clouds' own repair keeps.

Which nodes: those ``--quarantine`` takes (the probe failed there, or no GPU is advertised). The action per node
comes from the GPU signals table (:func:`gpuready_components.k8s_gpu.health.repair_action`): reboot, replace, or
none (no repair cures what failed: said, never acted on). The limits are EKS node repair's kind
(``nodeRepairConfig``'s): never more than ``max_repairs`` machines under repair at once (those
with something already under way count), nothing in a pool whose unhealthy share (failing plus under way, over the
pool's size) is above ``max_unhealthy`` percent (a cause that broad is not one bad GPU), never a machine with
something under way, and never a node twice: the annotation :data:`ANNOTATION` is set before the cloud is asked, and
a node carrying it less than :data:`ONCE` seconds old is left alone.

A dry run (the default) says per node what it would do and changes nothing. Applied, each node is quarantined (the
sweep's taint and label), drained through the Eviction API (PodDisruptionBudgets respected; DaemonSet pods, mirror
pods and the sweep's own left) within a timeout, annotated, then the cloud is asked. Every decision is an
:class:`Audit` entry: printed to stderr, kept in the result's ``repairs``.

Each cloud has its module here (:mod:`.aws`, and the others the platform registry names: ``Platform.repair``), a
``repairer(outputs, api_client=None, **endpoints)`` returning a :class:`Repairer`. A module whose repairer needs the
user's login may also have ``credentials() -> dict``: asked before the sweep runs (no login is then a one-line
UserError at once, not one after a sweep of half an hour that loses its result), its keywords passed on to
``repairer``. A repairer may also have ``drains(machine) -> bool``: True where the platform drains the node itself
once asked (Karpenter); the core drains the others; and ``skipped(node) -> str``: why ``machine(node)`` gave None, in
its words (said on the node's audit line instead of the core's general reason)."""

from __future__ import annotations

import itertools
import json
import sys
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Mapping, Optional, Protocol, TextIO

from gpuready_components import platforms
from gpuready_components.k8s_gpu.health import REBOOT, REPLACE, repair_action

from ..errors import UserError
from ..probe import core
from ..smoke import NETWORK_ERRORS, sweep_kubernetes
from ..smoke.retry import Backoff, retry
from ..smoke.sweep import SweepResult, SweepRow

__all__ = ["REBOOT", "REPLACE", "Audit", "Limits", "Machine", "Repairer", "after_sweep", "repair"]


@dataclass(frozen=True)
class Machine:
    """The cloud machine behind one Kubernetes node."""
    node: str   # the Kubernetes Node's name
    pool: str   # what the cloud repairs within and the limits count in: Auto Scaling group name, Karpenter NodePool
                # name, managed instance group URL, VM scale set resource id
    id: str     # the cloud's id of the machine: EC2 instance id, NodeClaim name, GCE instance self-link URL,
                # VMSS VM resource id (.../virtualMachineScaleSets/NAME/virtualMachines/N)
    where: str  # the machine in words for the audit line, e.g. "instance i-0abc of Auto Scaling group eks-gpu-1a2b",
                # "instance gke-ml-gpu-1a2b-x7k9 of managed instance group gke-ml-gpu-1a2b-grp (us-central1-a)"


class Repairer(Protocol):
    """One platform's way to reboot or replace the machine behind a node. Every call may raise; errors of the cloud
    are raised as exceptions that carry the cloud's status, and the core turns them into a line of the audit (it
    never crashes the sweep)."""
    def machine(self, node: dict) -> Optional[Machine]:
        """The machine behind a Node object (a plain dict as the Kubernetes API returns it: spec.providerID,
        metadata.labels); None where this repairer does not handle that node."""
    def pool_size(self, machine: Machine) -> int:
        """How many machines the pool has now (its target size); the limits count from it."""
    def under_way(self, machine: Machine) -> Optional[str]:
        """A repair or other change already under way on that machine, in words (EC2 state not running / ASG
        lifecycle not InService; a MIG's currentAction for the instance not NONE; a VMSS VM not Succeeded or not
        running); None when there is none. The core never repairs a machine with something under way."""
    def reboot(self, machine: Machine) -> str:
        """Ask the cloud to reboot the machine; the cloud's answer in words for the audit (operation name, request
        id)."""
    def replace(self, machine: Machine) -> str:
        """Ask the cloud to replace the machine by new hardware (the pool keeps its size); the answer in words."""


ANNOTATION = "gpuready.io/repair"
"""The node annotation recording a repair asked of the cloud: JSON ``{action, time (UTC), machine, outcome,
answer}``, written before the cloud is asked (``outcome`` ``pending``) and again with its answer."""
ONCE = 3600.0
"""Seconds during which a node carrying :data:`ANNOTATION` is not repaired again (unless the cloud refused: then
nothing was done)."""
DRAIN_TIMEOUT = 300.0
"""Seconds a node may take to drain before its repair is given up (said)."""
ASK_GRACE = 60.0
"""Seconds a cloud call is retried on passing faults (throttling, 5xx, a lost connection)."""
READ_GRACE = 30.0
"""Seconds a read (a node, a machine's state, a pool's size) is retried on passing faults."""
BACKOFF = Backoff(0.5, 5.0)
RETRYABLE_STATUS = (429, 500, 502, 503, 504)
"""HTTP statuses of a passing fault, on every cloud."""
MIRROR = "kubernetes.io/config.mirror"
"""The annotation of a static pod's mirror (the kubelet's own: evicting it does nothing)."""
OWN = ("app.kubernetes.io/name", "gpuready-sweep")
"""The label of the sweep's own pods (left on the node; their Jobs are deleted with the sweep)."""

WOULD, REQUESTED, REFUSED, FAILED, SKIPPED, INTERRUPTED = \
    "would", "requested", "refused", "failed", "not repaired", "interrupted"
"""Audit outcomes: a dry run's; the cloud accepted; the cloud refused (nothing done); no answer came (it may have
acted); left alone (why in ``answer``); Ctrl-C while asking."""


@dataclass(frozen=True)
class Limits:
    """What the user asked of ``--repair``."""

    apply: bool = False
    """Act (``--apply``); otherwise a dry run that changes nothing."""
    max_repairs: int = 1
    """Machines under repair at once, those already under way included (``--max-repairs``)."""
    max_unhealthy: int = 20
    """No repair in a pool whose failing and under-way share is above this percentage (``--max-unhealthy``; EKS
    node repair's default threshold)."""
    drain_timeout: float = DRAIN_TIMEOUT


@dataclass
class Audit:
    """One failing node and what ``--repair`` did about it (or would, or why not)."""

    time: str
    """When it was decided, UTC (ISO 8601)."""
    node: str
    machine: str
    """The cloud's id of the machine ('' where none was found)."""
    where: str
    action: str
    """:data:`REBOOT`, :data:`REPLACE`, or '' (no repair cures what failed)."""
    why: str
    """What failed that the action cures."""
    outcome: str
    """:data:`WOULD`, :data:`REQUESTED`, :data:`REFUSED`, :data:`FAILED`, :data:`SKIPPED` or :data:`INTERRUPTED`."""
    answer: str = ""
    """The cloud's answer or error, or why the node was left alone."""
    pool: str = ""

    def text(self) -> str:
        """The audit line."""
        at = f" ({self.where})" if self.where else ""
        if self.outcome == WOULD:
            return f"{self.time} would {self.action} node {self.node}{at}: {self.why}"
        if self.outcome == REQUESTED:
            return f"{self.time} asked to {self.action} node {self.node}{at}: {self.answer}; for {self.why}"
        if self.outcome in (REFUSED, FAILED):
            return f"{self.time} could not {self.action} node {self.node}{at}: {self.outcome}: {self.answer}"
        if self.outcome == INTERRUPTED:
            return f"{self.time} interrupted while asking to {self.action} node {self.node}{at}: {self.answer}"
        return f"{self.time} node {self.node} not repaired{at}: {self.answer}" + \
            (f"; it failed {self.why}" if self.why else "")

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "text": self.text()}


def after_sweep(limits: Limits, **endpoints: Any) -> Callable[[Mapping[str, Any]], Callable[[Any], None]]:
    """``--repair`` as :func:`gpuready.smoke.sweep_on_stack`'s ``after`` step: given the outputs, a UserError where
    their platform repairs nothing, or its repairer's ``credentials()`` fail (no login), before the sweep runs; after
    the sweep, :func:`repair` on its result with the platform's repairer (``endpoints`` passed to it: tests point it
    at fakes)."""
    def check(outputs: Mapping[str, Any]) -> Callable[[Any], None]:
        found = platforms.get(outputs.get("platform"))
        if found is None:  # the sweep's own look-up says what is wrong with the outputs
            return lambda target: None
        if found.repair is None:
            raise UserError(f"--repair: gpuready repairs no node on platform {found.name}: drop --repair")
        module = found.repair()
        login = getattr(module, "credentials", dict)()

        def then(target: Any) -> None:
            repairer = module.repairer(outputs, getattr(target, "api", None), **login, **endpoints)
            repair(target.result, repairer, target.core_api, target.calls, limits, progress=target.progress,
                   clock=target.clock)
        return then
    return check


def failing(row: SweepRow) -> bool:
    """A row ``--quarantine`` and ``--repair`` act on: its probe failed, or it advertises no GPU."""
    return row.verdict == core.FAIL and bool(row.checks or row.detail.startswith("advertises no allocatable"))


def repair(result: SweepResult, repairer: Repairer, core_api: Any, calls: Any, limits: Limits, *,
           progress: Optional[TextIO] = None, clock: Callable[[], float] = time.monotonic,
           now: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
           sleep: Callable[[float], None] = time.sleep) -> None:
    """Decide, for each failing row of ``result`` (by node name), what to do, within ``limits``, and (``apply``) do
    it: an :class:`Audit` entry each, appended to ``result.repairs`` and printed to ``progress`` (default stderr).
    ``core_api`` and ``calls``: the sweep's Kubernetes CoreV1Api and :class:`gpuready.smoke.kubernetes.BoundedCalls`.
    A Ctrl-C while the cloud is asked is said in the audit, then raised."""
    progress = progress or sys.stderr
    rows = sorted((r for r in result.rows if failing(r)), key=lambda r: r.node)
    if not rows:
        return
    bad = {r.node for r in rows}

    def read(call: Callable[[], Any]) -> Any:
        return retry(call, retryable=retryable, backoff=BACKOFF, deadline=clock() + READ_GRACE, clock=clock,
                     sleep=sleep)

    plain = core_api.api_client.sanitize_for_serialization
    machines: dict[str, Optional[Machine]] = {}
    notes: dict[str, dict[str, str]] = {}
    unknown: dict[str, str] = {}
    skipped: dict[str, str] = {}
    for r in result.rows:
        try:
            node = plain(calls(core_api.read_node, r.node, deadline=clock() + READ_GRACE))
            notes[r.node] = node["metadata"].get("annotations") or {}
            machines[r.node] = read(lambda: repairer.machine(node))
            if machines[r.node] is None:
                skipped[r.node] = getattr(repairer, "skipped", lambda node: "")(node)
        except Exception as error:  # noqa: BLE001 (said on the node's audit line)
            machines[r.node], unknown[r.node] = None, f"its machine could not be told ({said(error)})"
    pools = {m.pool: m for n, m in machines.items() if m is not None and n in bad}
    under: dict[str, Optional[str]] = {}
    for n, m in machines.items():
        if m is not None and m.pool in pools:
            try:
                under[n] = read(lambda: repairer.under_way(m))
            except Exception as error:  # noqa: BLE001 (a machine whose state is unknown is never acted on)
                under[n] = f"its state could not be read ({said(error)})"
    blocked = {pool: _too_broad(pool, machine, machines, bad, under, repairer, limits, read)
               for pool, machine in pools.items()}
    recent = {n: _recent(notes.get(n, {}), now()) for n in machines}
    # under way: a machine whose state says so, or one gpuready asked to repair within the hour that left its pool
    busy = sum(1 for n, m in machines.items() if under.get(n) or (m is None and recent[n] and n not in unknown))
    room = limits.max_repairs - busy
    for r in rows:
        m = machines.get(r.node)
        action, why = repair_action(r.checks)
        audit = Audit(_stamp(now()), r.node, m.id if m else "", m.where if m else "", action, why or r.detail,
                      SKIPPED, pool=m.pool if m else "")
        if recent[r.node]:
            audit.answer = recent[r.node]
        elif m is None:
            audit.answer = unknown.get(r.node) or skipped.get(r.node) or "no machine of a pool gpuready repairs " \
                "is behind it (its providerID names none, or its platform repairs it by itself)"
        elif not action:
            audit.answer, audit.why = why, r.detail
        elif blocked.get(m.pool):
            audit.answer = blocked[m.pool]
        elif under.get(r.node):
            audit.answer = f"{under[r.node]}: never repaired while something is under way"
        elif room < 1:
            audit.answer = f"--max-repairs {limits.max_repairs} reached ({busy} under way before this sweep): a " \
                           "later sweep repairs it"
        elif not limits.apply:
            audit.outcome, room = WOULD, room - 1
        else:
            try:
                _act(audit, m, r, repairer, core_api, calls, limits, progress, clock, sleep)
            except KeyboardInterrupt:
                _say(result, audit, progress)
                raise
            room -= audit.outcome in (REQUESTED, FAILED)
        _say(result, audit, progress)


def _too_broad(pool: str, machine: Machine, machines: Mapping[str, Optional[Machine]], bad: set[str],
               under: Mapping[str, Optional[str]], repairer: Repairer, limits: Limits,
               read: Callable[[Callable[[], Any]], Any]) -> Optional[str]:
    """Why nothing in ``pool`` is repaired (its unhealthy share above the limit, or its size unknown), or None."""
    try:
        size = int(read(lambda: repairer.pool_size(machine)))
    except Exception as error:  # noqa: BLE001 (the limit cannot be held: nothing repaired there)
        return f"the size of {pool} could not be read ({said(error)}), so the unhealthy share cannot be held"
    members = [n for n, m in machines.items() if m is not None and m.pool == pool]
    unhealthy = [n for n in members if n in bad or under.get(n)]
    size = max(size, len(members), 1)
    share = 100 * len(unhealthy) / size
    if share <= limits.max_unhealthy:
        return None
    return f"{len(unhealthy)} of the {size} machines of {pool} are failing or under repair ({share:.0f}% > " \
           f"--max-unhealthy {limits.max_unhealthy}%): a cause that broad (a driver, an image, a zone) is not one " \
           "bad GPU, and repairing the machines would not cure it; nothing repaired there"


def _act(audit: Audit, machine: Machine, row: SweepRow, repairer: Repairer, core_api: Any, calls: Any,
         limits: Limits, progress: TextIO, clock: Callable[[], float], sleep: Callable[[float], None]) -> None:
    """Quarantine, drain (unless the platform does), annotate, then ask the cloud; the outcome into ``audit``."""
    node = row.node
    try:
        sweep_kubernetes.quarantine(core_api, calls, node, row.detail, clock() + READ_GRACE)
        if not getattr(repairer, "drains", lambda m: False)(machine):
            stuck = drain(core_api, calls, node, limits.drain_timeout, progress, clock, sleep)
            if stuck:
                audit.answer = f"not drained: {stuck}; it stays quarantined"
                return
        stamp = {"action": audit.action, "time": audit.time, "machine": machine.id, "outcome": "pending",
                 "answer": ""}
        annotate(core_api, calls, node, stamp, clock() + READ_GRACE)
    except Exception as error:  # noqa: BLE001 (the cloud not asked: said)
        audit.answer = f"not asked: the node could not be prepared ({said(error)})"
        return
    call = repairer.reboot if audit.action == REBOOT else repairer.replace
    try:
        audit.outcome, audit.answer = _ask(call, machine, repairer, clock() + ASK_GRACE, clock, sleep)
    except KeyboardInterrupt:
        audit.outcome = INTERRUPTED
        audit.answer = f"the request may have reached the cloud; the node carries {ANNOTATION}, so no sweep " \
                       "repairs it again within the hour"
        raise
    try:
        annotate(core_api, calls, node, {**stamp, "outcome": audit.outcome, "answer": audit.answer[:500]},
                 clock() + READ_GRACE)
    except Exception as error:  # noqa: BLE001 (the repair stands; its record says pending)
        audit.answer += f" (the node's {ANNOTATION} still says pending: {said(error)})"


def _ask(call: Callable[[Machine], str], machine: Machine, repairer: Repairer, deadline: float,
         clock: Callable[[], float], sleep: Callable[[float], None]) -> tuple[str, str]:
    """``call(machine)``'s outcome and answer, retried on passing faults until ``deadline``; before each retry the
    machine's state is read: a change under way means an earlier call took effect (its answer lost), so it is not
    sent again."""
    lost = ""
    for attempt in itertools.count():
        try:
            answer = call(machine)
            return REQUESTED, answer + (f" (after {lost})" if lost else "")
        except Exception as error:  # noqa: BLE001 (sorted: passing faults retried, the rest said)
            lost = said(error)
            if not retryable(error):
                return (REFUSED if _refused(error) else FAILED), lost
            pause = BACKOFF.pause(attempt)
            if clock() + pause >= deadline:
                return FAILED, f"{lost}, still after {attempt + 1} tries: the request may have reached the cloud"
        sleep(pause)
        try:
            now = repairer.under_way(machine)
        except Exception:  # noqa: BLE001 (unknown: ask again)
            now = None
        if now:
            return REQUESTED, f"the answer was lost ({lost}), but {now}: the request took effect"
    raise AssertionError("unreachable")  # pragma: no cover


def drain(core_api: Any, calls: Any, node: str, timeout: float, progress: TextIO, clock: Callable[[], float],
          sleep: Callable[[float], None] = time.sleep) -> Optional[str]:
    """Evict every pod of ``node`` through the Eviction API (policy/v1: the API server refuses an eviction a
    PodDisruptionBudget forbids, with 429, retried as ``kubectl drain`` does) but DaemonSet pods, mirror pods, the
    sweep's own and finished ones, and wait until they are gone, for at most ``timeout`` seconds: None once drained,
    else why not."""
    deadline = clock() + timeout
    plain = core_api.api_client.sanitize_for_serialization
    api_error = calls.client.exceptions.ApiException

    def left() -> list[dict]:
        found = plain(calls(core_api.list_pod_for_all_namespaces, field_selector=f"spec.nodeName={node}",
                            deadline=deadline))
        return [p for p in found.get("items") or () if _evictable(p)]
    pods = left()
    if pods:
        print(f"gpuready: draining {node}: evicting {len(pods)} pods (PodDisruptionBudgets respected, at most "
              f"{timeout:g} s)", file=progress)
    for pod in pods:
        name, namespace = pod["metadata"]["name"], pod["metadata"]["namespace"]
        body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": namespace}}
        try:
            calls(core_api.create_namespaced_pod_eviction, name, namespace, body, deadline=deadline)
        except api_error as error:
            if error.status == 404:
                continue
            if error.status == 429:
                return f"the eviction of pod {namespace}/{name} was refused for {timeout:g} s " \
                       f"({_message(error) or 'a PodDisruptionBudget forbids it'})"
            raise
    while True:
        pods = left()
        if not pods:
            return None
        if clock() >= deadline:
            return f"{len(pods)} pods still on it after {timeout:g} s (" + ", ".join(
                f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in pods[:5]) + ")"
        sleep(max(0.0, min(2.0, deadline - clock())))


def _evictable(pod: dict) -> bool:
    meta = pod.get("metadata") or {}
    if any(o.get("kind") == "DaemonSet" for o in meta.get("ownerReferences") or ()):
        return False
    if MIRROR in (meta.get("annotations") or {}) or (meta.get("labels") or {}).get(OWN[0]) == OWN[1]:
        return False
    return ((pod.get("status") or {}).get("phase")) not in sweep_kubernetes.TERMINAL


def annotate(core_api: Any, calls: Any, node: str, stamp: Mapping[str, Any], deadline: float) -> None:
    """Set :data:`ANNOTATION` on ``node`` to ``stamp`` (JSON), keeping its other annotations
    (:func:`gpuready.smoke.sweep_kubernetes.patch_node`: a conflict read again and retried)."""
    value = json.dumps(dict(stamp), sort_keys=True)
    sweep_kubernetes.patch_node(core_api, calls, node, lambda current: [{
        "op": "add", "path": "/metadata/annotations",
        "value": {**(current["metadata"].get("annotations") or {}), ANNOTATION: value}}], deadline)


def _recent(annotations: Mapping[str, str], now: datetime) -> Optional[str]:
    """Why the node is not repaired again (:data:`ANNOTATION` less than :data:`ONCE` old), or None."""
    raw = annotations.get(ANNOTATION)
    if not raw:
        return None
    try:
        stamp = json.loads(raw)
        when = datetime.fromisoformat(str(stamp["time"]).replace("Z", "+00:00"))
    except (ValueError, KeyError, TypeError):
        return f"it carries an unreadable {ANNOTATION} ({raw[:80]!r}): remove it (`kubectl annotate node NODE " \
               f"{ANNOTATION}-`) to let gpuready repair the node"
    if stamp.get("outcome") == REFUSED:
        return None
    age = (now - when).total_seconds()
    if age >= ONCE:
        return None
    return f"already asked to {stamp.get('action')} it at {stamp['time']} ({age / 60:.0f} min ago; " \
           f"{stamp.get('outcome')}: {stamp.get('answer') or 'no answer recorded'}): not again within the hour"


def _say(result: SweepResult, audit: Audit, progress: TextIO) -> None:
    result.repairs.append(audit.to_json())
    print(f"gpuready: repair: {audit.text()}", file=progress)


def _stamp(when: datetime) -> str:
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def status(error: BaseException) -> Optional[int]:
    """The HTTP status an error carries: botocore's ``response``, or the ``status`` of the Kubernetes client's errors
    and of :class:`gpuready.repair.rest.CloudError` (the GKE and AKS repairers'); None where none."""
    response = getattr(error, "response", None)
    if isinstance(response, dict):
        return response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    value = getattr(error, "status", None)
    return value if isinstance(value, int) else None


def _code(error: BaseException) -> str:
    response = getattr(error, "response", None)
    return str(response.get("Error", {}).get("Code") or "") if isinstance(response, dict) else ""


def retryable(error: BaseException) -> bool:
    """A passing fault: throttling, a 5xx, a connection lost or never made."""
    if status(error) in RETRYABLE_STATUS or "Throttl" in _code(error) or _code(error) == "RequestLimitExceeded":
        return True
    names = {cls.__name__ for cls in type(error).__mro__}
    return bool(names & set(NETWORK_ERRORS)) or isinstance(error, (ConnectionError, TimeoutError))


def _refused(error: BaseException) -> bool:
    """The cloud answered no (a 4xx but throttling): the request did nothing."""
    code = status(error)
    return code is not None and 400 <= code < 500


def _message(error: BaseException) -> str:
    try:
        return str(json.loads(getattr(error, "body", None) or "{}").get("message") or "")
    except (ValueError, AttributeError):
        return ""


def said(error: BaseException) -> str:
    """An error in one line: the cloud's code, message, HTTP status and request id where it gives them."""
    response = getattr(error, "response", None)
    if isinstance(response, dict) and "Error" in response:
        meta = response.get("ResponseMetadata", {})
        text = f"{response['Error'].get('Code')}: {response['Error'].get('Message')} (HTTP " \
               f"{meta.get('HTTPStatusCode')}, request {meta.get('RequestId') or '-'})"
    else:
        text = f"{type(error).__name__}: {_message(error) or error}"
    return " ".join(text.split())[:300]
