"""AWS Batch rules: GPU queues hold only GPU capacity, cancel what cannot start, and every GPU job fits somewhere."""

from __future__ import annotations

from gpuready_components import ecs_fit as fit
from gpuready.resources.aws import BatchComputeEnvironment, BatchJobDefinition, BatchJobQueue, PlacementGroup

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
            cpu = facts(env).unknown_types
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
            minutes = max(int(a["maxTimeSeconds"]) for a in slow) / 60
            yield queue, (f"cancels RUNNABLE jobs only after {minutes:.4g} minutes, more than the {limit} allowed"), \
                f"set maxTimeSeconds to {limit * 60} or less"

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

def _multi_node_problems(queue) -> list[str]:
    """Why ``queue``, a GPU queue (so one with a compute environment in the stack), cannot run a multi-node parallel
    job (empty: it can)."""
    problems = []
    for env in _environments(queue):
        reader = facts(env)
        if reader.resource_type != "EC2":
            problems.append(f"{env.name} is {reader.resource_type} capacity (Batch runs multi-node jobs on EC2 "
                            "on-demand only)")
        if reader.subnet_count > 1:
            problems.append(f"{env.name} spans {reader.subnet_count} subnets (a cluster placement group lives in "
                            "one Availability Zone)")
        if not reader.has_placement_group:
            problems.append(f"{env.name} has no placement group (nodes land far apart)")
        for group in dependencies(env, BatchComputeEnvironment.SUBNET_INPUT, PlacementGroup):
            if facts(group).strategy != "cluster":
                problems.append(f"{env.name}'s placement group {group.name} is {facts(group).strategy}, not cluster")
    return problems


def _check_multi_node_capacity(resources, config):
    definitions = [j for j in of_kind(resources, BatchJobDefinition) if facts(j).multinode]
    if not definitions:
        return
    queues = [q for q in of_kind(resources, BatchJobQueue) if _is_gpu_queue(q)]
    found, unknown = known(queues, lambda q: (q, _multi_node_problems(q)))
    if any(not problems for _, problems in found):
        return
    if unknown:
        raise unknown
    why = "; ".join(f"{q.name}: {', '.join(p)}" for q, p in found) or "the stack has no GPU job queue"
    for job in definitions:
        yield job, (f"is a multi-node parallel job, but no job queue in the stack can run one, so it sits in "
                    f"RUNNABLE forever ({why})"), ("give multi-node jobs their own queue whose compute environment is "
                                                    "EC2 on-demand, in one subnet, with a cluster placement group "
                                                    "(gpuready:multiNode does this)")


multi_node_capacity = stack_rule(
    "multi-node-capacity",
    "A multi-node parallel job definition has a job queue that can run it: every compute environment EC2 "
    "on-demand (not Spot or Fargate), in one subnet, in a cluster placement group.",
    MANDATORY, _check_multi_node_capacity)


def _check_efa_memlock(resources, config):
    def check(job):
        reader = facts(job)
        for container in reader.containers():
            if reader.efa_devices(container) and not reader.memlock_unlimited(container):
                yield job, (f"passes EFA devices ({len(reader.efa_devices(container))}) without an unlimited "
                            "memlock ulimit: libfabric cannot register memory and NCCL falls back to sockets or "
                            "fails"), "add ulimits [{name: memlock, softLimit: -1, hardLimit: -1}] to the container"

    yield from each(of_kind(resources, BatchJobDefinition), check)


efa_memlock = stack_rule(
    "efa-memlock",
    "A Batch job container given EFA devices (/dev/infiniband/uverbsN) may lock unlimited memory.",
    MANDATORY, _check_efa_memlock)

RULES = [gpu_queue_gpu_only, gpu_queue_runnable_timeout, gpu_job_fits, multi_node_capacity, efa_memlock]
