"""A smoke run through a Kueue queue on EKS, GKE, AKS: a team's (``--team``, the stack's ``teams`` output) or, on a
stack with teams and no ``--team``, the operators' queue (the ``operatorsQueue`` output: the queue of the platform's
own checks, which borrows the GPUs the teams leave idle at the highest priority). The labels that hand a Job, Indexed
Job or JobSet to Kueue, the queue a run uses, what a Workload says about its admission, and why it was not admitted,
in the words of :class:`.scaler.Finding` (what Kueue said, and the fix).

Pure: no API call here. :class:`.kubernetes.KubernetesRun` reads the objects (the Workload Kueue made for the Job,
the team's LocalQueue and ClusterQueue, the cohort's ClusterQueues) and hands them to :func:`explain`.

Kueue's facts (v0.19.2, ``kueue.x-k8s.io/v1beta2``): a Job, Indexed Job or JobSet carrying the label
:data:`QUEUE_LABEL` in its own ``metadata.labels`` is queued in that LocalQueue of its namespace; Kueue keeps it
suspended and makes one Workload for it (owned by it, labelled :data:`JOB_UID_LABEL` with its UID; an Indexed Job is
one pod set ``main`` of ``parallelism`` pods, a JobSet one pod set per replicated job), admits the Workload whole
(``status.admission.podSetAssignments[].flavors``) and unsuspends the Job. A Workload not admitted says why in its
``QuotaReserved`` condition (False: ``couldn't assign flavors to pod set main: insufficient unused quota for
nvidia.com/gpu in flavor F, N more needed``; ``LocalQueue Q doesn't exist``; ``ClusterQueue C is inactive``), and a
preempted one in ``Evicted``/``Preempted`` (``Preempted to accommodate a workload ... due to reclamation within the
cohort``) with its ``requeueState``.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Optional, Sequence

from gpuready_components.k8s_gpu.topology import gang_level, pod_template_annotations
from gpuready_components.queue_facts import TOPOLOGY_UNCONSTRAINED_ANNOTATION

from ..errors import UserError
from .scaler import Finding

GROUP, VERSION = "kueue.x-k8s.io", "v1beta2"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
"""The label naming the LocalQueue (in the object's namespace) that Kueue queues a Job or JobSet in."""
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
"""The label naming the WorkloadPriorityClass of a Job or JobSet's Workload."""
OPERATORS = "operators"
"""``role`` of the queue item :func:`stack_operators` makes (a team's item has none)."""
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
"""The label Kueue puts on a Workload: the UID of the Job (or JobSet) it stands for."""
GPU = "nvidia.com/gpu"
SOURCE = "Kueue"
INSUFFICIENT = re.compile(r"insufficient unused quota for (?P<resource>\S+) in flavor (?P<flavor>[^,]+), "
                          r"(?P<more>\S+) more needed")
BORROWING = re.compile(r"borrowing limit for (?P<resource>\S+) in flavor (?P<flavor>\S+) exceeded")


def stack_teams(stack: Any) -> list[dict[str, Any]]:
    """The stack's ``teams`` output (one map per team; empty when it declares none). Read through the platform's
    contract where it declares ``teams``; a contract that does not yet (a gpuready older than the queues) gives
    the raw output, checked against the same kind."""
    from gpuready_components.outputs import TEAMS

    if "teams" in stack.contract:
        return list(stack.get("teams", []))
    value = stack.values.get("teams") or []
    if not TEAMS.fits(value):
        raise UserError(f"{stack.source}: output 'teams' must be {TEAMS.name}: re-read the outputs with `pulumi "
                        "stack output --json --show-secrets`")
    return list(value)


def stack_operators(stack: Any) -> Optional[dict[str, Any]]:
    """The stack's operators' queue (its ``operatorsQueue`` output) as a queue item shaped as a team's (``name``: its
    ClusterQueue, ``role``: :data:`OPERATORS`, with ``namespace``, ``localQueue``, ``clusterQueue``, ``cohort``,
    ``priorityClass``); None when the stack has none (no teams, or deployed by a gpuready older than the queue)."""
    from gpuready_components.outputs import QUEUE

    value = stack.get("operatorsQueue") if "operatorsQueue" in stack.contract else stack.values.get("operatorsQueue")
    if not value:
        return None
    if not QUEUE.fits(value):
        raise UserError(f"{stack.source}: output 'operatorsQueue' must be {QUEUE.name}: re-read the outputs with "
                        "`pulumi stack output --json --show-secrets`")
    return {**value, "name": str(value["clusterQueue"]), "role": OPERATORS}


def is_operators(queue: Optional[Mapping[str, Any]]) -> bool:
    """``queue`` is the operators' queue (:func:`stack_operators`), not a team's."""
    return bool(queue) and queue.get("role") == OPERATORS


def whose(queue: Mapping[str, Any]) -> str:
    """Whose queue ``queue`` is, as a message says it before "quota" or "queue": ``team research's``, ``the
    operators'``."""
    return "the operators'" if is_operators(queue) else f"team {queue['name']}'s"


def choose(teams: Sequence[Mapping[str, Any]], name: Optional[str], platform: str,
           teamless: Optional[str] = None, operators: Optional[Mapping[str, Any]] = None
           ) -> Optional[Mapping[str, Any]]:
    """The team item of ``teams`` named ``name`` (``--team``); without ``--team`` on a stack with teams, the
    ``operators``' queue (:func:`stack_operators`) when the stack has one; None for a run without a queue: no
    ``--team`` on a stack without teams, or on one whose platform has a path for jobs without a team (``teamless``:
    where they go, said by the caller). A UserError (exit 2) for an unknown team, ``--team`` on a stack without
    teams, or no ``--team`` where the stack's GPU jobs go through teams' queues only (a stack deployed by a gpuready
    older than the operators' queue)."""
    names = [str(t["name"]) for t in teams]
    if name is None:
        if not teams or teamless:
            return None
        if operators is not None:
            return operators
        raise UserError(f"this {platform} stack queues GPU jobs by team ({', '.join(names)}): pass --team NAME "
                        f"(e.g. --team {names[0]}), or run `pulumi up` with this gpuready version, which adds the "
                        "operators' queue that gpuready's checks use without --team")
    if not teams:
        raise UserError(f"--team {name}: this {platform} stack declares no teams (its outputs have no 'teams'): "
                        "drop --team, or declare teams (gpuready:teams) and run `pulumi up`")
    for team in teams:
        if team["name"] == name:
            return team
    raise UserError(f"--team {name}: no such team on this {platform} stack; its teams are {', '.join(names)}")


def reachable_gpus(team: Mapping[str, Any], teams: Sequence[Mapping[str, Any]]) -> int:
    """The most GPUs one job of ``team``'s queue can ever be admitted with, by Kueue's arithmetic
    (:func:`gpuready_components.queue_arithmetic.admission`): the stack's own answer, its output ``mostGpusPerJob``
    (the largest of its flavors: Kueue gives a job's pods one flavor); from the outputs of a gpuready older than it,
    the same arithmetic on the teams' ``gpus``, ``borrow`` and ``lend`` (their Cohort held no quota of its own), over
    all their flavors at once: never less than Kueue admits, so it refuses only what can never run."""
    if team.get("mostGpusPerJob") is not None:
        return int(team["mostGpusPerJob"])
    from gpuready_components.queue_arithmetic import Limits, Queue, admission

    def limit(value: Any) -> Optional[int]:
        return None if value is None else int(value)

    queues = [Queue(str(t["name"]), str(t.get("cohort") or "") or None,
                    {"gpus": Limits(int(t["gpus"]), limit(t.get("borrow")), limit(t.get("lend")))}) for t in teams]
    return int(admission(queues, {}, {}).most(str(team["name"])))


def too_large(team: Mapping[str, Any], teams: Sequence[Mapping[str, Any]], gpus: int, what: str) -> Optional[str]:
    """Why a job asking ``gpus`` GPUs in all (``what`` it is) can never be admitted in ``team``'s queue (Kueue would
    leave it Pending for ever), or None when it fits. The operators' queue is not judged here: it may borrow every
    GPU the Cohort holds, teams' and the Cohort's own, which ``teams`` alone does not say."""
    if is_operators(team):
        return None
    most = reachable_gpus(team, teams)
    if gpus <= most:
        return None
    borrow = "no borrowing" if team.get("borrow") == 0 else \
        "borrowing what the other teams lend and the cohort holds" if team.get("borrow") is None else \
        f"borrowing at most {team['borrow']} more"
    return (f"--team {team['name']}: {what} asks for {gpus} GPUs, and team {team['name']}'s queue admits at most "
            f"{most} at once for one job (its quota of {team['gpus']} GPUs, {borrow}, while the other teams idle; "
            "Kueue gives a job's pods one GPU pool): Kueue would leave it Pending for ever; ask for fewer (--nodes, "
            "--gpus), or have the admin raise the team's gpus or borrow (gpuready:teams) and run `pulumi up`")


def queued(manifest: dict[str, Any], local_queue: str, priority_class: Optional[str] = None) -> dict[str, Any]:
    """``manifest`` (a batch/v1 Job or a JobSet) handed to Kueue: the LocalQueue label (and, given, the
    WorkloadPriorityClass label) in its own ``metadata.labels`` (where Kueue's Job and JobSet integrations read them)
    and created suspended (Kueue unsuspends it on admission; without its webhook no pod starts ahead of the
    queue)."""
    labels = manifest["metadata"].setdefault("labels", {})
    labels[QUEUE_LABEL] = local_queue
    if priority_class:
        labels[PRIORITY_LABEL] = priority_class
    manifest["spec"]["suspend"] = True
    return manifest


def condition(workload: Mapping[str, Any], kind: str) -> Optional[Mapping[str, Any]]:
    """The Workload's condition of type ``kind`` (QuotaReserved, Admitted, Evicted, Preempted...), or None."""
    for found in (workload.get("status") or {}).get("conditions") or ():
        if found.get("type") == kind:
            return found
    return None


def is_true(workload: Mapping[str, Any], kind: str) -> bool:
    found = condition(workload, kind)
    return bool(found and found.get("status") == "True")


def admitted(workload: Optional[Mapping[str, Any]]) -> bool:
    """Kueue admitted the Workload (quota reserved and every admission check passed): its Job runs."""
    return bool(workload) and is_true(workload, "Admitted") and not is_true(workload, "Evicted")


def admission(workload: Mapping[str, Any]) -> dict[str, Any]:
    """What an admitted Workload was given: its ClusterQueue, and per pod set its pod count, the ResourceFlavor of
    each resource (``flavors``: every flavor named, in order) and, placed by a Topology, Kueue's
    ``topologyAssignment`` as the Workload states it (its levels and the domains its pods went to)."""
    given = (workload.get("status") or {}).get("admission") or {}
    pod_sets = [{"name": a.get("name", "main"), "count": a.get("count"), "flavors": dict(a.get("flavors") or {}),
                 **({"topologyAssignment": a["topologyAssignment"]} if a.get("topologyAssignment") else {})}
                for a in given.get("podSetAssignments") or ()]
    flavors = []
    for pod_set in pod_sets:
        for flavor in pod_set["flavors"].values():
            if flavor not in flavors:
                flavors.append(flavor)
    return {"clusterQueue": given.get("clusterQueue"), "podSets": pod_sets, "flavors": flavors}


def owned_by(workload: Mapping[str, Any], kind: str, name: str) -> bool:
    """The Workload stands for the ``kind`` object called ``name`` (its owner reference)."""
    return any(o.get("kind") == kind and o.get("name") == name
               for o in (workload.get("metadata") or {}).get("ownerReferences") or ())


def _quantity(value: Any) -> float:
    try:
        return float(str(value))
    except ValueError:
        return 0.0


def _usage(queue: Mapping[str, Any], resource: str, flavor: Optional[str]) -> tuple[float, float]:
    """(total, borrowed) of ``resource`` a ClusterQueue uses, in ``flavor`` (None: all flavors)."""
    total = borrowed = 0.0
    for used in (queue.get("status") or {}).get("flavorsUsage") or ():
        if flavor is not None and used.get("name") != flavor:
            continue
        for r in used.get("resources") or ():
            if r.get("name") == resource:
                total, borrowed = total + _quantity(r.get("total", 0)), borrowed + _quantity(r.get("borrowed", 0))
    return total, borrowed


def _nominal(queue: Mapping[str, Any], resource: str, flavor: Optional[str]) -> float:
    quota = 0.0
    for group in (queue.get("spec") or {}).get("resourceGroups") or ():
        for f in group.get("flavors") or ():
            if flavor is None or f.get("name") == flavor:
                quota += sum(_quantity(r.get("nominalQuota", 0)) for r in f.get("resources") or ()
                             if r.get("name") == resource)
    return quota


def _n(value: float) -> str:
    return f"{value:g}"


CHECK_STATES = ("Pending", "Retry", "Rejected")
"""The states of a Workload's admission check (``status.admissionChecks[].state``, Kueue v1beta2) that hold it back."""


def _admission_check(check: Mapping[str, Any], owner: str, namespace: str) -> Finding:
    """A Workload whose quota is reserved, held by admission check ``check``: waiting (a ProvisioningRequest check:
    the Dynamic Workload Scheduler still getting every node of the job at once) or rejected."""
    state, check_name, said = check.get("state"), check.get("name"), str(check.get("message") or "")
    requests = f"kubectl -n {namespace} describe provisioningrequests"
    if state == "Rejected":
        return Finding("admission-check-rejected", SOURCE, f"admission check {check_name} rejected the job: Kueue "
                       "evicts it and it does not run as asked", said, (
                           f"read why ({requests}, for a ProvisioningRequest: no capacity for the whole request "
                           "before its timeout, or nodes the pool cannot give)", "resubmit, or ask for fewer GPUs "
                           "(--gpus, --nodes)"))
    return Finding("admission-check-waiting", SOURCE, f"{owner} quota is reserved; the job waits on admission "
                   f"check {check_name} ({state}): for a ProvisioningRequest check (GKE flex-start with queued "
                   "provisioning) the Dynamic Workload Scheduler is still getting all of the job's nodes at once",
                   said, ("wait: Kueue admits the job once the check is Ready (flex-start capacity may take minutes "
                          "to hours)", f"see its progress: {requests}"))


def explain(workload: Optional[Mapping[str, Any]], team: Mapping[str, Any], *,
            local_queue: tuple[bool, Optional[Mapping[str, Any]]],
            cluster_queue: tuple[bool, Optional[Mapping[str, Any]]],
            cohort: Sequence[Mapping[str, Any]] = ()) -> list[Finding]:
    """Why ``workload`` (None: Kueue made none yet) was not admitted in ``team``'s queue, and the fix: each of
    ``local_queue``, ``cluster_queue`` is (readable, the object or None when it does not exist), ``cohort`` the
    ClusterQueues we could read (the other teams' usage). Kinds (stable for --json): queue-missing, queue-stopped,
    preempted, queue-quota, queue-borrowing, admission-check-waiting, admission-check-rejected, queue-waiting,
    no-workload."""
    name, namespace = team["name"], team.get("namespace") or team["name"]
    owner, operators = whose(team), is_operators(team)
    lq_name, cq_name = team.get("localQueue") or name, team.get("clusterQueue") or name
    findings: list[Finding] = []
    reserved = condition(workload, "QuotaReserved") if workload else None
    said = str((reserved or {}).get("message") or "")
    lq_found, lq = local_queue
    cq_found, cq = cluster_queue
    if (lq_found and lq is None) or "LocalQueue" in said and "doesn't exist" in said:
        findings.append(Finding("queue-missing", SOURCE, f"LocalQueue {lq_name} does not exist in namespace "
                                f"{namespace}: Kueue queues the job nowhere", said, (
                                    f"create it: run `pulumi up` on the stack (it makes one LocalQueue per team in "
                                    f"the team's namespace), or ask the admin (kubectl -n {namespace} get "
                                    "localqueues)",)))
        return findings
    if (cq_found and cq is None) or "ClusterQueue" in said and "doesn't exist" in said:
        findings.append(Finding("queue-missing", SOURCE, f"ClusterQueue {cq_name} ({owner} quota) does not "
                                "exist", said, ("create it: run `pulumi up` on the stack, or ask the admin "
                                                "(kubectl get clusterqueues)",)))
        return findings
    active = next((c for c in ((cq or {}).get("status") or {}).get("conditions") or () if c.get("type") == "Active"),
                  None)
    if (active and active.get("status") == "False") or "is inactive" in said:
        why = f"{(active or {}).get('reason', '')}: {(active or {}).get('message', '')}".strip(": ") or said
        stopped = (cq or {}).get("spec", {}).get("stopPolicy") not in (None, "None")
        fix = (f"the ClusterQueue is stopped (spec.stopPolicy {cq['spec']['stopPolicy']}): ask the admin to resume "
               f"it (kubectl patch clusterqueue {cq_name} --type merge -p '{{\"spec\":{{\"stopPolicy\":\"None\"}}}}')"
               if stopped else "a ResourceFlavor it names is missing or an admission check is not active: ask the "
               "admin (kubectl get resourceflavors; kubectl describe clusterqueue " + cq_name + "), or run "
               "`pulumi up` on the stack")
        findings.append(Finding("queue-stopped", SOURCE, f"ClusterQueue {cq_name} admits nothing: it is inactive",
                                why, (fix,)))
        return findings
    evicted = condition(workload, "Evicted") if workload else None
    preempted = condition(workload, "Preempted") if workload else None
    if (preempted and preempted.get("status") == "True") or (evicted and evicted.get("status") == "True"
                                                            and evicted.get("reason") == "Preempted"):
        quote = str((evicted or preempted or {}).get("message") or "")
        requeue = ((workload or {}).get("status") or {}).get("requeueState") or {}
        again = (f"; Kueue queued it again ({requeue.get('count', 0)} time(s)"
                 + (f", next try at {requeue['requeueAt']}" if requeue.get("requeueAt") else "") + ")") \
            if requeue else "; Kueue queued it again"
        reason = (preempted or evicted or {}).get("reason", "Preempted")
        reclaim = "reclamation within the cohort" in quote or reason == "InCohortReclamation"
        summary = (f"the job was admitted, then preempted ({reason}): "
                   + ("another team took back the GPUs it lends, which this job had borrowed" if reclaim
                      else "a higher-priority job needed its GPUs") + again)
        findings.append(Finding("preempted", SOURCE, summary, quote, (
            f"wait: it is admitted again once {owner} queue has room",
            "the operators' queue has no quota of its own: every GPU it runs on is borrowed, and a team takes its "
            "guaranteed GPUs back when it needs them; run the check when the teams leave GPUs idle, or through a "
            "team's quota (--team NAME)" if operators else
            f"stay within team {name}'s own quota of {team.get('gpus')} GPUs (fewer --gpus or --nodes): borrowed "
            "GPUs are taken back when their team needs them")))
    match = INSUFFICIENT.search(said)
    if match:
        resource, flavor, more = match["resource"], match["flavor"], match["more"]
        used, borrowed = _usage(cq or {}, resource, flavor)
        nominal = _nominal(cq or {}, resource, flavor)
        mine = (f"the operators' queue has no quota of its own and already borrows {_n(used)} {resource} in "
                f"flavor {flavor}" if operators else
                f"team {name} already uses {_n(used)} of its {_n(nominal)} {resource} in flavor {flavor}"
                + (f" ({_n(borrowed)} of them borrowed)" if borrowed else "")) if cq else \
            f"{owner} ClusterQueue {cq_name} could not be read"
        others = []
        for queue in cohort:
            other = queue.get("metadata", {}).get("name")
            if other == cq_name:
                continue
            total, lent = _usage(queue, resource, flavor)
            if total:
                others.append(f"{other} uses {_n(total)}" + (f" ({_n(lent)} borrowed from the cohort)" if lent else ""))
        by = ("; in the cohort " + ", ".join(others)) if others else ""
        pending = ((cq or {}).get("status") or {}).get("pendingWorkloads")
        ahead = f"; {pending} workload(s) wait in {cq_name}" if pending else ""
        borrow = team.get("borrow")
        grow = ("the teams use these GPUs within their guarantees, which the operators' queue never preempts: "
                "wait for them, or check through a team's quota (--team NAME)" if operators else
                ("ask the admin to let the team borrow more (gpuready:teams borrow, now "
                 f"{borrow})" if borrow is not None else
                 "the team may already borrow every idle GPU: the other teams use theirs")
                + f", or raise its gpus (now {team.get('gpus')})")
        findings.append(Finding("queue-quota", SOURCE, f"{owner} quota of {resource} in flavor {flavor} is "
                                f"used up ({more} more needed): {mine}{by}{ahead}", said, (
                                    f"wait: Kueue admits the job as soon as {more} {resource} free up (nothing to "
                                    "resubmit)",
                                    "ask for fewer GPUs (--gpus, --nodes)", grow)))
        return findings
    match = BORROWING.search(said)
    if match:
        findings.append(Finding("queue-borrowing", SOURCE, f"team {name} may not borrow enough {match['resource']} "
                                f"in flavor {match['flavor']}: its borrowing limit is reached", said, (
                                    "wait for the team's own jobs to end", "ask for fewer GPUs (--gpus, --nodes)",
                                    f"ask the admin to raise team {name}'s borrow (now {team.get('borrow')})")))
        return findings
    waiting = [c for c in ((workload or {}).get("status") or {}).get("admissionChecks") or ()
               if c.get("state") in CHECK_STATES]
    if workload is not None and is_true(workload, "QuotaReserved") and waiting:
        for check in waiting:
            findings.append(_admission_check(check, owner, namespace))
        return findings
    if workload is None:
        findings.append(Finding("no-workload", SOURCE, f"Kueue made no Workload for the job in namespace {namespace}: "
                                "is Kueue running, with its Job (and JobSet) integration on?", "", (
                                    "kubectl -n kueue-system get deploy kueue-controller-manager; ask the admin",)))
    elif not findings:
        findings.append(Finding("queue-waiting", SOURCE, f"the job waits in {owner} queue {lq_name}", said, (
            "wait: Kueue admits it when its turn comes",)))
    return findings


def pod_templates(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod templates of a batch/v1 Job (``spec.template``) or a JobSet (each replicated job's)."""
    spec = manifest["spec"]
    if "replicatedJobs" in spec:
        return [r["template"]["spec"]["template"] for r in spec["replicatedJobs"]]
    return [spec["template"]]


def placed(manifest: dict[str, Any], queue: Optional[Mapping[str, Any]], pool: Optional[str] = None
           ) -> dict[str, Any]:
    """``manifest`` (a Job or JobSet, :func:`queued`) asking Kueue's Topology Aware Scheduling for what its queue's
    pools with a Topology need (their ``gangLevels`` in the queue's stack output; none: unchanged, so a stack without
    one renders what it did): a gang (no ``pool``) one domain of the finest level all of them have, *preferred*
    (:func:`gpuready_components.k8s_gpu.topology.pod_template_annotations` says why); a Job pinned to a node of
    ``pool`` (the sweep), no domain but TAS all the same when that pool has a Topology, without which Kueue would
    never give it that pool in a queue whose other pools have none."""
    levels = dict((queue or {}).get("gangLevels") or {})
    if pool is None:
        annotations = pod_template_annotations(gang_level(levels))
    else:
        annotations = {TOPOLOGY_UNCONSTRAINED_ANNOTATION: "true"} if pool in levels else {}
    for template in pod_templates(manifest) if annotations else ():
        template.setdefault("metadata", {}).setdefault("annotations", {}).update(annotations)
    return manifest
