"""Scale-from-zero rule: an EKS GPU node group at min size 0 must be one the stack's autoscaler can add a node to
for a GPU pod (node-template tags, one GPU count per group), or the stack says that it relies on another one."""

from __future__ import annotations

from gpuready.resources.scaling import from_policy, scale_from_zero
from gpuready.resources.aws import EksCluster

from ..gpu import of_kind
from ..rule import MANDATORY, stack_rule


def _check(resources, config):
    result = scale_from_zero(from_policy(resources))
    if result is None:
        return
    if result.scaler == "none":
        # An existing cluster may run its own autoscaler (gpuready plan warns); a new one has none but ours.
        if of_kind(resources, EksCluster):
            yield None, ("GPU node groups at minSize 0 in a new cluster without an autoscaler: GPU pods stay "
                         "Pending forever"), "set gpuready:autoscaler cluster-autoscaler, or gpuready:minSize 1"
        return
    for problem in result.problems:
        yield None, problem, "let EksGpuCluster build the node groups (one per GPU count, with template tags)"


gpu_scale_from_zero = stack_rule(
    "gpu-scale-from-zero",
    "EKS GPU node groups at minSize 0 can scale up for a GPU pod: the stack's cluster-autoscaler sees each empty "
    "group's GPUs, labels and taints through node-template tags (one GPU count per group), and a pod asking for 1 "
    "GPU or a whole node fits one of them. A new cluster must have an autoscaler.",
    MANDATORY, _check)

RULES = [gpu_scale_from_zero]
