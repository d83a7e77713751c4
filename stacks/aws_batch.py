"""Reference stack ``aws-batch``: AWS Batch GPU capacity in its own VPC, or in subnets you give."""

from __future__ import annotations

import pulumi

from gpuready_components.aws_network import AwsNetwork, AwsNetworkArgs
from gpuready_components.batch_gpu import (BatchGpuEnvironment, BatchGpuEnvironmentArgs, BatchReservationArgs,
                                           CpuQueueArgs, GpuJobArgs, MultiNodeArgs)
from gpuready_components.errors import ConfigError

from . import extra_types, teams
from .config import StackConfig
from .settings import Setting, Settings, args_of

B, JOB, NET, RES = BatchGpuEnvironmentArgs, GpuJobArgs, AwsNetworkArgs, BatchReservationArgs
SETTINGS = Settings(
    Setting("instanceTypes", list, "GPU instance types from the catalog, e.g. `[g6.xlarge, g6.12xlarge]`",
            ("instance_types",), default=[], required=True),
    Setting("capacity", list, "compute environments in queue order: `[on-demand]`, `[spot]` or `[spot, on-demand]`",
            ("capacity",), B),
    # AWS Batch publishes no maxvCpus cap; 10,000 vCPUs is over 1,000 GPUs of g6.xlarge, far beyond the default EC2
    # vCPU quotas of the G and P families (Service Quotas, "Running On-Demand G and VT / P instances").
    Setting("maxVcpus", int, "most vCPUs each compute environment runs at once; caps GPUs and cost", ("max_vcpus",),
            B, most=10_000),
    Setting("minVcpus", int, "vCPUs kept running when the queue is empty; 0 bills no idle GPUs", ("min_vcpus",), B,
            most=10_000),
    Setting("imageType", str, "Batch AMI type; an `*_NVIDIA` type ships the NVIDIA driver and container toolkit",
            ("image_type",), B),
    Setting("imageId", str, "custom AMI with the NVIDIA driver, instead of `imageType`", ("image_id",), B),
    Setting("rootVolumeGiB", int, "encrypted gp3 root volume per instance; deep-learning images are over 10 GB",
            ("root_volume_gib",), B),
    Setting("job", dict, "the GPU job definition: `{gpus, vcpus, memoryMiB, image, timeoutSeconds}` (1 GPU, 2 vCPUs, "
            "8192 MiB, a PyTorch CUDA 12.4 image, 3600 s)", ("job",), default={}, sub=(
                Setting("gpus", int, fields=("job.gpus",), feeds=JOB),
                Setting("vcpus", int, fields=("job.vcpus",), feeds=JOB),
                Setting("memoryMiB", int, fields=("job.memory_mib",), feeds=JOB),
                Setting("image", str, fields=("job.image",), feeds=JOB),
                Setting("timeoutSeconds", int, fields=("job.timeout_seconds",), feeds=JOB))),
    Setting("multiNode", dict, "also create a multi-node compute environment and queue (EC2 on-demand, one subnet, "
            "a cluster placement group, EFA where the types have it) and a multi-node parallel job definition whose "
            "nodes each take a whole instance: `{nodes, instanceTypes, subnet, efaInterfaces, sharedMemoryMiB, "
            "maxVcpus, vcpus, memoryMiB}` (2 nodes of the `instanceTypes` with the most GPUs, the first subnet, the "
            "types' EFA interfaces)", ("multi_node",), sub=(
                Setting("nodes", int, fields=("multi_node.nodes",), feeds=MultiNodeArgs),
                Setting("capacity", str, fields=("multi_node.capacity",), feeds=MultiNodeArgs),
                Setting("instanceTypes", list, fields=("multi_node.instance_types",), feeds=MultiNodeArgs),
                Setting("subnet", str, fields=("multi_node.subnet",), feeds=MultiNodeArgs),
                Setting("efaInterfaces", int, fields=("multi_node.efa_interfaces",), feeds=MultiNodeArgs),
                Setting("sharedMemoryMiB", int, fields=("multi_node.shared_memory_mib",), feeds=MultiNodeArgs),
                Setting("maxVcpus", int, fields=("multi_node.max_vcpus",), feeds=MultiNodeArgs, most=10_000),
                Setting("vcpus", int, fields=("multi_node.vcpus",), feeds=MultiNodeArgs),
                Setting("memoryMiB", int, fields=("multi_node.memory_mib",), feeds=MultiNodeArgs))),
    Setting("reservation", dict, "an On-Demand Capacity Reservation the GPU compute environment launches into "
            "(capacity `[on-demand]`): `{kind: odcr, id | resourceGroupArn | preference: open}`; optional known facts "
            "`instanceType`, `availabilityZone`, `count`, `start`, `end`, checked at preview; `only: true`: no "
            "instance outside it; with `availabilityZone`, subnets none of which is in it are refused at preview. A "
            "Capacity Block is refused: Batch's user guide says it ignores the market type it needs",
            ("reservation",), default={}, sub=(
                Setting("kind", str, fields=("reservation.kind",), feeds=RES),
                Setting("id", str, fields=("reservation.id",), feeds=RES),
                Setting("resourceGroupArn", str, fields=("reservation.resource_group_arn",), feeds=RES),
                Setting("preference", str, fields=("reservation.preference",), feeds=RES),
                Setting("instanceType", str, fields=("reservation.instance_type",), feeds=RES),
                Setting("availabilityZone", str, fields=("reservation.availability_zone",), feeds=RES),
                Setting("count", int, fields=("reservation.count",), feeds=RES),
                Setting("start", str, fields=("reservation.start",), feeds=RES),
                Setting("end", str, fields=("reservation.end",), feeds=RES),
                Setting("only", bool, fields=("reservation.only",), feeds=RES))),
    Setting("cpuQueue", dict, "also create a CPU-only queue with its own compute environment, "
            "`{instanceTypes, maxVcpus}`", ("cpu_queue",), sub=(
                Setting("instanceTypes", list, fields=("cpu_queue.instance_types",), feeds=CpuQueueArgs),
                Setting("maxVcpus", int, fields=("cpu_queue.max_vcpus",), feeds=CpuQueueArgs, most=10_000))),
    Setting("runnableTimeoutMinutes", int, "cancel a job blocked at the head of the GPU queue for lack of capacity "
            "after this long (10 to 1440). A job no instance can hold is cancelled after 10 minutes",
            ("runnable_timeout_minutes",), B),
    Setting("metaflowDatastoreBucket", str, "your Metaflow datastore's S3 bucket: the jobs' role may read and write "
            "it, and the `metaflowProfile` output names it", ("metaflow_datastore_bucket",), B),
    Setting("logRetentionDays", int, "retention of the job log group", ("log_retention_days",), B),
    Setting("jobRolePolicyArns", list, "IAM managed policy ARNs attached to the jobs' own role, exported as "
            "`jobRoleArn` (none: jobs get no AWS permissions), e.g. `[arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess]`",
            ("job_role_policy_arns",), B),
    Setting("network", dict, "existing network `{vpcId, subnetIds, securityGroupIds}`; or `{cidrBlock, "
            "availabilityZones}` for the VPC the stack creates (10.42.0.0/16, 2 zones: private subnets, one NAT "
            "gateway)", default={}, sub=(
                Setting("vpcId", str, fields=("vpc_id",)), Setting("subnetIds", list, fields=("subnet_ids",)),
                Setting("securityGroupIds", list, fields=("security_group_ids",)),
                Setting("cidrBlock", str, fields=("cidr_block",), feeds=NET),
                Setting("availabilityZones", int, fields=("availability_zones",), feeds=NET))),
    Setting("tags", dict, "tags for every resource and every instance Batch launches (map)", ("tags",), B),
    extra_types.SETTING,
    teams.SETTING,
    teams.OVERCOMMIT,
    Setting("fairShareComputeReservation", int, "with teams: per cent of the fair-share queues' vCPUs held back for "
            "teams with no job (Batch's computeReservation, 0 to 99; 0: idle teams' GPUs run the others' jobs)",
            ("fair_share_compute_reservation",), B),
    Setting("fairShareDecaySeconds", int, "with teams: how far back a team's usage counts against its share "
            "(Batch's shareDecaySeconds, 0 to 604800)", ("fair_share_decay_seconds",), B),
)
"""The ``gpuready:`` keys this platform reads (besides ``platform``)."""
CLOUD_KEYS = {"aws:region": "AWS region (the reference stack: us-east-1)"}
"""The cloud provider's keys the stack reads, for the README."""


def build(config: StackConfig) -> None:
    """Declare the stack's resources and export what ``gpuready smoke`` reads."""
    read = config.read
    tags, network = read("tags"), read("network")
    if network.get("subnetIds"):
        subnet_ids, vpc_id = network["subnetIds"], network.get("vpcId")
        security_group_ids = network.get("securityGroupIds")
    else:
        if network.get("vpcId") or network.get("securityGroupIds"):
            raise ConfigError("gpuready:network.subnetIds", None, "vpcId/securityGroupIds given without subnets",
                              "give subnetIds too, or drop the network key to create a VPC")
        vpc = AwsNetwork("gpu", AwsNetworkArgs(
            cidr_block=network.get("cidrBlock", SETTINGS["network.cidrBlock"].value),
            availability_zones=network.get("availabilityZones", SETTINGS["network.availabilityZones"].value),
            first_zone=(read("reservation") or {}).get("availabilityZone"), tags=tags))  # a subnet in its zone
        subnet_ids, vpc_id, security_group_ids = vpc.private_subnet_ids, vpc.vpc_id, None

    multi_node, cpu_queue = read("multiNode"), read("cpuQueue")
    env = BatchGpuEnvironment("gpu", BatchGpuEnvironmentArgs(**config.args(
        subnet_ids=subnet_ids, vpc_id=vpc_id, security_group_ids=security_group_ids,
        job=GpuJobArgs(**args_of(SETTINGS["job"], read("job"))),
        multi_node=MultiNodeArgs(**args_of(SETTINGS["multiNode"], multi_node)) if multi_node is not None else None,
        cpu_queue=CpuQueueArgs(**args_of(SETTINGS["cpuQueue"], cpu_queue)) if cpu_queue is not None else None,
        reservation=BatchReservationArgs(**args_of(SETTINGS["reservation"], read("reservation")))
        if read("reservation") else None,
        extra_instance_types=extra_types.args(config),
        teams=teams.args(config),
    )))
    for key, value in env.outputs.items():
        pulumi.export(key, value)
