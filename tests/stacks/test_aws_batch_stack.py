"""The aws-batch reference stack: renders offline, exports what the smoke test reads, documents its keys."""

from __future__ import annotations

import pytest

from gpuready.plan.render import mock_id, render
from gpuready.project import find_project, load_stack_config
from tests.conftest import ROOT, non_camel_keys


@pytest.fixture(scope="module")
def rendering():
    project = find_project(ROOT)
    return render(project.main, project.name, "aws-batch", load_stack_config(project.stack_file("aws-batch"),
                                                                              project.name))


def test_reference_stack_builds_network_and_batch(rendering):
    types = [r.type for r in rendering.resources]
    assert types.count("gpuready:aws:BatchGpuEnvironment") == 1 and types.count("gpuready:aws:Network") == 1
    assert types.count("aws:ec2/natGateway:NatGateway") == 1
    (env,) = rendering.of_type("aws:batch/computeEnvironment:ComputeEnvironment")
    private = {mock_id(s.type, s.name) for s in rendering.of_type("aws:ec2/subnet:Subnet") if "private" in s.name}
    assert set(env.inputs["computeResources"]["subnets"]) == private
    assert all(not s.inputs["mapPublicIpOnLaunch"] for s in rendering.of_type("aws:ec2/subnet:Subnet"))


def test_reference_stack_exports_what_gpuready_smoke_reads(rendering):
    out = rendering.outputs
    assert out["platform"] == "aws-batch"
    assert {"jobQueueName", "jobQueueArn", "jobDefinitionArn", "computeEnvironmentArns", "logGroupName"} <= set(out)
    assert out["gpuModels"] == ["A10G", "L4"] and out["maxGpusPerInstance"] == 4 and out["maxTotalGpus"] == 16


def test_every_input_key_in_the_stack_tree_is_camel_case(rendering):
    for resource in rendering.resources:
        assert list(non_camel_keys(resource.inputs)) == [], resource.urn


def test_jobs_role_is_exported_and_takes_the_policies_of_its_key():
    project = find_project(ROOT)
    config = load_stack_config(project.stack_file("aws-batch"), project.name)
    config["gpuready:jobRolePolicyArns"] = '["arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess"]'
    rendering = render(project.main, project.name, "aws-batch", config)
    (role,) = [r for r in rendering.of_type("aws:iam/role:Role") if r.name == "gpu-job"]
    assert rendering.outputs["jobRoleArn"] == role.outputs["arn"]
    (attached,) = [a for a in rendering.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
                   if a.inputs["role"] == role.outputs["name"]]
    assert attached.inputs["policyArn"] == "arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess"
