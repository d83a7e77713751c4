"""AWS Batch platform facts, in one table. Tests check each value AWS constrains against botocore's models."""

from __future__ import annotations

from types import MappingProxyType

TYPE_TOKEN = "gpuready:aws:BatchGpuEnvironment"
"""Never change: renaming a type token replaces every cloud resource under it."""

GPU_IMAGE_TYPES = ("ECS_AL2023_NVIDIA", "ECS_AL2_NVIDIA")
"""Batch ``ec2Configuration.imageType`` values whose AMI ships the NVIDIA driver and container toolkit."""
DEFAULT_IMAGE_TYPE = "ECS_AL2023_NVIDIA"
CPU_IMAGE_TYPE = "ECS_AL2023"

IMAGE_TYPE_UNSUPPORTED_FAMILIES = MappingProxyType({"ECS_AL2023_NVIDIA": ("p3", "p3dn", "g3")})
"""Instance families an image type cannot run (Batch API reference, Ec2Configuration.imageType)."""
AL2_BLOCKED_FROM = "2026-06-30"
"""From this date Batch refuses new ECS compute environments on Batch-provided Amazon Linux 2 AMIs."""

CAPACITY = MappingProxyType(
    {
        # capacity -> (compute resource type, allocation strategy)
        "on-demand": ("EC2", "BEST_FIT_PROGRESSIVE"),
        "spot": ("SPOT", "SPOT_CAPACITY_OPTIMIZED"),
    }
)

RUNNABLE_BLOCKED_REASONS = (
    # Status reasons with which Batch can act on a job stuck at the head of a queue in RUNNABLE.
    "MISCONFIGURATION:JOB_RESOURCE_REQUIREMENT",
    "MISCONFIGURATION:COMPUTE_ENVIRONMENT_MAX_RESOURCE",
    "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY",
)
QUEUE_PRIORITY = 1
"""Priority of the GPU, multi-node and CPU job queues every stack has (the FIFO ones Metaflow submits to)."""
TEAMS_QUEUE_PRIORITY = 10
"""Priority of the teams' fair-share queues, above :data:`QUEUE_PRIORITY`: where both share compute environments,
Batch evaluates the higher priority first (CreateJobQueue ``priority``), so the teams' shares govern and jobs on the
FIFO queue run on what the teams leave idle."""
SHARE_WEIGHT_RANGE = (0.0001, 999.9999)
"""Batch's bounds on a share's ``weightFactor`` (ShareAttributes); a lower factor is a larger share."""
SHARE_WEIGHT_DIGITS = 4
"""Decimals of a ``weightFactor``, as Batch's bounds are written."""
SHARE_IDENTIFIER_MOST = 255
"""A share identifier is at most 255 alphanumeric characters (ShareAttributes ``shareIdentifier``)."""
COMPUTE_RESERVATION_RANGE = (0, 99)
"""Batch's bounds on a fair-share policy's ``computeReservation`` (per cent)."""
SHARE_DECAY_SECONDS_RANGE = (0, 604_800)
"""Batch's bounds on ``shareDecaySeconds`` (0: Batch's minimum window of 600 s; at most a week)."""
DEFAULT_COMPUTE_RESERVATION = 0
"""No vCPUs held back for idle teams: every idle GPU may run another team's jobs (the default ``lend`` of all)."""
DEFAULT_SHARE_DECAY_SECONDS = 3600
"""A team's usage of the last hour counts against its share: long GPU jobs (over Batch's 600 s minimum window, which
its documentation says to raise for jobs over ten minutes) weigh on the team that ran them."""
RUNNABLE_SECONDS_RANGE = (600, 86_400)
"""Batch's bounds on ``jobStateTimeLimitActions.maxTimeSeconds``."""

ROOT_DEVICE_NAME = "/dev/xvda"
"""Root device of the ECS-optimized Amazon Linux AMIs."""
ROOT_VOLUME_GIB_RANGE = (30, 16_384)
"""30 GiB is the ECS GPU AMI's snapshot size; 16 TiB is gp3's maximum."""

MANAGED_POLICIES = MappingProxyType(
    {
        "ecs_instance": "arn:aws:iam::aws:policy/service-role/AmazonEC2ContainerServiceforEC2Role",
        "spot_fleet": "arn:aws:iam::aws:policy/service-role/AmazonEC2SpotFleetTaggingRole",
    }
)
SERVICE_PRINCIPALS = MappingProxyType(
    {
        "ecs_instance": "ec2.amazonaws.com",
        "spot_fleet": "spotfleet.amazonaws.com",
    }
)

JOB_ROLE_PRINCIPAL = "ecs-tasks.amazonaws.com"
"""Batch jobs on ECS assume their job role as ECS tasks do."""
IMDS_HOP_LIMIT = 1
"""Instance metadata answers reach the instance's own processes only, not containers behind the docker bridge."""
UPDATE_JOB_TIMEOUT_MINUTES = 30
"""How long an in-place update of a compute environment lets running jobs finish before it replaces instances."""

SMOKE_COMMAND = ("nvidia-smi",)

MULTI_NODE_ALLOCATION = "BEST_FIT_PROGRESSIVE"
"""Batch runs multi-node parallel jobs on EC2 on-demand capacity only: not on Spot, not on Fargate (AWS Batch user
guide, multi-node parallel jobs)."""
EFA_DEVICE = "/dev/infiniband/uverbs{}"
"""The device of EFA interface N on the host; Batch's EFA guide passes it to the container at the same path with
READ, WRITE and MKNOD permissions (batch/latest/userguide/efa.html). Those are Batch's defaults for a device given
by its ``hostPath`` alone (the API's ``Device`` shape), so the job definition names the host path only: with 32
devices (p5) that is 2.8 KB less of the 24 KiB a job definition may hold, which the smoke test's probe needs."""
EFA_RDMA_FAMILIES = frozenset({"p4d", "p4de", "p5", "p5e", "p5en", "p6-b200", "p6-b300"})
"""Families whose EFA does GPUDirect RDMA, where libfabric is told so with ``FI_EFA_USE_DEVICE_RDMA=1`` (EC2 user
guide, "Elastic Fabric Adapter", supported instance types with RDMA read; aws-ofi-nccl's EFA setup notes). The
G families' EFA moves data through host memory."""
NCCL_ENVIRONMENT = (("NCCL_DEBUG", "INFO"),)
"""Every multi-node container: NCCL's INFO lines say which transport it chose (``gpuready smoke --nodes`` reads
them)."""
EFA_ENVIRONMENT = (("FI_PROVIDER", "efa"),)
"""With EFA: libfabric uses the EFA provider, never falling back to TCP without saying so."""
MEMLOCK_UNLIMITED = -1
"""``ulimits`` memlock soft and hard limit: EFA registers (pins) memory, which the default 64 KiB limit refuses."""
SHARED_MEMORY_MIN_MIB = 64
"""Docker's default ``/dev/shm``; anything smaller is no gain."""
