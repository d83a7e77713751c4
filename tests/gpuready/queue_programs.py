"""Small Pulumi programs that make Kueue queues over EKS GPU node groups, and a Batch fair-share queue, with the
vendors' own SDK classes (pulumi_kubernetes' CustomResource, pulumi_aws), so that what the readers, ``gpuready plan``
and the policy rules read is what the engine receives. Also written out as a Pulumi project (:func:`project`) for
``gpuready plan --program`` and the policy pack in its own process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

POOLS = {"gpu-l4": ("g6.12xlarge", 2), "gpu-l40s": ("g6e.xlarge", 4)}
"""Pool -> (instance type, most nodes): 2 x 4 L4 = 8 GPUs at $4.6016/h a node, 4 x 1 L40S = 4 at $1.861/h."""
FLAVORS = {"gpu-l4": {"eks.amazonaws.com/nodegroup": "gpu-l4"}, "gpu-l40s": {"gpuready.io/pool": "l40s"}}
"""Flavor -> its nodeLabels: EKS's node-group label (the pool's name), and a label the second pool sets itself."""
TEAMS = {"research": {"gpu-l4": (6, 2, None)}, "inference": {"gpu-l4": (2, 0, 2), "gpu-l40s": (4, None, None)}}
"""Team -> flavor -> (nominal GPUs, borrowing limit, lending limit): 12 GPUs of quota on 12 GPUs."""
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}

SOURCE = '''
import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

API = "kueue.x-k8s.io/v1beta2"


def kueue(name, kind, spec, **metadata):
    return k8s.apiextensions.CustomResource(name, api_version=API, kind=kind, metadata={"name": name, **metadata},
                                            spec=spec)


class WorkloadPriorityClass(pulumi.CustomResource):
    """What the CRD has beside the metadata (value, description), which CustomResource's arguments do not take."""

    def __init__(self, name, value, description):
        super().__init__(f"kubernetes:{API}:WorkloadPriorityClass", name,
                         {"apiVersion": API, "kind": "WorkloadPriorityClass", "metadata": {"name": name},
                          "value": value, "description": description})


def build(pools, flavors, teams, overcommit=False, local_queues=None, gpu_covered=True, batch=None):
    for pool, (instance_type, nodes) in pools.items():
        aws.eks.NodeGroup(pool, cluster_name="gpu", node_group_name=pool, node_role_arn="arn:aws:iam::1:role/n",
                          subnet_ids=["subnet-1"], instance_types=[instance_type], ami_type="AL2023_x86_64_NVIDIA",
                          scaling_config={"min_size": 0, "max_size": nodes, "desired_size": 0},
                          labels={"nvidia.com/gpu.present": "true",
                                  **({"gpuready.io/pool": "l40s"} if pool == "gpu-l40s" else {})},
                          taints=[{"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}])
    toleration = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    for flavor, labels in flavors.items():
        kueue(flavor, "ResourceFlavor", {"nodeLabels": labels, "tolerations": toleration})
    kueue("gpuready", "Cohort", {}, **({"annotations": {"gpuready.io/overcommit": "true"}} if overcommit else {}))
    covered = ["nvidia.com/gpu", "cpu", "memory"] if gpu_covered else ["cpu", "memory"]
    for team, quotas in teams.items():
        resources = []
        for flavor, (gpus, borrow, lend) in quotas.items():
            gpu = {"name": "nvidia.com/gpu", "nominalQuota": gpus,
                   **({} if borrow is None else {"borrowingLimit": borrow}),
                   **({} if lend is None else {"lendingLimit": lend})}
            rest = [{"name": "cpu", "nominalQuota": 48 * gpus}, {"name": "memory", "nominalQuota": f"{192 * gpus}Gi"}]
            resources.append({"name": flavor, "resources": [gpu, *rest] if gpu_covered else rest})
        kueue(team, "ClusterQueue", {
            "cohortName": "gpuready", "namespaceSelector": {},
            "resourceGroups": [{"coveredResources": covered, "flavors": resources}],
            "fairSharing": {"weight": 2 if team == "research" else 1},
            "preemption": {"reclaimWithinCohort": "LowerPriority", "withinClusterQueue": "LowerPriority",
                           "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 100}}})
    for namespace, target in (local_queues or {t: t for t in teams}).items():
        kueue(f"{namespace}-queue", "LocalQueue", {"clusterQueue": target}, namespace=namespace)
        # one LocalQueue per namespace, named like the Pulumi resource
    for name, value in (("gpuready-high", 1000), ("gpuready-normal", 100), ("gpuready-low", 10)):
        WorkloadPriorityClass(name, value, f"{name} jobs")
    if batch:
        environment = aws.batch.ComputeEnvironment(
            "gpu-batch", type="MANAGED",
            compute_resources={"type": "EC2", "instance_types": ["g6.12xlarge"], "min_vcpus": 0, "max_vcpus": 96,
                               "subnets": ["subnet-1"], "security_group_ids": ["sg-1"],
                               "instance_role": "arn:aws:iam::1:instance-profile/b"})
        policy = aws.batch.SchedulingPolicy("teams", fair_share_policy={
            "compute_reservation": 10, "share_decay_seconds": 3600,
            "share_distributions": [{"share_identifier": s, "weight_factor": w} for s, w in batch.items()]})
        aws.batch.JobQueue("gpu-fair", priority=1, state="ENABLED", scheduling_policy_arn=policy.arn,
                           compute_environment_orders=[{"order": 1, "compute_environment": environment.arn}])
'''


def program(**changes: Any):
    """A program function (for the ``render`` fixture) building the queues with ``changes`` to the defaults."""
    namespace: dict[str, Any] = {}
    exec(compile(SOURCE, "queue_programs", "exec"), namespace)  # noqa: S102 (our own program text)
    args = {"pools": POOLS, "flavors": FLAVORS, "teams": TEAMS, **changes}
    return lambda: namespace["build"](**args)


def project(folder: Path, stack: str = "queues", **changes: Any) -> Path:
    """The same program as a Pulumi project in ``folder`` with an empty stack file ``stack``; returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "Pulumi.yaml").write_text("name: queues\nruntime: python\n")
    args = {"pools": POOLS, "flavors": FLAVORS, "teams": TEAMS, **changes}
    (folder / "__main__.py").write_text(f"{SOURCE}\nimport json\nbuild(**json.loads({json.dumps(json.dumps(args))}))\n")
    (folder / f"Pulumi.{stack}.yaml").write_text("config:\n  aws:region: us-east-1\n")
    return folder


def overcommitted(extra: int = 4, declared: bool = False, team: str = "research") -> dict[str, Any]:
    """Changes giving ``team`` ``extra`` more GPUs on gpu-l4 than the pools reach (declared as meant or not)."""
    gpus, borrow, lend = TEAMS[team]["gpu-l4"]
    return {"teams": {**TEAMS, team: {**TEAMS[team], "gpu-l4": (gpus + extra, borrow, lend)}},
            "overcommit": declared}


def without(flavor: str, lookup: Optional[dict] = None) -> dict[str, Any]:
    """Changes where no team has quota on ``flavor``."""
    teams = {t: {f: q for f, q in quotas.items() if f != flavor} for t, quotas in (lookup or TEAMS).items()}
    return {"teams": teams}
