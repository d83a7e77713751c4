"""GPU capacity rules: NVIDIA images, scaling to zero, caps on GPUs and dollars, cost-allocation tags."""

from __future__ import annotations

from gpuready.resources import capacity_readers, gpu_pools, read, tokens
from gpuready.resources.aws import BatchComputeEnvironment, EksNodeGroup

from ..gpu import facts, of_kind, source
from ..rule import ADVISORY, MANDATORY, each, known, resource_rule, stack_rule

def _check_nvidia_image(resource_type, name, props, config):
    pool = read(resource_type, props)
    problem = pool.image_without_driver() if pool.is_gpu else None
    if problem:
        yield problem


gpu_nvidia_image = resource_rule(
    "gpu-nvidia-image",
    "Compute environments and node groups with GPU instance types use an NVIDIA image (Batch *_NVIDIA image types, "
    "EKS NVIDIA AMI types) unless an explicit image is given.",
    MANDATORY, tokens(BatchComputeEnvironment, EksNodeGroup), _check_nvidia_image)


def _check_scale_to_zero(resources, config):
    from .reservations import reserved_first

    def check(resource):
        pool = facts(resource)
        if not pool.is_gpu or resource.name in (config.get("allow") or []):
            return
        minimum, field = pool.minimum
        if minimum > 0 and not reserved_first(source(resource, resources)):
            yield resource, f"keeps {minimum} of its GPU capacity running when idle ({field})", \
                "scale it to 0, or add the resource's name to this rule's allow list in the policy config"
    yield from each(of_kind(resources, *gpu_pools()), check)


gpu_scale_to_zero = stack_rule(
    "gpu-scale-to-zero",
    "GPU capacity scales to zero when idle (min vCPUs 0, min nodes 0) unless the resource is allow-listed or runs on a "
    "prepaid reservation (paid whether used or not: gpu-reservation-idle).",
    MANDATORY, _check_scale_to_zero, {"allow": {"type": "array", "items": {"type": "string"}, "default": []}})


def _dollars(usd: float) -> str:
    """``usd`` to the cent, or to its last digit when it has fractions of a cent (a cap of $22.318 is not $22.32)."""
    return f"{usd:,.2f}" if round(usd, 2) == usd else f"{usd:,.6f}".rstrip("0")


def _check_caps(resources, config):
    max_gpus, max_usd = config.get("maxGpus"), config.get("maxUsdPerHour")
    if max_gpus is None and max_usd is None:
        return
    found, unknown = known(of_kind(resources, *capacity_readers()), lambda r: facts(r).capacity())
    pools = [p for p in found if p]
    gpus = sum(p.max_gpus for p in pools)
    usd = round(sum(p.max_usd_per_hour for p in pools), 2)  # compared with the cap as shown: to the cent
    # Capacity whose size is unknown only adds: known capacity over a cap is a violation, under it undecided.
    at_least = "at least " if unknown else ""
    if max_gpus is not None and gpus > max_gpus:
        yield None, f"can run {at_least}{gpus} GPUs at once, more than the cap of {int(max_gpus)}", \
            "lower maxVcpus / max nodes, or raise maxGpus in the policy config"
    elif max_gpus is not None and unknown:
        yield unknown
    if max_usd is not None and usd > max_usd:
        yield None, (f"can cost {at_least}${usd:,.2f}/h on demand at full scale, more than the cap of "
                     f"${_dollars(max_usd)}/h"), \
            "lower maxVcpus / max nodes, or raise maxUsdPerHour in the policy config"
    elif max_usd is not None and unknown:
        yield unknown


gpu_capacity_caps = stack_rule(
    "gpu-capacity-caps",
    "The stack's GPU capacity at full scale stays under caps from config: total GPUs and on-demand dollars per hour "
    "(catalog list prices).",
    MANDATORY, _check_caps,
    {"maxGpus": {"type": "integer", "minimum": 0}, "maxUsdPerHour": {"type": "number", "minimum": 0}})


def _check_tags(resource_type, name, props, config):
    pool = read(resource_type, props)
    if not pool.is_gpu:
        return
    missing = [k for k in config.get("requiredTags") or [] if k not in pool.tag_keys]
    if missing:
        yield f"GPU capacity without the cost-allocation {pool.TAGS} {', '.join(missing)}", \
            f"add {pool.TAGS} {', '.join(missing)} (gpuready:{pool.TAGS} in the stack config)"


cost_allocation_tags = resource_rule(
    "cost-allocation-tags",
    "GPU capacity carries the cost-allocation tags (GCP: labels) named in config.",
    ADVISORY, lambda: tokens(*gpu_pools()), _check_tags,
    {"requiredTags": {"type": "array", "items": {"type": "string"}, "default": ["team", "cost-center"]}})

RULES = [gpu_nvidia_image, gpu_scale_to_zero, gpu_capacity_caps, cost_allocation_tags]
