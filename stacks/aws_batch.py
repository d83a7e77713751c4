"""Reference stack ``aws-batch``: AWS Batch GPU capacity in its own VPC, or in subnets you give."""

from __future__ import annotations

import pulumi

from components.aws_network import AwsNetwork, AwsNetworkArgs
from components.batch_gpu import (BatchGpuEnvironment, BatchGpuEnvironmentArgs, CpuQueueArgs, GpuJobArgs,
                                  MultiNodeArgs)
from components.errors import ConfigError

from .config import StackConfig

KEYS = {
    "instanceTypes": "GPU instance types (list, required), e.g. [g6.xlarge, g6.12xlarge]",
    "capacity": "compute environments in queue order: [on-demand] (default), [spot] or [spot, on-demand]",
    "maxVcpus": "most vCPUs each compute environment runs at once (default 64): caps GPUs and cost",
    "minVcpus": "vCPUs kept running when idle (default 0: no idle GPUs billed)",
    "imageType": "Batch AMI type (default ECS_AL2023_NVIDIA)",
    "imageId": "custom AMI with the NVIDIA driver, instead of imageType",
    "rootVolumeGiB": "encrypted gp3 root volume per instance (default 200)",
    "job": "the GPU job definition: {gpus, vcpus, memoryMiB, image, timeoutSeconds} (default 1 GPU, 2 vCPU, 8192 MiB)",
    "multiNode": "also register a multi-node parallel job definition: {nodes} (on-demand only)",
    "cpuQueue": "also create a CPU-only queue: {instanceTypes, maxVcpus}",
    "runnableTimeoutMinutes": "cancel jobs blocked in RUNNABLE after this long (default 60, 10-1440)",
    "logRetentionDays": "job log retention (default 30)",
    "jobRolePolicyArns": "IAM managed policy ARNs for the jobs' own role (default none: jobs get no AWS permissions)",
    "network": "existing network {vpcId, subnetIds, securityGroupIds}; or {cidrBlock, availabilityZones} for a new VPC",
    "tags": "tags for every resource (map)",
}
"""The ``gpuready:`` keys this platform reads (besides ``platform``)."""

_NETWORK_KEYS = {"vpcId": str, "subnetIds": list, "securityGroupIds": list, "cidrBlock": str,
                 "availabilityZones": int}


def build(config: StackConfig) -> None:
    """Declare the stack's resources and export what ``gpuready smoke`` reads."""
    tags = config.get_object("tags", None, {})
    network = config.get_object("network", _NETWORK_KEYS, {})
    if network.get("subnetIds"):
        subnet_ids, vpc_id = network["subnetIds"], network.get("vpcId")
        security_group_ids = network.get("securityGroupIds")
    else:
        if network.get("vpcId") or network.get("securityGroupIds"):
            raise ConfigError("gpuready:network.subnetIds", None, "vpcId/securityGroupIds given without subnets",
                              "give subnetIds too, or drop the network key to create a VPC")
        vpc = AwsNetwork("gpu", AwsNetworkArgs(
            cidr_block=network.get("cidrBlock", "10.42.0.0/16"),
            availability_zones=network.get("availabilityZones", 2), tags=tags))
        subnet_ids, vpc_id, security_group_ids = vpc.private_subnet_ids, vpc.vpc_id, None

    job = config.get_object("job", {"gpus": int, "vcpus": int, "memoryMiB": int, "image": str,
                                    "timeoutSeconds": int}, {})
    multi_node = config.get_object("multiNode", {"nodes": int})
    cpu_queue = config.get_object("cpuQueue", {"instanceTypes": list, "maxVcpus": int})
    defaults = GpuJobArgs()
    env = BatchGpuEnvironment("gpu", BatchGpuEnvironmentArgs(
        instance_types=config.get_list("instanceTypes") or [],
        subnet_ids=subnet_ids,
        vpc_id=vpc_id,
        security_group_ids=security_group_ids,
        capacity=config.get_list("capacity", ["on-demand"]),
        max_vcpus=config.get_int("maxVcpus", 64),
        min_vcpus=config.get_int("minVcpus", 0),
        image_type=config.get_str("imageType", "ECS_AL2023_NVIDIA"),
        image_id=config.get_str("imageId"),
        root_volume_gib=config.get_int("rootVolumeGiB", 200),
        job=GpuJobArgs(
            gpus=job.get("gpus", defaults.gpus),
            vcpus=job.get("vcpus", defaults.vcpus),
            memory_mib=job.get("memoryMiB", defaults.memory_mib),
            image=job.get("image", defaults.image),
            timeout_seconds=job.get("timeoutSeconds", defaults.timeout_seconds),
        ),
        multi_node=MultiNodeArgs(**({"nodes": multi_node["nodes"]} if "nodes" in multi_node else {}))
        if multi_node is not None else None,
        cpu_queue=CpuQueueArgs(**{k: v for k, v in (("instance_types", cpu_queue.get("instanceTypes")),
                                                    ("max_vcpus", cpu_queue.get("maxVcpus"))) if v is not None})
        if cpu_queue is not None else None,
        runnable_timeout_minutes=config.get_int("runnableTimeoutMinutes", 60),
        log_retention_days=config.get_int("logRetentionDays", 30),
        job_role_policy_arns=config.get_list("jobRolePolicyArns", []),
        tags=tags,
    ))

    for key, value in env.outputs.items():
        pulumi.export(key, value)
