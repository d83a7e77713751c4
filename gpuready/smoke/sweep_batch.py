"""The sweep on AWS Batch: N jobs, each asking for every GPU, vCPU and usable memory of the queue's largest instance
type, so that each lands on an instance of its own; their probe reports give a row per instance.

One probe job definition for the run (:mod:`.batch_probe`), each job submitted at most once, every job that may
exist terminated and the definition deregistered on every exit path (:class:`.batch.Submission`, as the smoke
test's), the jobs polled together through ``DescribeJobs`` (:class:`.batch.Poller`: up to 100 ids a call, only jobs
not yet finished).
"""

from __future__ import annotations

import dataclasses
import sys
import time
from typing import Any, Callable, Mapping, Optional, TextIO

from gpuready_components import catalog
from gpuready_components import ecs_fit as fit

from ..errors import UserError
from ..probe import ProbeReport, core
from ..resources.aws import BatchComputeEnvironment
from . import batch, batch_probe, sweep
from .outputs import StackOutputs
from .target import Request, drive

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


class BatchSweepTarget(batch.BatchRun):
    """The sweep on Batch: ``--nodes`` jobs (default: as many of the queue's largest type as maxvCpus allows, at most
    :data:`DEFAULT_CAP`), each holding a whole instance, a row per instance from its probe report. Progress goes to
    ``progress`` (default: stderr); the logs are read for up to ``log_wait`` seconds."""

    def __init__(self, outputs: Mapping[str, Any], request: Request, *, poll: float = 5.0, log_wait: float = 60.0,
                 region: Optional[str] = None, progress: Optional[TextIO] = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        super().__init__(outputs, dataclasses.replace(request, keep=False))  # a sweep leaves no job running
        self.poll, self.log_wait, self.region = poll, log_wait, region
        self.progress, self.sleep = progress or sys.stderr, sleep
        self.described: dict[str, dict[str, Any]] = {}
        """Each job's last description, by id."""

    def preflight(self) -> bool:
        if self.request.repair:
            raise UserError("--repair asks the platform to reboot or replace a failing Kubernetes node: a Batch stack "
                            "has none. Terminate a failing instance yourself (`aws ec2 terminate-instances "
                            "--instance-ids ID`; its row names it): the compute environment launches another when "
                            "jobs wait. Drop --repair")
        if self.request.quarantine:
            raise UserError("--quarantine taints and labels Kubernetes nodes: a Batch stack has none (drop the "
                            "option; a failing instance leaves its compute environment when you terminate it)")
        self.stack = stack = StackOutputs(self.outputs, batch.batch_platforms())
        queue, definition = stack.get("jobQueueArn") or stack["jobQueueName"], stack["jobDefinitionArn"]
        queue, self.share = self.team_queue(stack, queue)
        self.aws = aws = batch.clients(batch.queue_region(queue, self.region), self.request.timeout)
        envs = batch.queue_environments(aws["batch"], queue)
        instance, room = largest_type(envs)
        self.instance = instance
        if instance is None:
            raise UserError(f"job queue {queue} offers no GPU instance type gpuready's catalog knows: nothing to "
                            "sweep")
        if room < 1:
            raise UserError(f"the compute environments' maxvCpus allow no whole {instance.name} ({instance.vcpus} "
                            "vCPUs): raise gpuready:maxVcpus to a multiple of it")
        nodes = self.request.nodes
        count = nodes or min(room, DEFAULT_CAP)
        self.result = result = sweep.SweepResult(target="batch", job={
            "queue": queue, "definition": definition, "instance_type": instance.name, "jobs": count})
        if count > room:
            result.notes.append(f"{count} jobs but maxvCpus allows {room} {instance.name} at once: the others wait "
                                "for an instance to free, and may land on one already swept (shown as duplicate)")
        elif nodes is None and room > count:
            result.notes.append(f"{count} of the {room} {instance.name} maxvCpus allows (--nodes for more)")
        self.want = want = {"GPU": instance.gpus, "VCPU": instance.vcpus, "MEMORY": fit.usable_memory_mib(instance)}
        name, self.tags = batch.run_name("sweep")
        registration = batch_probe.definition(batch.describe_definition(aws["batch"], definition),
                                              gpus=instance.gpus, full=self.request.full, tags=self.tags)
        self.overrides = {"resourceRequirements": [{"type": k, "value": str(v)} for k, v in want.items()],
                          "environment": [{"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"}]}
        self.names = [f"{name}-{i}" for i in range(count)]
        self.prepare(queue, name, registration, command="sweep")
        return True

    def submit(self) -> None:
        want, queue = self.want, self.submission.queue
        print(f"gpuready: {self.result.job['name']}: {len(self.names)} jobs of "
              f"{fit.Needs(want['GPU'], want['VCPU'], want['MEMORY'])} (a whole {self.instance.name} each)",
              file=self.progress)
        arn = self.submission.register(self.registration)
        for job_name in self.names:
            self.submission.submit({"jobName": job_name, "jobQueue": queue, "jobDefinition": arn,
                                    "containerOverrides": self.overrides, "tags": self.tags,
                                    "timeout": batch.attempt_timeout(self.request.timeout), **self.share},
                                   f"submit {job_name}")

    def follow(self) -> bool:
        """Follow the run's jobs to their end, or to ``--timeout`` (the rest terminated: their rows say so)."""
        name, poller = self.result.job["name"], batch.Poller(self.aws["poll"])

        def changed(described: dict[str, dict[str, Any]], waited: float) -> None:
            counts: dict[str, int] = {}
            for job in described.values():
                counts[job.get("status")] = counts.get(job.get("status"), 0) + 1
            print(f"gpuready: {name}: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items(), key=str))
                  + f" after {waited:.0f} s", file=self.progress)

        jobs = self.submission.jobs
        self.waiting()  # the jobs' calls bounded from now, as the wait
        self.described = poller.follow([j["id"] for j in jobs], timeout=self.request.timeout, poll=self.poll,
                                       sleep=self.sleep, changed=changed)
        for job in jobs:
            job["done"] = (self.described.get(job["id"]) or {}).get("status") in batch.TERMINAL
        self.submission.cleanup("gpuready sweep: timed out")  # the jobs not finished
        self.result.job["describe_calls"], self.result.job["poll_rounds"] = poller.calls, poller.rounds
        return True

    def collect(self) -> None:
        _rows(self.result, self.submission.jobs, self.described, self.aws["logs"], self.stack, self.instance,
              timeout=self.request.timeout, poll=self.poll, log_wait=self.log_wait, sleep=self.sleep)

    def interrupted(self) -> sweep.SweepResult:
        self.result.notes.append("interrupted: every job terminated")
        ids = {job["name"]: job["id"] for job in self.submission.jobs}
        self.result.rows = [sweep.row(n, None, instance_type=self.instance.name, job={"name": n, "id": ids.get(n)},
                                      problem="interrupted") for n in self.names]
        return self.result


def run(outputs: dict[str, Any], *, nodes: Optional[int] = None, timeout: float = 1800, full: bool = False,
        poll: float = 5.0, log_wait: float = 60.0, region: Optional[str] = None, progress: Optional[TextIO] = None,
        sleep: Callable[[float], None] = time.sleep, team: Optional[str] = None) -> sweep.SweepResult:
    """Sweep ``nodes`` instances (default: as many of the largest type as maxvCpus allows, at most
    :data:`DEFAULT_CAP`) of the stack's GPU queue (``team``'s, with its share identifier, when given)
    (:class:`BatchSweepTarget`); what it waits for is printed to ``progress`` (default: stderr)."""
    return drive(BatchSweepTarget(outputs, Request(timeout=timeout, nodes=nodes, full=full, team=team), poll=poll,
                                  log_wait=log_wait, region=region, progress=progress, sleep=sleep))


def _rows(result: sweep.SweepResult, jobs: list[dict[str, Any]], described: dict[str, dict[str, Any]], logs: Any,
          stack: StackOutputs, instance: catalog.GpuInstanceType, *, timeout: float, poll: float, log_wait: float,
          sleep: Callable[[float], None]) -> None:
    """A row per job of the ended (or timed out) run: each report read from its log stream, duplicates marked."""
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
