"""Why a Batch GPU job does not start: its needs against what its queue's compute environments can launch."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any, Mapping, Optional, Sequence

from gpuready_components import ecs_fit as fit

from ..resources.aws import BatchComputeEnvironment
from .scaler.base import Context
from .scaler.reservations import explain as reservation_findings

REASONS = {
    "MISCONFIGURATION:JOB_RESOURCE_REQUIREMENT": "no instance type in the queue's compute environments can hold "
                                                 "the job's GPUs, vCPUs or memory",
    "MISCONFIGURATION:COMPUTE_ENVIRONMENT_MAX_RESOURCE": "the job needs more vCPUs than the compute environments' "
                                                        "maxvCpus",
    "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY": "EC2 has no capacity for these instance types in these subnets' "
                                               "zones right now: add types or zones, or use another region",
}


def needs(job: dict[str, Any]) -> dict[str, int]:
    """GPUs, vCPUs and memory (MiB) a job (DescribeJobs detail) or a container override asks for."""
    container = job.get("container") or job
    out = {"GPU": 0, "VCPU": int(container.get("vcpus") or 0), "MEMORY": int(container.get("memory") or 0)}
    for requirement in container.get("resourceRequirements") or []:
        out[requirement["type"]] = int(float(requirement["value"]))
    return out


def environments(batch: Any, queue: str) -> tuple[Optional[dict], list[dict]]:
    queues = batch.describe_job_queues(jobQueues=[queue]).get("jobQueues") or []
    if not queues:
        return None, []
    arns = [o["computeEnvironment"] for o in sorted(queues[0].get("computeEnvironmentOrder") or [],
                                                    key=lambda o: o.get("order", 0))]
    found = batch.describe_compute_environments(computeEnvironments=arns).get("computeEnvironments") or [] \
        if arns else []
    return queues[0], found


def unplaceable(want: dict[str, int], envs: list[dict]) -> Optional[str]:
    """Why no instance of ``envs`` can ever hold a job needing ``want`` (:func:`needs`), or None when one can (or
    when only types outside the catalog are offered)."""
    rows, unknown = [], []
    for env in map(BatchComputeEnvironment, envs):  # Batch's API spells computeResources.instanceTypes as Pulumi does
        rows += env.gpu_rows
        unknown += env.unknown_types
    job = fit.Needs(want["GPU"], want["VCPU"], want["MEMORY"])
    if fit.holding(job, rows) or (unknown and not rows):
        return None
    offered = "; ".join(f"{r.name}: {fit.capacity(r)}" for r in fit.largest(rows, 2)) or "no GPU instance type"
    return (f"the job asks for {job}, and no instance type of the queue's compute environments can hold it "
            f"({offered}): it would stay RUNNABLE forever")


ECR_IMAGE = re.compile(r"^(\d{12})\.dkr\.ecr\.([\w-]+)\.amazonaws\.com/([^:@]+)(?::([^@]+))?$")
UNPACK_FACTOR = 2.5
"""Registries report compressed sizes; unpacked layers of deep-learning images take about this much more on disk."""
OS_RESERVE_GIB = 10
"""What the ECS GPU AMI itself keeps of the root volume."""
DEFAULT_ROOT_GIB = 30
"""The ECS GPU AMI's root volume when no launch template sizes it."""


def root_volume_gib(ec2: Any, env: dict[str, Any]) -> int:
    template = (env.get("computeResources") or {}).get("launchTemplate") or {}
    ref = {k: template[k] for k in ("launchTemplateId", "launchTemplateName") if template.get(k)}
    if not ref:
        return DEFAULT_ROOT_GIB
    key = "LaunchTemplateId" if "launchTemplateId" in ref else "LaunchTemplateName"
    version = str(template.get("version") or "$Default")
    versions = ec2.describe_launch_template_versions(**{key: next(iter(ref.values()))},
                                                     Versions=[version])["LaunchTemplateVersions"]
    sizes = [m.get("Ebs", {}).get("VolumeSize", 0) for v in versions
             for m in v["LaunchTemplateData"].get("BlockDeviceMappings") or []]
    return max(sizes) if sizes else DEFAULT_ROOT_GIB


def image_gib(ecr: Any, image: str) -> Optional[float]:
    """Compressed size of an ECR image in GiB; None for other registries (no credential-free size)."""
    match = ECR_IMAGE.match(image or "")
    if not match or ecr is None:
        return None
    images = ecr.describe_images(registryId=match.group(1), repositoryName=match.group(3),
                                 imageIds=[{"imageTag": match.group(4) or "latest"}])["imageDetails"]
    return images[0]["imageSizeInBytes"] / 2**30 if images and images[0].get("imageSizeInBytes") else None


def starting(job: dict[str, Any], envs: list[dict], ec2: Any = None, ecr: Any = None) -> list[str]:
    """Why a job stays in STARTING: its image against the root volume of the instances that pull it."""
    image = (job.get("container") or {}).get("image", "")
    reasons = ["STARTING for long means the instance is pulling the image; a deep-learning image is 5-15 GB, so "
               "check that it fits on the root volume (rootVolumeGiB) and that the instances reach the registry "
               "(a NAT gateway for private subnets)"]
    if ec2 is None:
        return reasons
    volume = min((root_volume_gib(ec2, e) for e in envs), default=DEFAULT_ROOT_GIB)
    size = image_gib(ecr, image)
    if size is None:
        reasons.append(f"{image} is not in ECR, so its size is unknown here; the instances have {volume} GiB root "
                       "volumes")
    elif size * UNPACK_FACTOR > volume - OS_RESERVE_GIB:
        reasons.append(f"{image} is {size:.1f} GiB compressed (about {size * UNPACK_FACTOR:.0f} GiB unpacked) and "
                       f"the instances' root volume is {volume} GiB, {OS_RESERVE_GIB} of them for the system: the pull "
                       "fails (CannotPullContainerError: no space left on device)")
    return reasons


def explain(batch: Any, job: dict[str, Any], ec2: Any = None, ecr: Any = None,
            reservations: Sequence[Mapping[str, Any]] = (), now: Optional[datetime] = None) -> list[str]:
    """Plain-language reasons a job is RUNNABLE or STARTING for long, read from Batch's own descriptions; and,
    for a stack on a reservation (its ``gpuReservations`` output, ``reservations``), what the reservation says at
    ``now`` (default: the clock): in another zone than the subnets, not started, ended
    (:func:`gpuready.smoke.scaler.reservations.explain`; Batch has no nodes to count a full one by)."""
    reasons = [f"{f.summary}; fix: {'; '.join(f.fixes)}" for f in reservation_findings(
        Context(reservations=tuple(reservations)), [],
        now or datetime.now(timezone.utc))] if job.get("status") == "RUNNABLE" else []
    status_reason = job.get("statusReason") or ""
    for code, meaning in REASONS.items():
        if code in status_reason:
            reasons.append(f"Batch says {code}: {meaning}")
    queue, envs = environments(batch, job["jobQueue"])
    if queue is None:
        return reasons + [f"job queue {job['jobQueue']} does not exist"]
    if queue.get("state") != "ENABLED" or queue.get("status") not in (None, "VALID"):
        reasons.append(f"job queue {queue['jobQueueName']} is {queue.get('state')}/{queue.get('status')}: "
                       f"{queue.get('statusReason', '')}".rstrip(": "))
    if job.get("status") == "STARTING":
        return reasons + starting(job, envs, ec2, ecr)
    want = needs(job)
    why = unplaceable(want, envs)
    if why:
        reasons.append(why)
    for env in envs:
        name, resources = env.get("computeEnvironmentName"), env.get("computeResources") or {}
        if env.get("state") != "ENABLED":
            reasons.append(f"compute environment {name} is {env.get('state')}")
        if env.get("status") == "INVALID":
            reasons.append(f"compute environment {name} is INVALID: {env.get('statusReason', 'no reason given')}")
        max_vcpus = resources.get("maxvCpus")
        if max_vcpus is not None and want["VCPU"] > max_vcpus:
            reasons.append(f"the job needs {want['VCPU']} vCPUs, more than {name}'s maxvCpus ({max_vcpus})")
        elif max_vcpus and resources.get("desiredvCpus", 0) >= max_vcpus:
            reasons.append(f"{name} is at its maxvCpus ({max_vcpus}): the job waits for running work to finish")
    if not reasons and job.get("status") == "RUNNABLE":
        reasons.append("the queue can hold the job: Batch is still launching an instance (a few minutes), or EC2 "
                       "has no capacity for these GPU types in these zones right now")
    return reasons
