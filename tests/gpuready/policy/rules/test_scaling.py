"""The scale-from-zero rule (gpuready.policy.rules.scaling) on the EKS reference stack and edits of it: the whole
violation a user reads, where the stack relies on an autoscaler it does not have, or has one that cannot add a node."""

from __future__ import annotations

from ..helpers import edited, said, violations
from . import NODE_GROUP, RELEASE, setting

RULE = "gpu-scale-from-zero"
TAG = "aws:autoscaling/tag:Tag"
FIX = "let EksGpuCluster build the node groups (one per GPU count, with template tags)"


def _no_autoscaler(rendering):
    return edited(rendering, RELEASE, "eks-cluster-autoscaler")


def test_the_reference_stack_scales_from_zero(eks):
    assert said(violations(eks), RULE) == []


def test_a_new_cluster_without_an_autoscaler_is_told_its_gpu_pods_stay_pending(eks):
    assert said(violations(_no_autoscaler(eks)), RULE) == [(
        "mandatory", "stack", "stack: GPU node groups at minSize 0 in a new cluster without an autoscaler: GPU pods "
        "stay Pending forever. Fix: set gpuready:autoscaler cluster-autoscaler, or gpuready:minSize 1")]


def test_an_existing_cluster_may_run_its_own_autoscaler(eks):
    existing = edited(_no_autoscaler(eks), "aws:eks/cluster:Cluster")
    assert said(violations(existing), RULE) == []


def test_without_an_autoscaler_groups_that_keep_a_node_need_none(eks):
    warm = edited(_no_autoscaler(eks), NODE_GROUP, change=setting("minSize", 1, "scalingConfig"))
    assert said(violations(warm), RULE) == []


def test_each_problem_of_the_autoscalers_view_is_told_with_the_fix(eks):
    """Without the template tag of a label its nodes carry, cluster-autoscaler does not know the label at zero nodes:
    said of each group, each a violation of its own (the smoke pod does not select that label, so it still fits)."""
    def untagged(inputs):
        return None if inputs["tag"]["key"].endswith("/label/gpuready.io/gpu-pool") else inputs

    report = violations(edited(eks, TAG, change=untagged))
    assert said(report, RULE) == [(
        "mandatory", "stack", f"stack: {group}: label gpuready.io/gpu-pool={pool} has no template tag "
        f"k8s.io/cluster-autoscaler/node-template/label/gpuready.io/gpu-pool, so cluster-autoscaler does not know it "
        f"at zero nodes. Fix: {FIX}") for group, pool in (("eks-gpu", "gpu"), ("eks-gpu-4x", "gpu-4x"))]
