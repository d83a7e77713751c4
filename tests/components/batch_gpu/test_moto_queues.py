"""The queues a stack with teams renders, made in moto, take the jobs each user submits: Metaflow's (no share
identifier) on the queue its profile names, a team's (its share identifier) on the team's queue.

moto (5.2.5) does not enforce Batch's share-identifier rule: its SubmitJob takes any job on any queue, with or without
``shareIdentifier``. So besides moto's acceptance, each submission is checked against the rule as botocore's model
documents it for SubmitJob's ``shareIdentifier`` ("Don't specify this parameter if the job queue doesn't have a
fair-share scheduling policy. If the job queue has a fair-share scheduling policy, then this parameter must be
specified"), read from the queue moto describes; that sentence is asserted to be in the model.
"""

from __future__ import annotations

import inspect

import boto3
import botocore.session
import pytest
from moto import mock_aws
from pulumi.runtime.sync_await import _sync_await

from gpuready_components.batch_gpu import MultiNodeArgs
from gpuready_components.teams import TeamArgs

from .helpers import CE, POLICY, QUEUE, build
from .test_vendor_truth import scheduling_policy_request

RULE = ("Don't specify this parameter if the job queue doesn't have a fair-share scheduling policy. If the job queue "
        "has a fair-share scheduling policy, then this parameter must be specified.")


def _batch_accepts(queue: dict, request: dict) -> bool:
    """Whether Batch takes ``request`` on ``queue`` (a DescribeJobQueues item), by botocore's SubmitJob contract."""
    return ("schedulingPolicyArn" in queue and bool(queue["schedulingPolicyArn"])) == ("shareIdentifier" in request)


def _replay(rendering) -> dict[str, str]:
    """The rendered compute environments, scheduling policies and queues made in moto, in dependency order;
    returns each rendered ARN's moto ARN."""
    ec2, iam, batch = (boto3.client(s, region_name="us-east-1") for s in ("ec2", "iam", "batch"))
    vpc = ec2.create_vpc(CidrBlock="10.42.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.42.0.0/20")["Subnet"]["SubnetId"]
    group = ec2.create_security_group(GroupName="gpu", Description="gpu", VpcId=vpc)["GroupId"]
    role = iam.create_role(RoleName="batch", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    profile = iam.create_instance_profile(InstanceProfileName="ecs")["InstanceProfile"]["Arn"]
    arns: dict[str, str] = {}
    for env in rendering.of_type(CE):
        res = env.inputs["computeResources"]
        arns[env.outputs["arn"]] = batch.create_compute_environment(
            computeEnvironmentName=env.name, type=env.inputs["type"], state=env.inputs["state"], serviceRole=role,
            computeResources={"type": res["type"], "minvCpus": int(res["minVcpus"]), "maxvCpus": int(res["maxVcpus"]),
                              "instanceTypes": res["instanceTypes"], "subnets": [subnet], "securityGroupIds": [group],
                              "instanceRole": profile})["computeEnvironmentArn"]
    for policy in rendering.of_type(POLICY):
        arns[policy.outputs["arn"]] = batch.create_scheduling_policy(**scheduling_policy_request(policy))["arn"]
    for queue in rendering.of_type(QUEUE):
        request = {"jobQueueName": queue.outputs["name"], "state": queue.inputs["state"],
                   "priority": int(queue.inputs["priority"]),
                   "computeEnvironmentOrder": [{"order": int(o["order"]),
                                                "computeEnvironment": arns[o["computeEnvironment"]]}
                                               for o in queue.inputs["computeEnvironmentOrders"]]}
        if "schedulingPolicyArn" in queue.inputs:
            request["schedulingPolicyArn"] = arns[queue.inputs["schedulingPolicyArn"]]
        arns[queue.outputs["arn"]] = batch.create_job_queue(**request)["jobQueueArn"]
    return arns


@pytest.fixture
def moto_batch(monkeypatch):
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws(config={"batch": {"use_docker": False}}):
        yield boto3.client("batch", region_name="us-east-1")


def test_the_rule_is_botocores_and_metaflow_sends_no_share_identifier():
    from metaflow.plugins.aws.batch import batch_client

    model = botocore.session.get_session().get_service_model("batch")
    assert RULE in model.operation_model("SubmitJob").input_shape.members["shareIdentifier"].documentation
    assert "shareIdentifier" not in inspect.getsource(batch_client)  # Metaflow's @batch payload never carries one


@pytest.mark.parametrize("multi_node", [None, MultiNodeArgs(nodes=2)])
def test_metaflow_and_team_jobs_are_each_taken_by_the_queue_they_are_sent_to(render, moto_batch, multi_node):
    teams = (TeamArgs("ml-research", 12), TeamArgs("inference", 4))
    rendering, env = build(render, teams=teams, multi_node=multi_node)
    batch, arns = moto_batch, _replay(rendering)
    definition = batch.register_job_definition(
        jobDefinitionName="gpu-smoke", type="container", containerProperties={
            "image": "pytorch/pytorch", "command": ["nvidia-smi"],
            "resourceRequirements": [{"type": "GPU", "value": "1"}, {"type": "VCPU", "value": "2"},
                                     {"type": "MEMORY", "value": "8192"}]})["jobDefinitionArn"]
    queues = {q["jobQueueArn"]: q for q in batch.describe_job_queues()["jobQueues"]}
    by_name = {q["jobQueueName"]: q for q in queues.values()}
    policies = {p["arn"]: p for p in batch.describe_scheduling_policies(
        arns=[q["schedulingPolicyArn"] for q in queues.values() if q.get("schedulingPolicyArn")])["schedulingPolicies"]}
    items = _sync_await(env.outputs["teams"].future())
    for team in items:
        # as Metaflow's @batch submits: the queue its profile names (by name), no share identifier
        metaflow = {"jobName": "metaflow-step", "jobQueue": team["metaflowProfile"]["METAFLOW_BATCH_JOB_QUEUE"],
                    "jobDefinition": definition, "containerOverrides": {"command": ["python", "flow.py"]}}
        fifo = by_name[metaflow["jobQueue"]]
        assert fifo["jobQueueArn"] == arns[team["metaflowJobQueueArn"]]
        assert _batch_accepts(fifo, metaflow) and batch.submit_job(**metaflow)["jobId"]
        # as a team's user (and gpuready smoke --team) submits: the team's queue with its share identifier
        mine = {"jobName": "team-job", "jobQueue": arns[team["jobQueueArn"]], "jobDefinition": definition,
                "shareIdentifier": team["shareIdentifier"]}
        queue = queues[mine["jobQueue"]]
        assert _batch_accepts(queue, mine) and batch.submit_job(**mine)["jobId"]
        shares = policies[queue["schedulingPolicyArn"]]["fairsharePolicy"]["shareDistribution"]
        assert team["shareIdentifier"] in [s["shareIdentifier"] for s in shares]
        # the crossed submissions are what Batch refuses: why the FIFO queue stays beside the fair-share one
        assert not _batch_accepts(queue, {**metaflow, "jobQueue": mine["jobQueue"]})
        assert not _batch_accepts(fifo, {**mine, "jobQueue": metaflow["jobQueue"]})
        if multi_node is not None:
            gang = queues[arns[team["multiNodeJobQueueArn"]]]
            assert _batch_accepts(gang, mine) and gang["schedulingPolicyArn"]
    mf_multi = _sync_await(env.outputs["metaflowMultiNodeProfile"].future()) if multi_node else None
    if mf_multi:
        assert not by_name[mf_multi["METAFLOW_BATCH_JOB_QUEUE"]].get("schedulingPolicyArn")
