"""GPU capacity rules: NVIDIA images, scaling to zero, caps on GPUs and dollars, cost-allocation tags."""

from __future__ import annotations

from components.batch_gpu import facts as batch_facts
from components.eks_gpu import facts as eks_facts
from gpuready.plan.describe import POOLS

from ..gpu import BATCH_CE, EKS_NODE_GROUP, GKE_NODE_POOL, GPU_CAPACITY_TYPES, get, is_gpu_capacity
from ..rule import ADVISORY, MANDATORY, known, resource_rule, stack_rule

_NVIDIA_EKS_AMI_TYPES = (*eks_facts.GPU_AMI_TYPES, *eks_facts.RETIRED_AMI_TYPES)


def _check_nvidia_image(resource_type, name, props, config):
    if not is_gpu_capacity(resource_type, props):
        return
    if resource_type == BATCH_CE:
        resources = props.get("computeResources") or {}
        configs = resources.get("ec2Configurations") or []
        if resources.get("imageId") or any(c.get("imageIdOverride") for c in configs):
            return
        types = [c.get("imageType") for c in configs] or ["ECS_AL2 (Batch's default)"]
        if not all(t in batch_facts.GPU_IMAGE_TYPES for t in types):
            yield (f"GPU instances on image type {', '.join(map(str, types))}, which has no NVIDIA driver",
                   f"set ec2Configuration imageType {batch_facts.DEFAULT_IMAGE_TYPE}")
    elif resource_type == EKS_NODE_GROUP:
        ami = props.get("amiType") or "AL2_x86_64 (EKS's default)"
        if ami not in (*_NVIDIA_EKS_AMI_TYPES, "CUSTOM"):
            yield (f"GPU node group on AMI type {ami}, which has no NVIDIA driver",
                   f"set amiType {eks_facts.DEFAULT_AMI_TYPE} (or BOTTLEROCKET_x86_64_NVIDIA)")


gpu_nvidia_image = resource_rule(
    "gpu-nvidia-image",
    "Compute environments and node groups with GPU instance types use an NVIDIA image (Batch *_NVIDIA image types, "
    "EKS NVIDIA AMI types) unless an explicit image is given.",
    MANDATORY, (BATCH_CE, EKS_NODE_GROUP), _check_nvidia_image)


def _minimum(resource_type, props) -> tuple[int, str]:
    if resource_type == BATCH_CE:
        return int(get(props, "computeResources.minVcpus", 0)), "minVcpus"
    if resource_type == EKS_NODE_GROUP:
        return int(get(props, "scalingConfig.minSize", 0)), "scalingConfig.minSize"
    if resource_type == GKE_NODE_POOL:
        scaling = props.get("autoscaling")
        if not scaling:
            return int(props.get("nodeCount", props.get("initialNodeCount", 1))), "a fixed nodeCount (no autoscaling)"
        return int(scaling.get("totalMinNodeCount", scaling.get("minNodeCount", 0))), "autoscaling minimum"
    if not props.get("enableAutoScaling"):
        return int(props.get("count", 1)), "a fixed count (no autoscaling)"
    return int(props.get("minCount", 0)), "minCount"


def _check_scale_to_zero(resource_type, name, props, config):
    if not is_gpu_capacity(resource_type, props) or name in (config.get("allow") or []):
        return
    minimum, field = _minimum(resource_type, props)
    if minimum > 0:
        yield (f"keeps {minimum} of its GPU capacity running when idle ({field})",
               "scale it to 0, or add the resource's name to this rule's allow list in the policy config")


gpu_scale_to_zero = resource_rule(
    "gpu-scale-to-zero",
    "GPU capacity scales to zero when idle (min vCPUs 0, min nodes 0) unless the resource is allow-listed.",
    MANDATORY, GPU_CAPACITY_TYPES, _check_scale_to_zero,
    {"allow": {"type": "array", "items": {"type": "string"}, "default": []}})


def _check_caps(resources, config):
    max_gpus, max_usd = config.get("maxGpus"), config.get("maxUsdPerHour")
    if max_gpus is None and max_usd is None:
        return
    found, unknown = known([r for r in resources if r.resource_type in POOLS],
                           lambda r: POOLS[r.resource_type](r.name, r.props))
    pools = [p for p in found if p]
    gpus = sum(p.max_gpus for p in pools)
    usd = round(sum(p.max_usd_per_hour for p in pools), 2)
    # Capacity whose size is unknown only adds: known capacity over a cap is a violation, under it undecided.
    at_least = "at least " if unknown else ""
    if max_gpus is not None and gpus > max_gpus:
        yield None, f"can run {at_least}{gpus} GPUs at once, more than the cap of {int(max_gpus)}", \
            "lower maxVcpus / max nodes, or raise maxGpus in the policy config"
    elif max_gpus is not None and unknown:
        yield unknown
    if max_usd is not None and usd > max_usd:
        yield None, (f"can cost {at_least}${usd:,.2f}/h on demand at full scale, more than the cap of "
                     f"${max_usd:,.2f}/h"), "lower maxVcpus / max nodes, or raise maxUsdPerHour in the policy config"
    elif max_usd is not None and unknown:
        yield unknown


gpu_capacity_caps = stack_rule(
    "gpu-capacity-caps",
    "The stack's GPU capacity at full scale stays under caps from config: total GPUs and on-demand dollars per hour "
    "(catalog list prices).",
    MANDATORY, _check_caps,
    {"maxGpus": {"type": "integer", "minimum": 0}, "maxUsdPerHour": {"type": "number", "minimum": 0}})


def _tags(resource_type, props) -> set[str]:
    """The tag (label) keys: a tag whose value is unknown still counts."""
    if resource_type == GKE_NODE_POOL:
        return set(get(props, "nodeConfig.resourceLabels", {}) or {})
    return set(props.get("tags") or {})


def _check_tags(resource_type, name, props, config):
    if not is_gpu_capacity(resource_type, props):
        return
    missing = [k for k in config.get("requiredTags") or [] if k not in _tags(resource_type, props)]
    if missing:
        kind = "labels" if resource_type == GKE_NODE_POOL else "tags"
        yield f"GPU capacity without the cost-allocation {kind} {', '.join(missing)}", \
            f"add {kind} {', '.join(missing)} (gpuready:{'labels' if kind == 'labels' else 'tags'} in the stack config)"


cost_allocation_tags = resource_rule(
    "cost-allocation-tags",
    "GPU capacity carries the cost-allocation tags (GCP: labels) named in config.",
    ADVISORY, GPU_CAPACITY_TYPES, _check_tags,
    {"requiredTags": {"type": "array", "items": {"type": "string"}, "default": ["team", "cost-center"]}})

RULES = [gpu_nvidia_image, gpu_scale_to_zero, gpu_capacity_caps, cost_allocation_tags]
