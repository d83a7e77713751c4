"""What a resource's properties say about GPUs: shared by the rules, read from the catalog and the platform facts."""

from __future__ import annotations

from typing import Any, Mapping

from components import catalog

BATCH_CE = "aws:batch/computeEnvironment:ComputeEnvironment"
BATCH_QUEUE = "aws:batch/jobQueue:JobQueue"
BATCH_JOB = "aws:batch/jobDefinition:JobDefinition"
EKS_CLUSTER = "aws:eks/cluster:Cluster"
EKS_NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
GKE_CLUSTER = "gcp:container/cluster:Cluster"
GKE_NODE_POOL = "gcp:container/nodePool:NodePool"
AKS_CLUSTER = "azure-native:containerservice:ManagedCluster"
AKS_AGENT_POOL = "azure-native:containerservice:AgentPool"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"

GPU_CAPACITY_TYPES = (BATCH_CE, EKS_NODE_GROUP, GKE_NODE_POOL, AKS_AGENT_POOL)


def instance_types(resource_type: str, props: Mapping[str, Any]) -> list[str]:
    """The instance / machine / VM types a capacity resource launches."""
    if resource_type == BATCH_CE:
        return list((props.get("computeResources") or {}).get("instanceTypes") or [])
    if resource_type == EKS_NODE_GROUP:
        return list(props.get("instanceTypes") or [])
    if resource_type == GKE_NODE_POOL:
        return [(props.get("nodeConfig") or {}).get("machineType", "")]
    if resource_type == AKS_AGENT_POOL:
        return [props.get("vmSize", "")]
    return []


def gpu_rows(resource_type: str, props: Mapping[str, Any]) -> list[catalog.GpuInstanceType]:
    """Catalog rows of the GPU types a capacity resource launches (empty: no GPUs)."""
    if resource_type == GKE_NODE_POOL:
        config = props.get("nodeConfig") or {}
        row = catalog.find_gcp(config.get("machineType", ""), config.get("guestAccelerators") or [])
        return [row] if row else []
    cloud = {BATCH_CE: "aws", EKS_NODE_GROUP: "aws", AKS_AGENT_POOL: "azure"}.get(resource_type)
    if cloud is None:
        return []
    return [row for row in (catalog.find(cloud, t) for t in instance_types(resource_type, props)) if row]


def is_gpu_capacity(resource_type: str, props: Mapping[str, Any]) -> bool:
    return bool(gpu_rows(resource_type, props))


def get(props: Any, path: str, default: Any = None) -> Any:
    """``props['a']['b']`` for ``path`` ``a.b``; ``default`` where any step is missing."""
    for part in path.split("."):
        if not isinstance(props, Mapping) or part not in props:
            return default
        props = props[part]
    return props
