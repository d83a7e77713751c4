"""Building a BatchGpuEnvironment under the mock runtime, for the tests in this folder."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from gpuready_components.batch_gpu import BatchGpuEnvironment, BatchGpuEnvironmentArgs

CE = "aws:batch/computeEnvironment:ComputeEnvironment"
QUEUE = "aws:batch/jobQueue:JobQueue"
POLICY = "aws:batch/schedulingPolicy:SchedulingPolicy"
JOB = "aws:batch/jobDefinition:JobDefinition"
LT = "aws:ec2/launchTemplate:LaunchTemplate"
SG = "aws:ec2/securityGroup:SecurityGroup"
ROLE = "aws:iam/role:Role"
ATTACH = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"


def args(**overrides: Any) -> BatchGpuEnvironmentArgs:
    base = BatchGpuEnvironmentArgs(instance_types=["g6.xlarge", "g6.12xlarge"],
                                   subnet_ids=["subnet-aaaaaaaa", "subnet-bbbbbbbb"], vpc_id="vpc-11111111")
    return dataclasses.replace(base, **overrides)


def build(render, **overrides: Any):
    """Render one environment; returns (rendering, component)."""
    holder = {}

    def program():
        holder["env"] = BatchGpuEnvironment("gpu", args(**overrides))

    rendering = render(program)
    return rendering, holder["env"]


def container(job_definition) -> dict:
    return json.loads(job_definition.inputs["containerProperties"])
