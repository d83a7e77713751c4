"""The sweep on AWS Batch: N jobs, each asking for every GPU, vCPU and usable memory of the queue's largest instance
type, so that each lands on an instance of its own; their probe reports give a row per instance.

One probe job definition for the run (:mod:`.batch_probe`), each job submitted at most once
(:func:`.batch.create_once`), polled together through ``DescribeJobs`` (:class:`Poller`: up to 100 ids a call, only
jobs not yet finished), every job that may exist terminated and the definition deregistered on every exit path.
"""

from __future__ import annotations

import sys
import time
import uuid
from typing import Any, Callable, Iterable, Optional, TextIO

from gpuready_components import catalog
from gpuready_components.batch_gpu import fit

from ..errors import UserError
from ..probe import ProbeReport, core
from ..resources.aws import BatchComputeEnvironment
from . import batch, batch_probe, diagnose, sweep
from .outputs import StackOutputs

DESCRIBE_LIMIT = 100
"""Job ids one ``DescribeJobs`` call takes (Batch's API limit)."""
DEFAULT_CAP = 16
"""Instances swept without ``--nodes``: at most this many, however many the queue's maxvCpus allows."""


class Poller:
    """``DescribeJobs`` for many jobs: :data:`DESCRIBE_LIMIT` ids a call, only the jobs not yet finished.

    ``calls`` counts the calls made, ``rounds`` the rounds, ``polled`` the job ids asked about over all rounds:
    ``calls / polled`` is the describe calls per job per poll round."""

    def __init__(self, client: Any, limit: int = DESCRIBE_LIMIT) -> None:
        self.client, self.limit = client, limit
        self.calls = self.rounds = self.polled = 0
        self.error: Optional[Exception] = None
        """The passing fault of the last round's failed call, or None when every call of the round answered."""

    def poll(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The jobs among ``ids`` Batch described this round, by id. A call failing on a passing fault leaves its
        jobs out (asked again next round, ``error`` says why); any other error is raised."""
        ids = list(dict.fromkeys(ids))
        self.rounds, self.polled, self.error = self.rounds + 1, self.polled + len(ids), None
        found: dict[str, dict[str, Any]] = {}
        for start in range(0, len(ids), self.limit):
            self.calls += 1
            try:
                jobs = self.client.describe_jobs(jobs=ids[start:start + self.limit]).get("jobs") or []
            except Exception as error:  # noqa: BLE001 (a passing fault: those jobs are asked again next round)
                if not batch._retryable(error):
                    raise
                self.error = error
                continue
            found.update((j["jobId"], j) for j in jobs)
        return found

    def follow(self, ids: list[str], *, timeout: float, poll: float, sleep: Callable[[float], None],
               changed: Callable[[dict[str, dict[str, Any]], float], None] = lambda jobs, waited: None
               ) -> dict[str, dict[str, Any]]:
        """Poll ``ids`` until every job is SUCCEEDED or FAILED, or ``timeout`` seconds pass: the last detail seen of
        each (jobs never described are absent). ``changed(jobs, waited)`` is called when a status changed."""
        started, last, seen = time.monotonic(), {}, {}
        pending = list(ids)
        while True:
            last.update(self.poll(pending))
            waited = time.monotonic() - started
            statuses = {i: j.get("status") for i, j in last.items()}
            if statuses != seen:
                seen = statuses
                changed(last, waited)
            pending = [i for i in ids if statuses.get(i) not in batch.TERMINAL]
            if not pending or waited >= timeout:
                return last
            sleep(min(poll, max(0.1, timeout - waited)))


def largest_type(envs: list[dict[str, Any]]) -> tuple[Optional[catalog.GpuInstanceType], int]:
    """The queue's largest GPU instance type (GPUs, then vCPUs, then memory) and how many of it the maxvCpus of the
    compute environments offering it allow at once."""
    wrapped = [BatchComputeEnvironment(env) for env in envs]
    rows = [r for env in wrapped for r in env.gpu_rows]
    if not rows:
        return None, 0
    (biggest,) = fit.largest(rows, 1)
    room = sum(int(env.resources.get("maxvCpus") or 0) // biggest.vcpus for env in wrapped  # Batch's API spelling
               if biggest.name in env.instance_types)
    return biggest, room


def run(outputs: dict[str, Any], *, nodes: Optional[int] = None, timeout: float = 1800, full: bool = False,
        poll: float = 5.0, log_wait: float = 60.0, region: Optional[str] = None, progress: Optional[TextIO] = None,
        sleep: Callable[[float], None] = time.sleep) -> sweep.SweepResult:
    """Sweep ``nodes`` instances (default: as many of the largest type as maxvCpus allows, at most
    :data:`DEFAULT_CAP`) of the stack's GPU queue; what it waits for is printed to ``progress`` (default: stderr)."""
    progress = progress or sys.stderr
    stack = StackOutputs(outputs, ("aws-batch",))
    queue, definition = stack.get("jobQueueArn") or stack["jobQueueName"], stack["jobDefinitionArn"]
    region = region or (queue.split(":")[3] if queue.startswith("arn:") else None)
    clients = batch._clients(region, timeout)
    client = clients["batch"]
    found, envs = diagnose.environments(client, queue)
    if found is None:
        raise UserError(f"job queue {queue} does not exist in {client.meta.region_name}: are these the outputs of "
                        "a stack deployed with these AWS credentials, in this region?")
    instance, room = largest_type(envs)
    if instance is None:
        raise UserError(f"job queue {queue} offers no GPU instance type gpuready's catalog knows: nothing to sweep")
    if room < 1:
        raise UserError(f"the compute environments' maxvCpus allow no whole {instance.name} ({instance.vcpus} "
                        "vCPUs): raise gpuready:maxVcpus to a multiple of it")
    count = nodes or min(room, DEFAULT_CAP)
    result = sweep.SweepResult(target="batch", job={"queue": queue, "definition": definition,
                                                    "instance_type": instance.name, "jobs": count})
    if count > room:
        result.notes.append(f"{count} jobs but maxvCpus allows {room} {instance.name} at once: the others wait "
                            "for an instance to free, and may land on one already swept (shown as duplicate)")
    elif nodes is None and room > count:
        result.notes.append(f"{count} of the {room} {instance.name} maxvCpus allows (--nodes for more)")
    want = {"GPU": instance.gpus, "VCPU": instance.vcpus, "MEMORY": fit.usable_memory_mib(instance)}
    name = f"gpuready-sweep-{uuid.uuid4().hex[:12]}"
    tags = {"gpuready:sweep": "true", "gpuready:run": name}
    registration = batch_probe.definition(batch._described(client, definition), gpus=instance.gpus, full=full,
                                          tags=tags)
    family = registration["jobDefinitionName"]
    overrides = {"resourceRequirements": [{"type": k, "value": str(v)} for k, v in want.items()],
                 "environment": [{"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"}]}
    result.job["name"] = name
    jobs = [{"name": f"{name}-{i}", "id": None, "sent": False, "done": False} for i in range(count)]
    probe: dict[str, Any] = {"arn": None, "sent": False, "done": False}
    print(f"gpuready: {name}: {count} jobs of {fit.Needs(want['GPU'], want['VCPU'], want['MEMORY'])} "
          f"(a whole {instance.name} each)", file=progress)

    def cleanup(reason: str) -> None:
        """Terminate every job that exists or may exist and has not ended; once each, raising nothing but a
        Ctrl-C (after every job is terminated, when it can be)."""
        interrupted = None
        for job in jobs:
            if job["done"] or not job["sent"]:
                continue
            job["done"] = True
            try:
                batch._undo(job, "terminated", job["id"],
                            lambda job=job: batch.find_landed(lambda: batch.find_job(client, queue, job["name"]),
                                                              sleep),
                            lambda job_id: clients["cleanup"].terminate_job(jobId=job_id, reason=reason),
                            lambda error, job=job: f"could not terminate {job['name']} ({batch.describe_error(error)}):"
                                                   f" `aws batch terminate-job --job-id {job['id'] or job['name']} "
                                                   "--reason cleanup`", progress)
            except KeyboardInterrupt as stop:  # the others are terminated first
                interrupted = stop
        result.job["terminated"] = sum(bool(j.get("terminated")) for j in jobs)
        if interrupted is not None:
            raise interrupted

    def release() -> None:
        if probe["done"] or not probe["sent"]:
            return
        batch.deregister_probe(clients, result.job, probe, family, name, sleep, progress)

    try:
        result.job["probe_definition"] = batch.register_probe(clients, registration, name, probe, sleep)
        for job in jobs:
            request = {"jobName": job["name"], "jobQueue": queue, "jobDefinition": probe["arn"],
                       "containerOverrides": overrides, "tags": tags,
                       "timeout": {"attemptDurationSeconds": max(batch.MIN_ATTEMPT_SECONDS, int(timeout))}}
            job["sent"], lost = True, []
            try:
                job["id"] = batch.create_once(lambda request=request: clients["submit"].submit_job(**request)["jobId"],
                                              lambda job=job: batch.find_job(client, queue, job["name"]), sleep, lost,
                                              f"submit {job['name']}")
            except Exception:
                job["sent"] = bool(lost)
                raise
        return _finish(result, jobs, Poller(clients["poll"]), clients["logs"], stack, instance, cleanup,
                       timeout=timeout, poll=poll, log_wait=log_wait, progress=progress, sleep=sleep)
    except KeyboardInterrupt as stop:
        cleanup("gpuready sweep: interrupted")
        if type(stop) is not KeyboardInterrupt:  # SIGTERM (the CLI's subclass): cleaned up, now stop
            raise
        result.notes.append("interrupted: every job terminated")
        result.rows = [sweep.row(j["name"], None, instance_type=instance.name, job={"name": j["name"], "id": j["id"]},
                                 problem="interrupted") for j in jobs]
        return result
    finally:
        try:
            cleanup("gpuready sweep: stopped by an error")
        finally:
            release()


def _finish(result: sweep.SweepResult, jobs: list[dict[str, Any]], poller: Poller, logs: Any, stack: StackOutputs,
            instance: catalog.GpuInstanceType, cleanup: Callable[[str], None], *, timeout: float, poll: float,
            log_wait: float, progress: Any, sleep: Callable[[float], None]) -> sweep.SweepResult:
    """Follow the jobs to their end (or ``timeout``: the rest terminated), read each report, a row per job."""
    name = result.job["name"]

    def changed(described: dict[str, dict[str, Any]], waited: float) -> None:
        counts: dict[str, int] = {}
        for job in described.values():
            counts[job.get("status")] = counts.get(job.get("status"), 0) + 1
        print(f"gpuready: {name}: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items(), key=str))
              + f" after {waited:.0f} s", file=progress)

    described = poller.follow([j["id"] for j in jobs], timeout=timeout, poll=poll, sleep=sleep, changed=changed)
    for job in jobs:
        job["done"] = (described.get(job["id"]) or {}).get("status") in batch.TERMINAL
    if not all(j["done"] for j in jobs):
        cleanup("gpuready sweep: timed out")
    result.job["describe_calls"], result.job["poll_rounds"] = poller.calls, poller.rounds
    reports: dict[str, Optional[dict]] = {}
    deadline = time.monotonic() + log_wait
    while True:  # CloudWatch Logs can lag a job's end by a few seconds
        for job in jobs:
            detail = described.get(job["id"]) or {}
            if job["id"] in reports and reports[job["id"]] is not None or detail.get("status") not in batch.TERMINAL:
                continue
            group, stream = batch._log_location(detail, stack)
            reports[job["id"]] = core.find_report(batch.read_logs(logs, group, stream)) if stream else None
        waiting = [i for i, r in reports.items() if r is None and (described[i].get("status") == "SUCCEEDED")]
        if not waiting or time.monotonic() >= deadline:
            break
        sleep(min(poll, 5.0))
    keys = []
    for job in jobs:
        detail = described.get(job["id"]) or {}
        status, found = detail.get("status"), reports.get(job["id"])
        container = detail.get("container") or {}
        where = {"name": job["name"], "id": job["id"], "status": status, "log_stream": container.get("logStreamName")}
        problem = ""
        if status not in batch.TERMINAL:
            problem = f"not finished after {timeout:g} s ({status or 'status unknown'}); terminated"
        elif status == "FAILED" and (found is None or found.get("verdict") != core.FAIL):
            problem = f"job FAILED: {detail.get('statusReason') or 'no reason given'} (exit code " \
                      f"{container.get('exitCode')})"
        report = ProbeReport.from_json(found) if found else None
        instance_arn = container.get("containerInstanceArn") or ""
        node = instance_arn.rsplit("/", 1)[-1] if instance_arn.startswith("arn:") else (report.host if report and
                                                                                       report.host else job["name"])
        keys.append(instance_arn if instance_arn.startswith("arn:") else (report.host if report else None))
        result.rows.append(sweep.row(node, report, instance_type=instance.name, job=where, problem=problem))
    sweep.deduplicate(result.rows, keys)
    return result
