"""Typed inputs of :class:`~gpuready_components.batch_gpu.BatchGpuEnvironment`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence

import pulumi

from ..k8s_gpu.args import ExtraInstanceTypeArgs
from ..images import SMOKE_IMAGE
from ..teams import TeamArgs
from . import facts
from .reservation import BatchReservationArgs


@dataclass(frozen=True, kw_only=True)
class GpuJobArgs:
    """What one GPU job asks for; the smoke-test job definition is registered with it."""

    gpus: int = 1
    """GPUs per job (Batch resource requirement ``GPU``)."""
    vcpus: int = 2
    """vCPUs per job (``VCPU``)."""
    memory_mib: int = 8192
    """Memory per job in MiB (``MEMORY``); must stay below the instance's memory less the ECS agent's share."""
    image: str = SMOKE_IMAGE
    """Container image: CUDA with Python, so that ``gpuready smoke`` can run its probe in it."""
    command: Sequence[str] = facts.SMOKE_COMMAND
    """The container's command (``gpuready smoke`` overrides it with its probe)."""
    timeout_seconds: int = 3600
    """Batch terminates an attempt that runs longer (minimum 60)."""


@dataclass(frozen=True, kw_only=True)
class MultiNodeArgs:
    """Multi-node parallel (gang) jobs: their own EC2 on-demand compute environment and queue, in one subnet and one
    cluster placement group, with EFA where the instance types have it, and a ``multinode`` job definition whose
    every node takes a whole instance."""

    nodes: int = 2
    """Instances per job, main node included (at least 2)."""
    capacity: str = "on-demand"
    """Only ``on-demand``: AWS Batch runs no multi-node parallel job on Spot (or Fargate). Single-node jobs keep
    the environment's ``capacity``, Spot included."""
    instance_types: Sequence[str] = ()
    """Instance types of the multi-node compute environment, all with the same GPU count and all with EFA or all
    without. Empty: the environment's ``instance_types`` with the most GPUs."""
    subnet: Optional[pulumi.Input[str]] = None
    """The ONE subnet (so one Availability Zone) the nodes launch in: a cluster placement group spans no more.
    ``None``: the first of ``subnet_ids``."""
    efa_interfaces: Optional[int] = None
    """EFA interfaces per node, one per network card (``None``: as many as the catalog says the types take; 0: no
    EFA, NCCL then talks over TCP sockets)."""
    shared_memory_mib: Optional[int] = None
    """``/dev/shm`` of each node's container in MiB (NCCL and data loaders need more than Docker's 64 MiB).
    ``None``: a quarter of the container's memory."""
    max_vcpus: Optional[int] = None
    """Upper bound of the multi-node compute environment. ``None``: ``nodes`` x the vCPUs of the largest type, one
    job at a time."""
    vcpus: Optional[int] = None
    """vCPUs each node's container asks for. ``None``: every vCPU of the smallest type."""
    memory_mib: Optional[int] = None
    """Memory in MiB each node's container asks for. ``None``: all the smallest type offers, less the ECS agent's
    share."""


@dataclass(frozen=True, kw_only=True)
class CpuQueueArgs:
    """A separate CPU queue with its own compute environment, so CPU work never waits in front of GPU jobs."""

    instance_types: Sequence[str] = ("m6i.large", "m6i.xlarge", "m6i.2xlarge")
    """EC2 instance types of the CPU compute environment (no GPU types)."""
    max_vcpus: int = 64
    """Upper bound of the CPU compute environment."""


@dataclass(frozen=True, kw_only=True)
class BatchGpuEnvironmentArgs:
    """Inputs of an AWS Batch GPU environment. Plain values are checked when the component is constructed."""

    instance_types: Sequence[str]
    """GPU instance types from the catalog (``g5.xlarge``, ``g6.12xlarge``...). Jobs land on the best fit."""
    subnet_ids: pulumi.Input[Sequence[pulumi.Input[str]]]
    """Subnets for GPU instances; private subnets with a NAT gateway, so instances need no public IP."""
    vpc_id: Optional[pulumi.Input[str]] = None
    """VPC of the subnets; needed when ``security_group_ids`` is not given, to create an egress-only group."""
    security_group_ids: Optional[pulumi.Input[Sequence[pulumi.Input[str]]]] = None
    """Security groups for the instances; by default one is created (egress only, self-ingress for multi-node)."""
    capacity: Sequence[str] = ("on-demand",)
    """One compute environment per entry, in queue order: ``on-demand``, ``spot``, or both (Spot first, on-demand
    as fallback)."""
    max_vcpus: int = 64
    """Upper bound of each compute environment: caps how many instances, and so GPUs and dollars, run at once."""
    min_vcpus: int = 0
    """Instances kept running when the queue is empty. 0 bills no idle GPUs."""
    image_type: str = facts.DEFAULT_IMAGE_TYPE
    """Batch AMI type; an ``*_NVIDIA`` type ships the driver and the NVIDIA container toolkit."""
    image_id: Optional[str] = None
    """Custom AMI overriding ``image_type`` (it must ship the NVIDIA driver and container toolkit)."""
    root_volume_gib: int = 200
    """Encrypted gp3 root volume. Deep-learning images are over 10 GB; a small root leaves jobs in STARTING."""
    root_volume_kms_key_id: Optional[pulumi.Input[str]] = None
    """KMS key for the root volume; the account's default EBS key when omitted."""
    job: GpuJobArgs = field(default_factory=GpuJobArgs)
    """The GPU job definition registered with the queue (used by ``gpuready smoke``)."""
    reservation: Optional[BatchReservationArgs] = None
    """An On-Demand Capacity Reservation the GPU compute environment launches into (see
    :class:`~gpuready_components.batch_gpu.reservation.BatchReservationArgs`): named in the GPU launch template;
    ``capacity`` must be ``['on-demand']``. Capacity Blocks are refused (Batch ignores the market type they need);
    the multi-node and CPU environments launch outside it."""
    multi_node: Optional[MultiNodeArgs] = None
    """Also create a multi-node compute environment, queue and job definition (see :class:`MultiNodeArgs`)."""
    cpu_queue: Optional[CpuQueueArgs] = None
    """Create a separate CPU queue and compute environment."""
    runnable_timeout_minutes: int = 60
    """Cancel a job blocked at the head of the GPU queue for this long (10 to 1440). A job no instance can hold is
    cancelled after 10 minutes whatever this says."""
    job_role_policy_arns: Sequence[str] = ()
    """IAM managed policies attached to the jobs' role (none by default: jobs get no AWS permissions). Jobs cannot
    use the instance role: IMDS answers only the instance itself."""
    metaflow_datastore_bucket: Optional[str] = None
    """Your Metaflow datastore's S3 bucket: the jobs' role may read and write it, and the Metaflow profile names it
    (``METAFLOW_DATASTORE_SYSROOT_S3``). Without it, the role gets no S3 access and the profile no datastore."""
    log_retention_days: int = 30
    """Retention of the job log group that the job definitions write to."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """Tags for every resource that takes tags, and for the instances Batch launches."""
    extra_instance_types: Sequence[ExtraInstanceTypeArgs] = ()
    """GPU facts of instance types newer than gpuready's catalog (see
    :class:`~gpuready_components.k8s_gpu.args.ExtraInstanceTypeArgs`), checked like its rows: this component alone
    knows them (unpriced), and tags the resources that launch them with their facts."""
    teams: Sequence[TeamArgs] = ()
    """The teams sharing the GPUs (:class:`~gpuready_components.teams.TeamArgs`). With teams, a fair-share queue
    beside the GPU queue (and beside the multi-node queue) on the same compute environments, with one share per team
    (share identifier: the team's name without '-'), its size proportional to the team's ``gpus`` x ``weight``;
    the GPU queue itself stays first-in first-out for Metaflow, whose ``@batch`` sends no share identifier. Batch has
    no per-team limit: ``borrow``, ``lend`` and ``pools`` other than all of them are refused."""
    overcommit_quotas: bool = False
    """Let the teams' ``gpus`` add up to more than the GPU compute environments reach at full scale."""
    fair_share_compute_reservation: int = facts.DEFAULT_COMPUTE_RESERVATION
    """Per cent of the fair-share queues' vCPUs held back for teams with no job (Batch's ``computeReservation``,
    0 to 99; reserved: (value/100) to the power of the active teams). 0: an idle team's GPUs run the others' jobs."""
    fair_share_decay_seconds: int = facts.DEFAULT_SHARE_DECAY_SECONDS
    """How far back a team's usage counts against its share (Batch's ``shareDecaySeconds``, 0 to 604800; 0: Batch's
    600 s minimum window)."""
