"""The sweep on AWS Batch: N jobs, each asking for every GPU, vCPU and usable memory of the queue's largest instance
type, so that each lands on an instance of its own; their probe reports give a row per instance.

One probe job definition for the run (:mod:`.batch_probe`), each job submitted at most once, every job that may
exist terminated and the definition deregistered on every exit path (:class:`.batch.Submission`, as the smoke
test's), the jobs polled together through ``DescribeJobs`` (:class:`.batch.Poller`: up to 100 ids a call, only jobs
not yet finished).
"""

from __future__ import annotations

import sys
import time
from typing import Any, Callable, Optional, TextIO

from gpuready_components import catalog
from gpuready_components.batch_gpu import fit

from ..errors import UserError
from ..probe import ProbeReport, core
from ..resources.aws import BatchComputeEnvironment
from . import batch, batch_probe, sweep
from .outputs import StackOutputs

DEFAULT_CAP = 16
"""Instances swept without ``--nodes``: at most this many, however many the queue's maxvCpus allows."""


def largest_type(envs: list[dict[str, Any]]) -> tuple[Optional[catalog.GpuInstanceType], int]:
    """The queue's largest GPU instance type (GPUs, then vCPUs, then memory) and how many of it the maxvCpus of the
    compute environments offering it allow at once."""
    wrapped = [BatchComputeEnvironment(env) for env in envs]
    rows = [r for env in wrapped for r in env.gpu_rows]
    if not rows:
        return None, 0
    (biggest,) = fit.largest(rows, 1)
    room = sum(env.vcpus("max") // biggest.vcpus for env in wrapped if biggest.name in env.instance_types)
    return biggest, room


def run(outputs: dict[str, Any], *, nodes: Optional[int] = None, timeout: float = 1800, full: bool = False,
        poll: float = 5.0, log_wait: float = 60.0, region: Optional[str] = None, progress: Optional[TextIO] = None,
        sleep: Callable[[float], None] = time.sleep) -> sweep.SweepResult:
    """Sweep ``nodes`` instances (default: as many of the largest type as maxvCpus allows, at most
    :data:`DEFAULT_CAP`) of the stack's GPU queue; what it waits for is printed to ``progress`` (default: stderr)."""
    progress = progress or sys.stderr
    stack = StackOutputs(outputs, ("aws-batch",))
    queue, definition = stack.get("jobQueueArn") or stack["jobQueueName"], stack["jobDefinitionArn"]
    region = batch.queue_region(queue, region)
    clients = batch.clients(region, timeout)
    client = clients["batch"]
    envs = batch.queue_environments(client, queue)
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
    name, tags = batch.run_name("sweep")
    registration = batch_probe.definition(batch.describe_definition(client, definition), gpus=instance.gpus, full=full,
                                          tags=tags)
    overrides = {"resourceRequirements": [{"type": k, "value": str(v)} for k, v in want.items()],
                 "environment": [{"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"}]}
    result.job["name"] = name
    names = [f"{name}-{i}" for i in range(count)]
    run = batch.Submission(result, clients, queue, name, registration["jobDefinitionName"], keep=False,
                           progress=progress, sleep=sleep, command="sweep")
    print(f"gpuready: {name}: {count} jobs of {fit.Needs(want['GPU'], want['VCPU'], want['MEMORY'])} "
          f"(a whole {instance.name} each)", file=progress)

    def body() -> sweep.SweepResult:
        arn = run.register(registration)
        for job_name in names:
            run.submit({"jobName": job_name, "jobQueue": queue, "jobDefinition": arn, "containerOverrides": overrides,
                        "tags": tags, "timeout": batch.attempt_timeout(timeout)}, f"submit {job_name}")
        return _finish(result, run, batch.Poller(clients["poll"]), clients["logs"], stack, instance, timeout=timeout,
                       poll=poll, log_wait=log_wait, progress=progress, sleep=sleep)

    def interrupted() -> sweep.SweepResult:
        result.notes.append("interrupted: every job terminated")
        ids = {job["name"]: job["id"] for job in run.jobs}
        result.rows = [sweep.row(n, None, instance_type=instance.name, job={"name": n, "id": ids.get(n)},
                                 problem="interrupted") for n in names]
        return result
    return run.guard(body, interrupted)


def _finish(result: sweep.SweepResult, run: batch.Submission, poller: batch.Poller, logs: Any, stack: StackOutputs,
            instance: catalog.GpuInstanceType, *, timeout: float, poll: float, log_wait: float, progress: Any,
            sleep: Callable[[float], None]) -> sweep.SweepResult:
    """Follow the run's jobs to their end (or ``timeout``: the rest terminated), read each report, a row per job."""
    name = result.job["name"]

    def changed(described: dict[str, dict[str, Any]], waited: float) -> None:
        counts: dict[str, int] = {}
        for job in described.values():
            counts[job.get("status")] = counts.get(job.get("status"), 0) + 1
        print(f"gpuready: {name}: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items(), key=str))
              + f" after {waited:.0f} s", file=progress)

    jobs = run.jobs
    described = poller.follow([j["id"] for j in jobs], timeout=timeout, poll=poll, sleep=sleep, changed=changed)
    for job in jobs:
        job["done"] = (described.get(job["id"]) or {}).get("status") in batch.TERMINAL
    run.cleanup("gpuready sweep: timed out")  # the jobs not finished
    result.job["describe_calls"], result.job["poll_rounds"] = poller.calls, poller.rounds
    ended = {j["id"]: batch.log_location(described[j["id"]], stack) for j in jobs
             if (described.get(j["id"]) or {}).get("status") in batch.TERMINAL}
    texts = batch.read_until(  # a failed job's report is not waited for
        logs, {i: where for i, where in ended.items() if where[1]},
        lambda i, text: core.find_report(text) is not None or described[i].get("status") != "SUCCEEDED",
        log_wait=log_wait, poll=poll, sleep=sleep)
    reports = {i: core.find_report(text) for i, text in texts.items()}
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
