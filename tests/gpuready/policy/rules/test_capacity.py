"""The GPU capacity rules (gpuready.policy.rules.capacity) on the EKS reference stack and edits of it: two GPU node
groups (eks-gpu: 4 nodes of 1 GPU, $0.9776/h at most; eks-gpu-4x: 4 nodes of 4 GPUs, $4.6016/h) and a CPU group
(eks-system, 2 nodes always). The whole violation a user reads, and where each rule draws its line."""

from __future__ import annotations

import pytest
from pulumi_policy import proxy

from ..helpers import edited, said, violations
from . import NODE_GROUP, setting

GPUS_FIX = "Fix: lower maxVcpus / max nodes, or raise maxGpus in the policy config"
USD_FIX = "Fix: lower maxVcpus / max nodes, or raise maxUsdPerHour in the policy config"


def test_a_gpu_node_group_without_the_nvidia_driver_is_told_the_ami_to_use(eks):
    report = violations(edited(eks, NODE_GROUP, "eks-gpu", setting("amiType", "AL2023_x86_64_STANDARD")))
    assert said(report, "gpu-nvidia-image") == [(
        "mandatory", "eks-gpu", "eks-gpu: GPU node group on AMI type AL2023_x86_64_STANDARD, which has no NVIDIA "
        "driver. Fix: set amiType AL2023_x86_64_NVIDIA (or BOTTLEROCKET_x86_64_NVIDIA)")]
    assert said(violations(eks), "gpu-nvidia-image") == []  # eks-system's CPUs run the standard AMI


def test_gpu_capacity_kept_running_is_told_how_much_unless_allowed(eks):
    warm = edited(eks, NODE_GROUP, change=setting("minSize", 1, "scalingConfig"))
    message = ("{0}: keeps 1 of its GPU capacity running when idle (scalingConfig.minSize). Fix: scale it to 0, or add "
               "the resource's name to this rule's allow list in the policy config")
    assert said(violations(warm), "gpu-scale-to-zero") == [
        ("mandatory", name, message.format(name)) for name in ("eks-gpu", "eks-gpu-4x")]  # not eks-system's CPUs
    assert said(violations(warm, {"gpu-scale-to-zero": {"allow": ["eks-gpu"]}}), "gpu-scale-to-zero") == [
        ("mandatory", "eks-gpu-4x", message.format("eks-gpu-4x"))]
    assert said(violations(eks), "gpu-scale-to-zero") == []


@pytest.mark.parametrize("caps, said_over", [
    ({"maxGpus": 19, "maxUsdPerHour": 22.31}, [f"stack: can run 20 GPUs at once, more than the cap of 19. {GPUS_FIX}",
                                               "stack: can cost $22.32/h on demand at full scale, more than the cap of "
                                               f"$22.31/h. {USD_FIX}"]),
    ({"maxGpus": 19}, [f"stack: can run 20 GPUs at once, more than the cap of 19. {GPUS_FIX}"]),
    ({"maxUsdPerHour": 1.5}, ["stack: can cost $22.32/h on demand at full scale, more than the cap of $1.50/h. "
                              f"{USD_FIX}"]),
    ({"maxGpus": 20, "maxUsdPerHour": 22.32}, []),  # at the caps (the cost as shown, to the cent)
    # a cap with fractions of a cent: the cost, to the cent, is over it, and the cap is shown as given
    ({"maxUsdPerHour": 22.318}, ["stack: can cost $22.32/h on demand at full scale, more than the cap of $22.318/h. "
                                 f"{USD_FIX}"]),
    ({}, []),
], ids=["both over", "GPUs only", "dollars only", "at the caps", "a cap in fractions of a cent", "no caps"])
def test_capacity_over_a_cap_is_told_with_both_figures(eks, caps, said_over):
    report = violations(eks, {"gpu-capacity-caps": caps} if caps else None)
    assert said(report, "gpu-capacity-caps") == [("mandatory", "stack", m) for m in said_over]


def test_capacity_of_unknown_size_only_adds(eks):
    """In a preview, a pool whose maximum size is unknown holds at least nothing: the known capacity over a cap is a
    violation ("at least"), under it the rule cannot decide."""
    unknown = edited(eks, NODE_GROUP, "eks-gpu-4x", setting("maxSize", proxy.UNKNOWN_STRING_VALUE, "scalingConfig"))
    over = violations(unknown, {"gpu-capacity-caps": {"maxGpus": 3, "maxUsdPerHour": 3}}, decided=False)
    assert said(over, "gpu-capacity-caps") == [
        ("mandatory", "stack", f"stack: can run at least 4 GPUs at once, more than the cap of 3. {GPUS_FIX}"),
        ("mandatory", "stack", "stack: can cost at least $3.91/h on demand at full scale, more than the cap of "
                               f"$3.00/h. {USD_FIX}")]
    assert "gpu-capacity-caps" not in over.undecided
    for caps in ({"maxGpus": 4}, {"maxUsdPerHour": 4}):
        under = violations(unknown, {"gpu-capacity-caps": caps}, decided=False)
        assert said(under, "gpu-capacity-caps") == []
        assert under.undecided["gpu-capacity-caps"].startswith("eks-gpu-4x: ")


def test_gpu_capacity_without_a_cost_allocation_tag_is_told_which(eks):
    untagged = edited(eks, NODE_GROUP, change=setting("tags", {"gpuready:component": "eks"}))
    assert said(violations(untagged), "cost-allocation-tags") == [(
        "advisory", name, f"{name}: GPU capacity without the cost-allocation tags team, cost-center. Fix: add tags "
        "team, cost-center (gpuready:tags in the stack config)") for name in ("eks-gpu", "eks-gpu-4x")]
    assert said(violations(eks, {"cost-allocation-tags": {"requiredTags": ["team", "owner"]}}),
                "cost-allocation-tags") == [(
        "advisory", name, f"{name}: GPU capacity without the cost-allocation tags owner. Fix: add tags owner "
        "(gpuready:tags in the stack config)") for name in ("eks-gpu", "eks-gpu-4x")]
