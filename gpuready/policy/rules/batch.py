"""AWS Batch rules: GPU queues hold only GPU capacity, cancel what cannot start, and every GPU job fits somewhere."""

from __future__ import annotations

from gpuready_components import catalog
from gpuready_components.batch_gpu import fit
from gpuready.resources.aws import BatchComputeEnvironment, BatchJobDefinition, BatchJobQueue

from ..gpu import facts, of_kind
from ..rule import MANDATORY, dependencies, each, known, stack_rule


def _environments(queue):
    """A queue's compute environments, from the engine's dependencies: their ARNs are unknown in a preview."""
    return dependencies(queue, BatchJobQueue.ENVIRONMENTS_INPUT, BatchComputeEnvironment)


def _is_gpu_queue(queue) -> bool:
    return any(facts(e).is_gpu for e in _environments(queue))


def _check_gpu_only(resources, config):
    def check(queue):
        if not _is_gpu_queue(queue):
            return
        for env in _environments(queue):
            cpu = [t for t in facts(env).instance_types if catalog.find("aws", t) is None]
            if cpu:
                yield queue, (f"GPU job queue takes compute environment {env.name}, which launches CPU instance "
                              f"types {', '.join(cpu)}: GPU jobs wait behind CPU work and CPU jobs hold GPU "
                              "instances"), "move CPU types to a CPU-only compute environment and queue"

    yield from each(of_kind(resources, BatchJobQueue), check)


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
        actions = facts(queue).runnable_cancels
        if not actions:
            yield queue, ("jobs that no instance can hold, or that wait for capacity that never comes, stay in "
                          "RUNNABLE forever"), (f"add jobStateTimeLimitActions that CANCEL jobs RUNNABLE for more "
                                               f"than {limit} minutes (MISCONFIGURATION:JOB_RESOURCE_REQUIREMENT, "
                                               "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY)")
        slow = [a for a in actions if int(a.get("maxTimeSeconds", 0)) > limit * 60]
        if slow:
            yield queue, (f"cancels RUNNABLE jobs only after {int(max(a['maxTimeSeconds'] for a in slow)) // 60} "
                          f"minutes, more than the {limit} allowed"), f"set maxTimeSeconds to {limit * 60} or less"

    yield from each(of_kind(resources, BatchJobQueue), check)


gpu_queue_runnable_timeout = stack_rule(
    "gpu-queue-runnable-timeout",
    "GPU job queues cancel jobs stuck in RUNNABLE after a configured time.",
    MANDATORY, _check_runnable_timeout,
    {"maxRunnableMinutes": {"type": "integer", "minimum": 10, "maximum": 1440, "default": 240}})


def _check_job_fits(resources, config):
    found, unknown = known(of_kind(resources, BatchComputeEnvironment), lambda env: facts(env).gpu_rows)
    rows = [row for env_rows in found for row in env_rows]

    def check(job):
        for needs in facts(job).needs():
            if needs.gpus <= 0 or fit.holding(needs, rows):
                continue
            if unknown:  # it may fit the compute environment whose instance types are unknown
                raise unknown
            offered = ", ".join(map(fit.offer, fit.largest(rows, 2))) or "no GPU compute environment in this stack"
            yield job, (f"asks for {needs}, which no GPU compute environment in the stack offers (largest: "
                        f"{offered}), so it sits in RUNNABLE forever"), \
                "ask for less, or add an instance type that holds it"

    yield from each(of_kind(resources, BatchJobDefinition), check)


gpu_job_fits = stack_rule(
    "gpu-job-fits",
    "Every GPU job definition fits the largest instance of at least one GPU compute environment in the stack "
    "(GPUs, vCPUs, and memory less the ECS agent's share).",
    MANDATORY, _check_job_fits)

RULES = [gpu_queue_gpu_only, gpu_queue_runnable_timeout, gpu_job_fits]
