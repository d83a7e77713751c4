"""The job queue rules (gpuready.policy.rules.queues) on programs that make Kueue queues over EKS GPU node groups:
each rule silent on queues that work and firing on the mistake it guards against, on a full render and on a first
preview's (where what the cloud computes is unknown)."""

from __future__ import annotations

import pytest

from gpuready.plan.render import run
from gpuready.policy.rules.queues import RULES
from tests.gpuready.queue_programs import FLAVORS, TEAMS, overcommitted, program, without

from .helpers import broken, violations

QUEUE_RULES = {r.name for r in RULES}
CASES = {
    "two teams within capacity": ({}, None, set()),
    "GPU flavor without nvidia.com/gpu": ({"gpu_covered": False}, None, {
        ("queue-covers-gpu", "research"), ("queue-covers-gpu", "inference"),
        # with no GPU quota anywhere, no queue reaches either pool either
        ("gpu-pool-queued", "gpu-l4"), ("gpu-pool-queued", "gpu-l40s")}),
    "LocalQueue to a missing ClusterQueue": ({"local_queues": {"research": "research", "inference": "inferense"}},
                                             None, {("local-queue-target", "inference-queue")}),
    "LocalQueue to a ClusterQueue made elsewhere": (
        {"local_queues": {"research": "research", "inference": "inferense"}},
        {"local-queue-target": {"externalClusterQueues": ["inferense"]}}, set()),
    "a pool no queue reaches": (without("gpu-l40s"), None, {("gpu-pool-queued", "gpu-l40s")}),
    "a pool no queue reaches, allow-listed": (without("gpu-l40s"), {"gpu-pool-queued": {"allow": ["gpu-l40s"]}},
                                              set()),
    "no queues at all": ({"teams": {}, "local_queues": {}}, None, set()),
    "quotas above capacity": (overcommitted(extra=1), None, {("queue-quota-within-capacity", "gpu-l4")}),
    "quotas above capacity, declared on the cohort": (overcommitted(extra=1, declared=True), None, set()),
    "quota at capacity on one flavor, above on the other": (
        {"teams": {**TEAMS, "inference": {**TEAMS["inference"], "gpu-l40s": (5, None, None)}}}, None,
        {("queue-quota-within-capacity", "gpu-l40s")}),
    "flavors within their pools, the total above the pools they share": (
        {"flavors": {**FLAVORS, "any-gpu": {"nvidia.com/gpu.present": "true"}},
         "teams": {**TEAMS, "batch-jobs": {"any-gpu": (4, None, None)}}}, None,
        {("queue-quota-within-capacity", "stack")}),
}
"""Case -> (program changes, policy config, (rule, resource) of each queue rule's violation expected)."""


@pytest.mark.parametrize("preview", [False, True], ids=["up", "preview"])
@pytest.mark.parametrize("case", CASES)
def test_each_queue_rule_fires_on_its_mistake_only(case, preview, tmp_path):
    changes, config, expected = CASES[case]
    rendering = run(program(**changes), project="queues", stack="test", config={"aws:region": "us-east-1"},
                    preview=preview)
    report = violations(rendering, config, tmp_path)
    found = {(rule, name) for rule, level, name in broken(report) if rule in QUEUE_RULES}
    assert found == expected
    assert all(level == "mandatory" for rule, level, _ in broken(report) if rule in QUEUE_RULES)


def test_messages_name_the_numbers_and_the_fix(tmp_path):
    report = violations(run(program(**overcommitted(extra=1)), project="queues", stack="test",
                            config={"aws:region": "us-east-1"}), None, tmp_path)
    (message,) = [v.message for v in report.violations if v.policy == "queue-quota-within-capacity"]
    assert message.startswith("gpu-l4: the ClusterQueues give 9 GPUs of quota on flavor gpu-l4 (inference, research), "
                              "but the pools it selects (gpu-l4) reach 8 at full scale")
    assert 'gpuready.io/overcommit: "true" on the Cohort' in message
