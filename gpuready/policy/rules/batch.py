"""AWS Batch rules: GPU queues hold only GPU capacity, cancel what cannot start, and every GPU job fits somewhere."""

from __future__ import annotations

import json
from typing import Any, Iterator, Mapping, Optional

from components import catalog
from components.batch_gpu import fit

from ..gpu import BATCH_CE, BATCH_JOB, BATCH_QUEUE, gpu_rows, instance_types, is_gpu_capacity
from ..rule import MANDATORY, dependencies, each, known, of_type, stack_rule


def _environments(queue):
    """A queue's compute environments, from the engine's dependencies: their ARNs are unknown in a preview."""
    return dependencies(queue, "computeEnvironmentOrders", BATCH_CE)


def _is_gpu_queue(queue) -> bool:
    return any(is_gpu_capacity(e.resource_type, e.props) for e in _environments(queue))


def _check_gpu_only(resources, config):
    def check(queue):
        if not _is_gpu_queue(queue):
            return
        for env in _environments(queue):
            cpu = [t for t in instance_types(BATCH_CE, env.props) if catalog.find("aws", t) is None]
            if cpu:
                yield queue, (f"GPU job queue takes compute environment {env.name}, which launches CPU instance "
                              f"types {', '.join(cpu)}: GPU jobs wait behind CPU work and CPU jobs hold GPU "
                              "instances"), "move CPU types to a CPU-only compute environment and queue"

    yield from each(of_type(resources, BATCH_QUEUE), check)


gpu_queue_gpu_only = stack_rule(
    "gpu-queue-gpu-only",
    "AWS Batch job queues with GPU compute environments hold only GPU compute environments (AWS's advice: CPU "
    "and GPU work in separate queues).",
    MANDATORY, _check_gpu_only)


def _check_runnable_timeout(resources, config):
    limit = int(config.get("maxRunnableMinutes", 240))

    def check(queue):
        if not _is_gpu_queue(queue):
            return
        actions = [a for a in queue.props.get("jobStateTimeLimitActions") or []
                   if a.get("state") == "RUNNABLE" and a.get("action") == "CANCEL"]
        if not actions:
            yield queue, ("jobs that no instance can hold, or that wait for capacity that never comes, stay in "
                          "RUNNABLE forever"), (f"add jobStateTimeLimitActions that CANCEL jobs RUNNABLE for more "
                                               f"than {limit} minutes (MISCONFIGURATION:JOB_RESOURCE_REQUIREMENT, "
                                               "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY)")
        slow = [a for a in actions if int(a.get("maxTimeSeconds", 0)) > limit * 60]
        if slow:
            yield queue, (f"cancels RUNNABLE jobs only after {int(max(a['maxTimeSeconds'] for a in slow)) // 60} "
                          f"minutes, more than the {limit} allowed"), f"set maxTimeSeconds to {limit * 60} or less"

    yield from each(of_type(resources, BATCH_QUEUE), check)


gpu_queue_runnable_timeout = stack_rule(
    "gpu-queue-runnable-timeout",
    "GPU job queues cancel jobs stuck in RUNNABLE after a configured time.",
    MANDATORY, _check_runnable_timeout,
    {"maxRunnableMinutes": {"type": "integer", "minimum": 10, "maximum": 1440, "default": 240}})


def _containers(props: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    def parse(value: Any) -> Optional[Mapping[str, Any]]:
        if isinstance(value, str):
            try:
                return json.loads(value)
            except json.JSONDecodeError:
                return None
        return value if isinstance(value, Mapping) else None

    container = parse(props.get("containerProperties"))
    if container:
        yield container
    nodes = parse(props.get("nodeProperties")) or {}
    for node_range in nodes.get("nodeRangeProperties") or []:
        if node_range.get("container"):
            yield node_range["container"]


def _needs(container: Mapping[str, Any]) -> fit.Needs:
    needs = {r.get("type"): r.get("value") for r in container.get("resourceRequirements") or []}
    out = []
    for key in ("GPU", "VCPU", "MEMORY"):
        try:
            out.append(int(float(needs.get(key) or 0)))
        except (TypeError, ValueError):
            out.append(0)
    return fit.Needs(*out)


def _check_job_fits(resources, config):
    found, unknown = known(of_type(resources, BATCH_CE), lambda env: gpu_rows(BATCH_CE, env.props))
    rows = [row for env_rows in found for row in env_rows]

    def check(job):
        for container in _containers(job.props):
            needs = _needs(container)
            if needs.gpus <= 0 or fit.holding(needs, rows):
                continue
            if unknown:  # it may fit the compute environment whose instance types are unknown
                raise unknown
            offered = ", ".join(map(fit.offer, fit.largest(rows, 2))) or "no GPU compute environment in this stack"
            yield job, (f"asks for {needs}, which no GPU compute environment in the stack offers (largest: "
                        f"{offered}), so it sits in RUNNABLE forever"), \
                "ask for less, or add an instance type that holds it"

    yield from each(of_type(resources, BATCH_JOB), check)


gpu_job_fits = stack_rule(
    "gpu-job-fits",
    "Every GPU job definition fits the largest instance of at least one GPU compute environment in the stack "
    "(GPUs, vCPUs, and memory less the ECS agent's share).",
    MANDATORY, _check_job_fits)

RULES = [gpu_queue_gpu_only, gpu_queue_runnable_timeout, gpu_job_fits]
