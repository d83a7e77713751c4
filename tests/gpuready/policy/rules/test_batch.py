"""The AWS Batch rules (gpuready.policy.rules.batch) on the Batch reference stacks and edits of them: the whole
violation a user reads (the queue or job definition, the instance types and figures, the fix), and where each rule
draws its line (GPU queues only, the configured limit, jobs asking for no GPU, one queue that can run a gang)."""

from __future__ import annotations

import json

import pytest
from pulumi_policy import proxy

from ..helpers import edited, render_stack, said, violations
from . import CE, JOBDEF, QUEUE

GANG = "gpu-gpu-multi-node"
"""The multi-node job definition of aws-batch-multinode (queue gpu-multi-node on compute environment gpu-multi-node;
its other queue, gpu-gpu, takes gpu-gpu-on-demand, which spans 2 subnets without a placement group)."""


@pytest.fixture(scope="module")
def batch():
    """aws-batch: compute environment gpu-gpu-on-demand (g6 and g5 types up to g6.12xlarge, 4 GPUs) behind the
    queues gpu-gpu and gpu-gpu-teams; job definition gpu-gpu-smoke asks for 1 GPU."""
    return render_stack("aws-batch")


@pytest.fixture(scope="module")
def multinode():
    return render_stack("aws-batch-multinode")


def _resources(change):
    def edit(inputs):
        change(inputs["computeResources"])
        return inputs
    return edit


def _types(*types):
    return _resources(lambda resources: resources.__setitem__("instanceTypes", list(types)))


def test_a_gpu_queue_taking_cpu_types_is_told_which(batch):
    mixed = edited(batch, CE, change=_types("g6.xlarge", "m6i.large", "c7i.large"))
    assert said(violations(mixed), "gpu-queue-gpu-only") == [(
        "mandatory", queue, f"{queue}: GPU job queue takes compute environment gpu-gpu-on-demand, which launches CPU "
        "instance types m6i.large, c7i.large: GPU jobs wait behind CPU work and CPU jobs hold GPU instances. Fix: "
        "move CPU types to a CPU-only compute environment and queue") for queue in ("gpu-gpu", "gpu-gpu-teams")]
    cpu_only = edited(batch, CE, change=_types("m6i.large"))
    assert said(violations(cpu_only), "gpu-queue-gpu-only") == []


def _actions(*limits):
    def change(inputs):
        inputs["jobStateTimeLimitActions"] = [
            {"state": state, "maxTimeSeconds": seconds, "reason": "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY",
             "action": action} for state, seconds, action in limits]
        return inputs
    return change


NEVER_CANCELLED = ("jobs that no instance can hold, or that wait for capacity that never comes, stay in RUNNABLE "
                   "forever. Fix: add jobStateTimeLimitActions that CANCEL jobs RUNNABLE for more than {0} minutes "
                   "(MISCONFIGURATION:JOB_RESOURCE_REQUIREMENT, CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY)")


def test_a_gpu_queue_that_never_cancels_runnable_jobs_is_told_the_limit(batch):
    for limits in ((), (("RUNNABLE", 600, "TERMINATE"),)):  # only a CANCEL of RUNNABLE jobs counts
        report = violations(edited(batch, QUEUE, "gpu-gpu", _actions(*limits)))
        assert said(report, "gpu-queue-runnable-timeout") == [
            ("mandatory", "gpu-gpu", "gpu-gpu: " + NEVER_CANCELLED.format(240))]
    strict = violations(edited(batch, QUEUE, "gpu-gpu", _actions()), {
        "gpu-queue-runnable-timeout": {"maxRunnableMinutes": 60}})
    assert said(strict, "gpu-queue-runnable-timeout") == [
        ("mandatory", "gpu-gpu", "gpu-gpu: " + NEVER_CANCELLED.format(60))]
    cpu = edited(edited(batch, QUEUE, "gpu-gpu", _actions()), CE, change=_types("m6i.large"))
    assert said(violations(cpu), "gpu-queue-runnable-timeout") == []


def test_a_gpu_queue_cancelling_later_than_allowed_is_told_its_slowest_action(batch):
    """The reference queues cancel after 10 and 60 minutes."""
    def limited(minutes):
        return said(violations(batch, {"gpu-queue-runnable-timeout": {"maxRunnableMinutes": minutes}}),
                    "gpu-queue-runnable-timeout")

    assert limited(60) == [] and limited(240) == []
    assert limited(59) == [(
        "mandatory", queue, f"{queue}: cancels RUNNABLE jobs only after 60 minutes, more than the 59 allowed. Fix: "
        "set maxTimeSeconds to 3540 or less") for queue in ("gpu-gpu", "gpu-gpu-teams")]
    slow = edited(batch, QUEUE, "gpu-gpu", _actions(("RUNNABLE", 600, "CANCEL"), ("RUNNABLE", 18000, "CANCEL"),
                                                    ("RUNNABLE", 15000, "CANCEL")))
    assert said(violations(slow), "gpu-queue-runnable-timeout") == [(
        "mandatory", "gpu-gpu", "gpu-gpu: cancels RUNNABLE jobs only after 300 minutes, more than the 240 allowed. "
        "Fix: set maxTimeSeconds to 14400 or less")]


def _asks(gpus, vcpus=2):
    def change(inputs):
        container = json.loads(inputs["containerProperties"])
        container["resourceRequirements"] = [
            *([{"type": "GPU", "value": str(gpus)}] if gpus else []), {"type": "VCPU", "value": str(vcpus)},
            {"type": "MEMORY", "value": "8192"}]
        inputs["containerProperties"] = json.dumps(container)
        return inputs
    return change


def test_a_gpu_job_no_instance_holds_is_told_the_largest_offers(batch):
    report = violations(edited(batch, JOBDEF, "gpu-gpu-smoke", _asks(16)))
    assert said(report, "gpu-job-fits") == [(
        "mandatory", "gpu-gpu-smoke", "gpu-gpu-smoke: asks for 16 GPU, 2 vCPU, 8192 MiB, which no GPU compute "
        "environment in the stack offers (largest: g6.12xlarge (4 GPU, 48 vCPU, 186777 MiB usable), g6.2xlarge (1 "
        "GPU, 8 vCPU, 31129 MiB usable)), so it sits in RUNNABLE forever. Fix: ask for less, or add an instance type "
        "that holds it")]
    assert said(violations(edited(batch, JOBDEF, "gpu-gpu-smoke", _asks(4))), "gpu-job-fits") == []
    # a job asking for no GPU is not this rule's to judge, however big
    assert said(violations(edited(batch, JOBDEF, "gpu-gpu-smoke", _asks(0, 4096))), "gpu-job-fits") == []
    without = edited(edited(batch, JOBDEF, "gpu-gpu-smoke", _asks(1)), CE, change=_types("m6i.large"))
    assert said(violations(without), "gpu-job-fits")[0][2].startswith(
        "gpu-gpu-smoke: asks for 1 GPU, 2 vCPU, 8192 MiB, which no GPU compute environment in the stack offers "
        "(largest: no GPU compute environment in this stack), so")


def test_a_gpu_job_that_may_fit_unknown_instance_types_is_undecided(batch):
    unknown = edited(batch, CE, change=_types(proxy.UNKNOWN_STRING_VALUE))
    big = violations(edited(unknown, JOBDEF, "gpu-gpu-smoke", _asks(16)), decided=False)
    assert said(big, "gpu-job-fits") == []
    assert big.undecided["gpu-job-fits"].startswith("gpu-gpu-smoke: gpu-gpu-on-demand: ")
    cpu = violations(edited(unknown, JOBDEF, "gpu-gpu-smoke", _asks(0)), decided=False)
    assert "gpu-job-fits" not in cpu.undecided


def _why_not(*queues):
    return (f"{GANG}: is a multi-node parallel job, but no job queue in the stack can run one, so it sits in RUNNABLE "
            f"forever ({'; '.join(queues)}). Fix: give multi-node jobs their own queue whose compute environment is "
            f"EC2 on-demand, in one subnet, with a cluster placement group (gpuready:multiNode does this)")


SPREAD_OUT = ("gpu-gpu: gpu-gpu-on-demand spans 2 subnets (a cluster placement group lives in one Availability Zone), "
              "gpu-gpu-on-demand has no placement group (nodes land far apart)")


def test_a_gang_no_queue_can_run_is_told_why_of_each_queue(multinode):
    assert said(violations(multinode), "multi-node-capacity") == []

    def spot_far(resources):
        resources["type"] = "SPOT"
        resources["subnets"] = ["subnet-aaaaaaaa", "subnet-bbbbbbbb"]
    report = violations(edited(multinode, CE, "gpu-multi-node", _resources(spot_far)))
    assert said(report, "multi-node-capacity") == [("mandatory", GANG, _why_not(
        SPREAD_OUT, "gpu-multi-node: gpu-multi-node is SPOT capacity (Batch runs multi-node jobs on EC2 on-demand "
                    "only), gpu-multi-node spans 2 subnets (a cluster placement group lives in one Availability Zone)"
    ))]
    spread = edited(multinode, "aws:ec2/placementGroup:PlacementGroup", change=lambda i: {**i, "strategy": "spread"})
    assert said(violations(spread), "multi-node-capacity") == [("mandatory", GANG, _why_not(
        SPREAD_OUT, "gpu-multi-node: gpu-multi-node's placement group gpu-multi-node is spread, not cluster"))]


def test_a_gang_in_a_stack_without_gpu_queues_is_told_so(multinode):
    cpu = edited(multinode, CE, change=_types("m6i.large"))
    assert said(violations(cpu), "multi-node-capacity") == [
        ("mandatory", GANG, _why_not("the stack has no GPU job queue"))]
    single = edited(cpu, JOBDEF, GANG, lambda inputs: {**inputs, "type": "container"})
    assert said(violations(single), "multi-node-capacity") == []


def test_a_gang_whose_only_able_queue_is_unknown_is_undecided(multinode):
    unknown = edited(multinode, CE, "gpu-multi-node", _resources(
        lambda resources: resources.__setitem__("type", proxy.UNKNOWN_STRING_VALUE)))
    report = violations(unknown, decided=False)
    assert said(report, "multi-node-capacity") == []
    assert report.undecided["multi-node-capacity"].startswith("gpu-multi-node: ")


def _ulimits(ulimits):
    def change(inputs):
        nodes = json.loads(inputs["nodeProperties"])
        for node_range in nodes["nodeRangeProperties"]:
            node_range["container"]["ulimits"] = ulimits
        inputs["nodeProperties"] = json.dumps(nodes)
        return inputs
    return change


def test_efa_devices_without_unlimited_memlock_are_told_how_many(multinode):
    assert said(violations(multinode), "efa-memlock") == []
    for ulimits in ([], [{"name": "memlock", "softLimit": 65536, "hardLimit": 65536}]):
        report = violations(edited(multinode, JOBDEF, GANG, _ulimits(ulimits)))
        assert said(report, "efa-memlock") == [(
            "mandatory", GANG, f"{GANG}: passes EFA devices (32) without an unlimited memlock ulimit: libfabric cannot "
            "register memory and NCCL falls back to sockets or fails. Fix: add ulimits [{name: memlock, softLimit: "
            "-1, hardLimit: -1}] to the container")]


def test_a_limit_passed_by_seconds_is_told_in_minutes_and_their_fraction(batch):
    late = edited(batch, QUEUE, "gpu-gpu", _actions(("RUNNABLE", 3630, "CANCEL")))
    assert said(violations(late, {"gpu-queue-runnable-timeout": {"maxRunnableMinutes": 60}}),
                "gpu-queue-runnable-timeout") == [(
        "mandatory", "gpu-gpu", "gpu-gpu: cancels RUNNABLE jobs only after 60.5 minutes, more than the 60 allowed. "
        "Fix: set maxTimeSeconds to 3600 or less")]


def test_each_node_range_of_a_gang_must_fit_not_only_the_first(multinode):
    """Both compute environments offer p5.48xlarge: it is quoted once."""
    def ranges(inputs):
        nodes = json.loads(inputs["nodeProperties"])
        first = nodes["nodeRangeProperties"][0]
        first["targetNodes"] = "0"
        second = json.loads(json.dumps(first))
        second["targetNodes"] = "1:"
        second["container"]["resourceRequirements"][0]["value"] = "16"
        nodes["nodeRangeProperties"].append(second)
        inputs["nodeProperties"] = json.dumps(nodes)
        return inputs
    assert said(violations(edited(multinode, JOBDEF, GANG, ranges)), "gpu-job-fits") == [(
        "mandatory", GANG, f"{GANG}: asks for 16 GPU, 192 vCPU, 1992294 MiB, which no GPU compute environment in the "
        "stack offers (largest: p5.48xlarge (8 GPU, 192 vCPU, 1992294 MiB usable)), so it sits in RUNNABLE forever. "
        "Fix: ask for less, or add an instance type that holds it")]
