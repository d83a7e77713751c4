"""The offline answers of ``gpuready plan``: ARNs in the shape each AWS service gives them (moto's, which follow
the services': IAM's name no region, Batch's and EKS's do)."""

from __future__ import annotations

import json

import boto3
import pytest
from moto import mock_aws

from gpuready.plan.render import ACCOUNT_ID, _arn

REGION = "us-east-1"


@pytest.fixture
def moto(monkeypatch):
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": REGION}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with mock_aws():
        yield


def test_offline_arns_are_the_ones_the_services_give(moto):
    iam, batch = boto3.client("iam"), boto3.client("batch")
    trust = json.dumps({"Version": "2012-10-17", "Statement": []})
    role = iam.create_role(RoleName="gpu-job", AssumeRolePolicyDocument=trust)["Role"]["Arn"]
    profile = iam.create_instance_profile(InstanceProfileName="gpu-ecs")["InstanceProfile"]["Arn"]
    environment = batch.create_compute_environment(computeEnvironmentName="gpu-ce", type="UNMANAGED",
                                                   serviceRole=role)["computeEnvironmentArn"]
    queue = batch.create_job_queue(jobQueueName="gpu", state="ENABLED", priority=1, computeEnvironmentOrder=[
        {"order": 1, "computeEnvironment": environment}])["jobQueueArn"]
    definition = batch.register_job_definition(jobDefinitionName="gpu-smoke", type="container", containerProperties={
        "image": "busybox", "vcpus": 1, "memory": 128})["jobDefinitionArn"]
    cluster = boto3.client("eks").create_cluster(name="gpu", roleArn=role, resourcesVpcConfig={})["cluster"]["arn"]
    boto3.client("logs").create_log_group(logGroupName="/gpu/jobs")
    (group,) = boto3.client("logs").describe_log_groups()["logGroups"]
    assert ACCOUNT_ID in role  # moto's account is AWS's documented example, as the plan's
    assert {
        "aws:iam/role:Role": _arn("aws:iam/role:Role", "gpu-job", REGION),
        "aws:iam/instanceProfile:InstanceProfile": _arn("aws:iam/instanceProfile:InstanceProfile", "gpu-ecs", REGION),
        "aws:batch/computeEnvironment:ComputeEnvironment": _arn(
            "aws:batch/computeEnvironment:ComputeEnvironment", "gpu-ce", REGION),
        "aws:batch/jobQueue:JobQueue": _arn("aws:batch/jobQueue:JobQueue", "gpu", REGION),
        "aws:batch/jobDefinition:JobDefinition": _arn("aws:batch/jobDefinition:JobDefinition", "gpu-smoke", REGION),
        "aws:eks/cluster:Cluster": _arn("aws:eks/cluster:Cluster", "gpu", REGION),
        "aws:cloudwatch/logGroup:LogGroup": _arn("aws:cloudwatch/logGroup:LogGroup", "/gpu/jobs", REGION),
    } == {
        "aws:iam/role:Role": role, "aws:iam/instanceProfile:InstanceProfile": profile,
        "aws:batch/computeEnvironment:ComputeEnvironment": environment, "aws:batch/jobQueue:JobQueue": queue,
        "aws:batch/jobDefinition:JobDefinition": definition,
        "aws:eks/cluster:Cluster": cluster,
        "aws:cloudwatch/logGroup:LogGroup": group["arn"].removesuffix(":*"),  # Pulumi's arn drops the ":*"
    }
