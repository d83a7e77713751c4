"""A Batch GPU queue in moto's server on 127.0.0.1, for the Batch target's tests."""

from __future__ import annotations

import functools
import os
import socket
import subprocess
import threading
import time
from typing import Callable

import boto3
import requests

LOG_GROUP = "/gpuready/jobs"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@functools.lru_cache(maxsize=None)
def aws_client(service: str, endpoint: str):
    """A boto3 client for ``service`` at ``endpoint`` (made once: loading a service model takes up to 0.4 s)."""
    return boto3.session.Session(region_name="us-east-1").client(service, endpoint_url=endpoint)


def build_queue(endpoint: str, instance_types=("g6.xlarge", "g6.12xlarge")) -> dict:
    """The resources an aws-batch stack creates, made in moto; returns the stack outputs the smoke test reads."""
    ec2, iam, batch, logs = (aws_client(service, endpoint) for service in ("ec2", "iam", "batch", "logs"))
    vpc = ec2.create_vpc(CidrBlock="10.42.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.42.0.0/20")["Subnet"]["SubnetId"]
    group = ec2.create_security_group(GroupName="gpu", Description="gpu", VpcId=vpc)["GroupId"]
    role = iam.create_role(RoleName="batch", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    profile = iam.create_instance_profile(InstanceProfileName="ecs")["InstanceProfile"]["Arn"]
    env = batch.create_compute_environment(
        computeEnvironmentName="gpu-on-demand", type="MANAGED", state="ENABLED", serviceRole=role,
        computeResources={"type": "EC2", "minvCpus": 0, "maxvCpus": 64, "instanceTypes": list(instance_types),
                          "subnets": [subnet], "securityGroupIds": [group], "instanceRole": profile})
    queue = batch.create_job_queue(jobQueueName="gpu", state="ENABLED", priority=1,
                                   computeEnvironmentOrder=[{"order": 1,
                                                             "computeEnvironment": env["computeEnvironmentArn"]}])
    logs.create_log_group(logGroupName=LOG_GROUP)
    definition = batch.register_job_definition(
        jobDefinitionName="gpu-smoke", type="container", containerProperties={
            "image": "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime", "command": ["nvidia-smi"], "jobRoleArn": role,
            "resourceRequirements": [{"type": "GPU", "value": "1"}, {"type": "VCPU", "value": "2"},
                                     {"type": "MEMORY", "value": "8192"}],
            "logConfiguration": {"logDriver": "awslogs", "options": {"awslogs-group": LOG_GROUP}}})
    return {"platform": "aws-batch", "jobQueueArn": queue["jobQueueArn"], "jobQueueName": "gpu",
            "jobDefinitionArn": definition["jobDefinitionArn"], "jobVcpus": 2, "jobMemoryMib": 8192,
            "logGroupName": LOG_GROUP}


def probe_definitions(endpoint: str, status: str = "ACTIVE") -> list[dict]:
    """The probe's job definitions (every revision of every ``*-gpuready-probe`` family) in ``status``."""
    batch = aws_client("batch", endpoint)
    return [d for d in batch.describe_job_definitions(status=status)["jobDefinitions"]
            if d["jobDefinitionName"].endswith("-gpuready-probe")]


def configure_moto(endpoint: str) -> None:
    requests.post(f"{endpoint}/moto-api/config", json={"batch": {"use_docker": False}}, timeout=120)


def build_multinode(endpoint: str, outputs: dict, instance_types=("g6.12xlarge",), max_vcpus: int = 96,
                    nodes: int = 2, gpus: int = 4, efa: int = 0) -> dict:
    """What ``gpuready:multiNode`` adds to the stack ``build_queue`` made: its own on-demand compute environment and
    queue, and a ``multinode`` job definition whose one node range asks for ``gpus`` GPUs; returns the outputs with
    the multi-node ones."""
    batch = aws_client("batch", endpoint)
    (gpu,) = batch.describe_compute_environments()["computeEnvironments"]
    resources = gpu["computeResources"]
    template = {}
    if efa:  # the stack's launch template: an EFA interface on each network card, the groups on each interface
        # (Batch then takes no group of the compute environment's; moto refuses an environment without one)
        created = aws_client("ec2", endpoint).create_launch_template(
            LaunchTemplateName="gpu-multi-node", LaunchTemplateData={"NetworkInterfaces": [
                {"NetworkCardIndex": card, "DeviceIndex": 0 if card == 0 else 1, "InterfaceType": "efa",
                 "SubnetId": resources["subnets"][0], "Groups": resources["securityGroupIds"]}
                for card in range(efa)]})["LaunchTemplate"]
        template = {"launchTemplate": {"launchTemplateId": created["LaunchTemplateId"], "version": "$Latest"}}
    env = batch.create_compute_environment(
        computeEnvironmentName="gpu-multi-node", type="MANAGED", state="ENABLED", serviceRole=gpu["serviceRole"],
        computeResources={"type": "EC2", "minvCpus": 0, "maxvCpus": max_vcpus, "instanceTypes": list(instance_types),
                          "subnets": resources["subnets"][:1], "instanceRole": resources["instanceRole"],
                          "placementGroup": "gpu-cluster",
                          "securityGroupIds": resources["securityGroupIds"], **template})
    queue = batch.create_job_queue(jobQueueName="gpu-multi-node", state="ENABLED", priority=1,
                                   computeEnvironmentOrder=[{"order": 1,
                                                             "computeEnvironment": env["computeEnvironmentArn"]}])
    (single,) = batch.describe_job_definitions(jobDefinitions=[outputs["jobDefinitionArn"]])["jobDefinitions"]
    container = {**single["containerProperties"], "resourceRequirements": [
        {"type": "GPU", "value": str(gpus)}, {"type": "VCPU", "value": "40"}, {"type": "MEMORY", "value": "150000"}],
        "environment": [{"name": "NCCL_DEBUG", "value": "INFO"}],
        "ulimits": [{"name": "memlock", "softLimit": -1, "hardLimit": -1}]}
    definition = batch.register_job_definition(
        jobDefinitionName="gpu-multi-node", type="multinode", platformCapabilities=["EC2"],
        nodeProperties={"numNodes": nodes, "mainNode": 0,
                        "nodeRangeProperties": [{"targetNodes": "0:", "container": container}]})
    return {**outputs, "multiNodeJobQueueArn": queue["jobQueueArn"],
            "multiNodeJobDefinitionArn": definition["jobDefinitionArn"], "multiNodeNodes": nodes,
            "multiNodeGpusPerNode": gpus, "multiNodeInstanceTypes": list(instance_types),
            "multiNodeEfaInterfaces": efa}


STATUSES = ("SUBMITTED", "PENDING", "RUNNABLE", "STARTING", "RUNNING", "SUCCEEDED", "FAILED")


def jobs(endpoint: str, queue: str = "gpu") -> list[dict]:
    """Every job of ``queue``, whatever its status (ListJobs summaries)."""
    client = aws_client("batch", endpoint)
    return [j for status in STATUSES for j in client.list_jobs(jobQueue=queue, jobStatus=status)["jobSummaryList"]]


def run_containers(endpoint: str, stop: threading.Event, env: Callable[[dict], dict] = lambda job: dict(os.environ),
                   queue: str = "gpu") -> None:
    """Until ``stop``: run each new job's command as its container would (environment ``env(job detail)``), and
    ship its output to the job's log stream, as the awslogs driver would (moto runs no containers)."""
    client, logs, done = aws_client("batch", endpoint), aws_client("logs", endpoint), set()
    while not stop.is_set():
        for summary in jobs(endpoint, queue):
            if summary["jobId"] in done:
                continue
            job = client.describe_jobs(jobs=[summary["jobId"]])["jobs"][0]
            stream = job["container"].get("logStreamName")
            if not stream:
                continue
            done.add(summary["jobId"])
            out = subprocess.run(job["container"]["command"], capture_output=True, text=True, env=env(job))
            logs.create_log_stream(logGroupName=LOG_GROUP, logStreamName=stream)
            logs.put_log_events(logGroupName=LOG_GROUP, logStreamName=stream, logEvents=[
                {"timestamp": int(time.time() * 1000), "message": line} for line in out.stdout.splitlines()])
        time.sleep(0.05)
