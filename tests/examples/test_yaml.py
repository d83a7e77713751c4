"""``examples/yaml``: the Pulumi YAML program a platform team writes with the component package (a VPC of plain
``aws:ec2`` resources, a Batch GPU environment and an EKS GPU cluster given its subnets' ids), checked as far as
can be done without the Pulumi CLI.

Its gpuready resources are checked against ``provider/schema.json`` (properties, required ones, types, enums, no
resource output in a plain property); then the program is run as the YAML language host runs it
(:mod:`tests.examples.yaml_host`) against the test's engine, each component constructed by ``provider/`` in its own
process over gRPC, under ``pulumi up`` and ``pulumi preview``; the plan ``gpuready plan`` words for what it
registered must be ``examples/expected-plan.txt``, with no mandatory policy violation.

Not verified here, for want of the Pulumi CLI and its YAML language host (neither can be installed offline):
Pulumi YAML's own parser, type checker and token resolution (``aws:ec2:Vpc`` is made ``aws:ec2/vpc:Vpc`` by the
rule the AWS schema follows), ``pulumi package add`` writing the ``packages:`` entry, the real engine's diff and
steps, the AWS provider's own checks of the VPC's inputs, and anything in a real account."""

from __future__ import annotations

import copy
import dataclasses
import json

import pytest

from tests.examples import plan, yaml_host
from tests.provider import engine

SCHEMA = json.loads((engine.PLUGIN / "schema.json").read_text())


@pytest.fixture(scope="module")
def program() -> yaml_host.Program:
    return yaml_host.load(plan.EXAMPLES / "yaml", plan.STACK)


@pytest.fixture(scope="module")
def up() -> plan.Planned:
    """The program under ``pulumi up``."""
    return plan.yaml_plan(preview=False)


@pytest.fixture(scope="module")
def preview() -> plan.Planned:
    """The program under ``pulumi preview``."""
    return plan.yaml_plan(preview=True)


def test_the_components_properties_are_what_the_schema_takes(program):
    components = [r["type"] for r in program.resources.values() if r["type"].startswith("gpuready:")]
    assert sorted(components) == ["gpuready:aws:BatchGpuEnvironment", "gpuready:aws:EksGpuCluster"]
    assert yaml_host.schema_errors(program, SCHEMA) == []
    assert program.project["packages"] == {"gpuready": "../../provider"}  # as `pulumi package add` records it


def test_the_schema_check_refuses_what_the_schema_does_not_take(program):
    project = copy.deepcopy(program.project)
    training = project["resources"]["training"]["properties"]
    training["maxVcpu"] = 8
    training["capacity"] = ["spot", "reserved"]
    training["job"]["gpus"] = "four"
    del training["instanceTypes"]
    project["resources"]["inference"]["properties"]["nodeGroup"]["maxSize"] = "${vpc.id}"
    broken = dataclasses.replace(program, project=project)
    assert sorted(yaml_host.schema_errors(broken, SCHEMA)) == sorted([
        "training: missing required property instanceTypes",
        "training.maxVcpu: not a property of the schema",
        "training.capacity[1]: 'reserved' is not one of ['on-demand', 'spot']",
        "training.job.gpus: 'four' is not a integer",
        "inference.nodeGroup.maxSize: a plain property takes no resource output (${vpc.id})",
    ])


def test_up_plans_the_expected_plan_with_no_mandatory_violation(up):
    result = up.result
    assert plan.text(result) == plan.EXPECTED.read_text(), \
        "the plan changed: if that is meant, regenerate it (see tests/examples/plan.py)"
    assert result.policy.policies and not result.policy.mandatory


def test_the_components_are_given_the_ids_of_the_subnets_and_vpc_the_program_created(up):
    result, run = up.result, up.run
    subnets = [run.resources["private-a"].id, run.resources["private-b"].id]
    assert all(s.startswith("subnet-") for s in subnets) and run.resources["vpc"].id.startswith("vpc-")
    for name in ("training-gpu-spot", "training-gpu-on-demand"):
        assert planned(result, "aws:batch/computeEnvironment:ComputeEnvironment", name).inputs[
            "computeResources"]["subnets"] == subnets
    assert planned(result, "aws:ec2/securityGroup:SecurityGroup", "training-instances").inputs["vpcId"] == \
        run.resources["vpc"].id
    assert planned(result, "aws:eks/cluster:Cluster", "inference").inputs["vpcConfig"]["subnetIds"] == subnets
    assert planned(result, "aws:eks/nodeGroup:NodeGroup", "inference-gpu").inputs["subnetIds"] == subnets


def planned(result, type_: str, name: str):
    (found,) = [r for r in result.resources if r.type == type_ and r.name == name]
    return found


def test_under_preview_the_subnet_ids_are_unknown_and_the_components_still_construct(up, preview):
    """``pulumi preview`` of a new stack: the VPC and subnets have no ids yet, so the components get unknown subnet
    ids (which the recorded inputs leave out, as ``gpuready plan``'s do), and the resources built from them still
    depend on the subnets; the components must construct the same resources, and answer the facts they know (the GPU
    caps) while what the cloud computes (the queue's ARN) stays unknown."""
    up_result, preview_result, preview_run = up.result, preview.result, preview.run
    assert [r.urn for r in preview_result.resources] == [r.urn for r in up_result.resources]
    subnets = {preview_run.resources["private-a"].urn, preview_run.resources["private-b"].urn}
    assert not preview_run.resources["private-a"].id
    rendered = {(r.type, r.name): r for r in preview.rendering.resources}
    assert subnets <= set(rendered["aws:batch/computeEnvironment:ComputeEnvironment", "training-gpu-spot"]
                          .property_dependencies["computeResources"])
    assert subnets == set(rendered["aws:eks/nodeGroup:NodeGroup", "inference-gpu"].property_dependencies["subnetIds"])
    environment = planned(preview_result, "aws:batch/computeEnvironment:ComputeEnvironment", "training-gpu-spot")
    assert "subnets" not in environment.inputs["computeResources"]
    assert "subnetIds" not in planned(preview_result, "aws:eks/nodeGroup:NodeGroup", "inference-gpu").inputs
    assert preview_run.outputs["jobQueueArn"] == yaml_host.UNKNOWN
    assert preview_run.outputs["trainingMaxGpus"] == up_result.outputs["trainingMaxGpus"] == 96
    assert preview_run.outputs["jobQueueName"] == "training-gpu"
    assert not preview_result.policy.mandatory


def test_a_changed_setting_changes_the_plan(program):
    """The comparison with the expected plan sees a setting's change: a smaller ``maxTrainingVcpus`` in the stack
    file caps both compute environments lower."""
    changed = dataclasses.replace(program, stack_config={**program.stack_config, "gpu-platform:maxTrainingVcpus": "96"})
    text = plan.text(plan.yaml_plan(program=changed).result)
    assert text != plan.EXPECTED.read_text()
    assert text.count("vcpus: 0-96") == 2 and "trainingMaxGpus: 48" in text
