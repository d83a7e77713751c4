"""The nodes of AWS Batch multi-node parallel jobs, which moto does not model: a small fake for exactly that.

moto's Batch (use_docker off, see moto_batch.py) registers a ``multinode`` job definition, lists, tags and
terminates its jobs, and describes them with the definition's ``nodeProperties``. But DescribeJobDefinitions leaves
those ``nodeProperties`` out, and moto runs such a job as one job that succeeds at once: it ignores SubmitJob's
``nodeOverrides``, creates no node jobs (``jobId#0``...), answers DescribeJobs for none of them, and writes no log
stream per node. :class:`FakeNodes`, patched into the moto server
that runs in the test process, adds only that, and leaves every other call and field to moto:

- DescribeJobDefinitions: a ``multinode`` definition's ``nodeProperties``, as registered.
- SubmitJob of a multinode definition: the number of nodes is ``nodeOverrides.numNodes`` (else the definition's);
  moto keeps the job (its queue, definition, tags, ListJobs, TerminateJob), which is held instead of succeeding.
- Each node follows its :class:`Node` script, one step per DescribeJobs call naming the job or its nodes (the last
  status is kept). The job is RUNNABLE or STARTING while its main node is, RUNNING while any node runs, and ends
  (moto's own ``_mark_stopped``) once every node has ended: SUCCEEDED when the main node did, else FAILED. Once
  TerminateJob stopped it, the job and every node not yet ended are FAILED with its reason, as Batch does.
- DescribeJobs answers ``jobId#i`` ids the way Batch describes a node: ``jobId``, ``jobQueue``, ``status``,
  ``statusReason``, ``nodeDetails`` (``nodeIndex``, ``isMainNode``), ``container`` (the node range's
  ``resourceRequirements`` and ``logConfiguration``, ``containerInstanceArn`` once placed, ``logStreamName``,
  ``exitCode`` once ended).
- A node's log lines are written into moto's CloudWatch Logs (its logs backend) when the node ends, so the client
  reads them with GetLogEvents, for real.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Optional

from moto.batch.models import BatchBackend, JobDefinition
from moto.batch.responses import BatchResponse
from moto.batch_simple.models import BatchSimpleBackend

ENDED = ("SUCCEEDED", "FAILED")


@dataclass
class Node:
    """What one node does: its statuses, one per DescribeJobs call (the last kept), and what it prints."""

    statuses: tuple[str, ...] = ("STARTING", "RUNNING", "SUCCEEDED")
    lines: tuple[str, ...] = ()
    exit_code: int = 0
    reason: str = ""
    instance: Optional[str] = None
    """The ECS container instance it runs on, once started (default: one of its own, as Batch places nodes)."""


@dataclass
class Gang:
    job: Any
    """moto's Job."""
    nodes: int
    scripts: list[Node]
    main: int
    container: dict[str, Any]
    step: int = -1
    status: dict[int, str] = field(default_factory=dict)
    streams: dict[int, str] = field(default_factory=dict)
    reasons: dict[int, str] = field(default_factory=dict)


class FakeNodes:
    """Installs the fake into moto (see the module); ``scripts(nodes)`` gives each node's :class:`Node`
    (default: every node succeeds without output). ``gangs`` holds each multi-node job, by id."""

    def __init__(self, monkeypatch) -> None:
        self.scripts = lambda nodes: [Node() for _ in range(nodes)]
        self.gangs: dict[str, Gang] = {}
        self.submitted: list[dict[str, Any]] = []
        """The nodeOverrides of each SubmitJob, in order."""
        self.lock = threading.Lock()
        fake = self
        mark, submit, describe = (BatchSimpleBackend._mark_job_as_finished, BatchResponse.submitjob,
                                  BatchBackend.describe_jobs)

        def hold(backend, include_start_attempt, job):
            if job.job_definition.type != "multinode":
                return mark(backend, include_start_attempt, job)
            backend.backend._jobs[job.job_id] = job
            job.status = "RUNNABLE"

        def submitjob(response):
            overrides = response._get_param("nodeOverrides") or {}
            answer = submit(response)
            job = response.batch_backend.backend._jobs.get(json.loads(answer)["jobId"])
            fake.submitted.append(overrides)
            if job is not None and job.job_definition.type == "multinode":
                fake._gang(job, overrides)
            return answer

        def describe_jobs(backend, jobs):
            plain = [j for j in jobs or [] if "#" not in j]
            with fake.lock:
                for gang in fake.gangs.values():
                    if any(j.split("#")[0] == gang.job.job_id for j in jobs or []):
                        fake._advance(gang)
            found = describe(backend, plain) if plain or not jobs else []
            return found + [fake._describe(j) for j in jobs or [] if "#" in j and fake._known(j)]

        def describe_definition(definition):
            described = describe_definitions(definition)
            if definition.type == "multinode" and definition.node_properties is not None:
                described["nodeProperties"] = definition.node_properties
            return described

        describe_definitions = JobDefinition.describe
        monkeypatch.setattr(JobDefinition, "describe", describe_definition)
        monkeypatch.setattr(BatchSimpleBackend, "_mark_job_as_finished", hold)
        monkeypatch.setattr(BatchResponse, "submitjob", submitjob)
        monkeypatch.setattr(BatchBackend, "describe_jobs", describe_jobs)

    def _gang(self, job: Any, overrides: dict[str, Any]) -> None:
        properties = job.job_definition.node_properties
        nodes = int(overrides.get("numNodes") or properties["numNodes"])
        scripts = self.scripts(nodes)
        assert len(scripts) == nodes, f"the test scripted {len(scripts)} nodes for a job of {nodes}"
        self.gangs[job.job_id] = Gang(job, nodes, scripts, int(properties.get("mainNode") or 0),
                                      properties["nodeRangeProperties"][0].get("container") or {})

    def _advance(self, gang: Gang) -> None:
        """One step of every node; the job's status from its nodes'."""
        job = gang.job
        if job.job_stopped:
            return
        gang.step += 1
        for index, script in enumerate(gang.scripts):
            before = gang.status.get(index)
            if before in ENDED:
                continue
            now = "FAILED" if job.stop else script.statuses[min(gang.step, len(script.statuses) - 1)]
            gang.status[index] = now
            if now in ("RUNNING", *ENDED) and index not in gang.streams:
                gang.streams[index] = f"{job.job_definition.name}/default/{uuid.uuid4().hex}"
            gang.reasons[index] = job.job_stopped_reason if job.stop else script.reason
            if now in ENDED:
                self._write_logs(gang, index, script)
        main = gang.status[gang.main]
        if all(s in ENDED for s in gang.status.values()):
            job._mark_stopped(success=main == "SUCCEEDED" and not job.stop)
        elif main in ("SUBMITTED", "PENDING", "RUNNABLE", "STARTING"):
            job.status = main if main in ("RUNNABLE", "STARTING") else "RUNNABLE"
        else:
            job.status = "RUNNING"

    def _write_logs(self, gang: Gang, index: int, script: Node) -> None:
        if not script.lines:
            return
        logs = gang.job._log_backend
        group = self.log_group(gang)
        logs.create_log_stream(group, gang.streams[index])
        now = int(time.time() * 1000)
        logs.put_log_events(group, gang.streams[index], [{"timestamp": now, "message": line}
                                                        for line in script.lines])

    @staticmethod
    def log_group(gang: Gang) -> str:
        return ((gang.container.get("logConfiguration") or {}).get("options") or {}).get("awslogs-group") or \
            "/aws/batch/job"

    def _known(self, node_id: str) -> bool:
        parent, _, index = node_id.partition("#")
        gang = self.gangs.get(parent)
        return gang is not None and index.isdigit() and int(index) in gang.status

    def _describe(self, node_id: str) -> dict[str, Any]:
        parent, _, index_text = node_id.partition("#")
        gang, index = self.gangs[parent], int(index_text)
        status = gang.status[index]
        container = {k: gang.container[k] for k in ("image", "resourceRequirements", "logConfiguration")
                     if k in gang.container}
        if index in gang.streams:
            container["logStreamName"] = gang.streams[index]
        if status not in ("SUBMITTED", "PENDING", "RUNNABLE"):
            container["containerInstanceArn"] = "arn:aws:ecs:us-east-1:123456789012:container-instance/gpu-multi-node/" \
                + (gang.scripts[index].instance or f"{gang.job.job_id[:8]}{index:024x}")
        if status in ENDED:
            container["exitCode"] = gang.scripts[index].exit_code if status == "SUCCEEDED" or not gang.job.stop \
                else 137
        detail = {"jobId": node_id, "jobArn": f"{gang.job.arn}#{index}", "jobName": gang.job.job_name,
                  "jobQueue": gang.job.job_queue.arn, "status": status, "jobDefinition": gang.job.job_definition.arn,
                  "nodeDetails": {"nodeIndex": index, "isMainNode": index == gang.main}, "container": container}
        if gang.reasons.get(index):
            detail["statusReason"] = gang.reasons[index]
        return detail

    def node_status(self, job_id: str) -> dict[int, str]:
        """Each node's status now, by index."""
        return dict(self.gangs[job_id].status)


def one(fake: FakeNodes) -> Optional[Gang]:
    """The only multi-node job submitted, or None."""
    return next(iter(fake.gangs.values()), None)
