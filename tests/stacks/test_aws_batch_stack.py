"""The aws-batch reference stack: renders offline, exports what the smoke test reads, documents its keys."""

from __future__ import annotations

import json

import botocore.session
import pytest

from gpuready_components import catalog

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


def _multinode(**changes):
    project = find_project(ROOT)
    config = load_stack_config(project.stack_file("aws-batch-multinode"), project.name)
    config.update({k: v if isinstance(v, str) else json.dumps(v) for k, v in changes.items()})
    return render(project.main, project.name, "aws-batch-multinode", config)


def test_multinode_reference_stack_builds_its_own_environment_in_one_private_subnet():
    rendering = _multinode()
    envs = {e.name: e for e in rendering.of_type("aws:batch/computeEnvironment:ComputeEnvironment")}
    assert set(envs) == {"gpu-gpu-on-demand", "gpu-multi-node"}
    first_private = mock_id("aws:ec2/subnet:Subnet", "gpu-private-0")
    assert envs["gpu-multi-node"].inputs["computeResources"]["subnets"] == [first_private]
    assert "placementGroup" not in envs["gpu-gpu-on-demand"].inputs["computeResources"]
    out = rendering.outputs
    assert (out["multiNodeNodes"], out["multiNodeGpusPerNode"], out["multiNodeInstanceTypes"],
            out["multiNodeEfaInterfaces"]) == (2, 8, ["p5.48xlarge"], 32)
    assert out["multiNodeJobQueueArn"] and out["multiNodeJobDefinitionArn"]


def test_the_aws_batch_guide_quotes_the_multinode_stacks_cost_from_the_catalog():
    readme = (ROOT / "docs" / "platforms" / "aws-batch.md").read_text()
    p5, g6 = catalog.lookup("aws", "p5.48xlarge"), catalog.lookup("aws", "g6.12xlarge")
    rendering = _multinode()
    assert f"${2 * p5.price_usd_hour:.2f}/h" in readme
    assert f"${rendering.outputs['maxUsdPerHour']:.2f}/h" in readme
    assert f"${2 * g6.price_usd_hour:.2f}/h for the pair" in readme
    stack_file = (ROOT / "stacks" / "Pulumi.aws-batch-multinode.yaml").read_text()
    assert f"${2 * p5.price_usd_hour:.2f}/h" in stack_file


def test_the_cheap_real_run_variant_renders_2_x_g6_12xlarge():
    rendering = _multinode(**{"gpuready:instanceTypes": ["g6.12xlarge"], "gpuready:maxVcpus": 48})
    out = rendering.outputs
    assert (out["multiNodeInstanceTypes"], out["multiNodeGpusPerNode"], out["multiNodeEfaInterfaces"]) == \
        (["g6.12xlarge"], 4, 1)


def test_multinode_reference_stack_renders_valid_batch_and_ec2_requests():
    """Acceptance: every request the multi-node stack would send for Batch and its launch templates is valid
    against botocore's service models."""
    import botocore.session

    from tests.components.batch_gpu.test_vendor_truth import (_compute_environment_request, _launch_template_request,
                                                              _valid)

    session = botocore.session.get_session()
    batch, ec2 = session.get_service_model("batch"), session.get_service_model("ec2")
    rendering = _multinode()
    for env in rendering.of_type("aws:batch/computeEnvironment:ComputeEnvironment"):
        _valid(batch, "CreateComputeEnvironment", _compute_environment_request(env))
    for queue in rendering.of_type("aws:batch/jobQueue:JobQueue"):
        _valid(batch, "CreateJobQueue", {
            "jobQueueName": queue.name, "state": queue.inputs["state"], "priority": int(queue.inputs["priority"]),
            "computeEnvironmentOrder": [{"order": int(o["order"]), "computeEnvironment": o["computeEnvironment"]}
                                        for o in queue.inputs["computeEnvironmentOrders"]],
            "jobStateTimeLimitActions": [{**a, "maxTimeSeconds": int(a["maxTimeSeconds"])}
                                         for a in queue.inputs["jobStateTimeLimitActions"]]})
    (multinode,) = [j for j in rendering.of_type("aws:batch/jobDefinition:JobDefinition")
                    if j.inputs["type"] == "multinode"]
    _valid(batch, "RegisterJobDefinition", {
        "jobDefinitionName": multinode.name, "type": "multinode", "platformCapabilities": ["EC2"],
        "nodeProperties": json.loads(multinode.inputs["nodeProperties"])})
    templates = rendering.of_type("aws:ec2/launchTemplate:LaunchTemplate")
    assert {t.name for t in templates} == {"gpu-gpu", "gpu-multi-node"}
    for template in templates:
        _valid(ec2, "CreateLaunchTemplate", _launch_template_request(template))


def test_the_smoke_probes_definition_built_from_this_stacks_multinode_definition_fits_batchs_limit():
    """`gpuready smoke --nodes 16` on the reference stack (p5.48xlarge, 32 EFA devices): the probe's job definition,
    built from the stack's own nodeProperties, is a valid RegisterJobDefinition request within its size limit."""
    from botocore.validate import ParamValidator

    from gpuready.smoke import batch_probe
    from tests.gpuready.smoke.test_batch_probe import LAUNCHER_SHARE

    (definition,) = [j for j in _multinode().of_type("aws:batch/jobDefinition:JobDefinition")
                     if j.inputs["type"] == "multinode"]
    stack_definition = {"jobDefinitionName": definition.outputs["name"], "type": "multinode",
                        "jobDefinitionArn": definition.outputs["arn"],
                        "nodeProperties": json.loads(definition.inputs["nodeProperties"]),
                        "platformCapabilities": ["EC2"], "tags": {"team": "ml-platform"}}
    request = batch_probe.multinode_definition(
        stack_definition, nodes=16, tags={"gpuready:smoke": "true", "gpuready:run": "gpuready-smoke-0123456789ab"},
        argv=["launch", "--nodes", "16", "--gpus-per-node", "8", "--transport", "efa", "--instance-type",
              "p5.48xlarge", "--full"])
    model = botocore.session.get_session().get_service_model("batch")
    errors = ParamValidator().validate(request, model.operation_model("RegisterJobDefinition").input_shape)
    assert not errors.has_errors(), errors.generate_report()
    assert len(request["nodeProperties"]["nodeRangeProperties"][0]["container"]["linuxParameters"]["devices"]) == 32
    assert batch_probe.size(request) <= LAUNCHER_SHARE * batch_probe.DEFINITION_LIMIT, batch_probe.size(request)


def test_reference_stack_shares_its_gpus_between_two_teams_and_keeps_metaflows_queue(rendering):
    queues = {q.name: q for q in rendering.of_type("aws:batch/jobQueue:JobQueue")}
    (policy,) = rendering.of_type("aws:batch/schedulingPolicy:SchedulingPolicy")
    assert "schedulingPolicyArn" not in queues["gpu-gpu"].inputs
    assert queues["gpu-gpu-teams"].inputs["schedulingPolicyArn"] == policy.outputs["arn"]
    teams = rendering.outputs["teams"]
    assert [(t["name"], t["shareIdentifier"], t["gpus"], t["weightFactor"]) for t in teams] == \
        [("research", "research", 12, 1.0), ("inference", "inference", 4, 3.0)]
    assert sum(t["gpus"] for t in teams) <= rendering.outputs["maxTotalGpus"]
    assert {t["jobQueueArn"] for t in teams} == {queues["gpu-gpu-teams"].outputs["arn"]}
    assert {t["metaflowJobQueueArn"] for t in teams} == {rendering.outputs["jobQueueArn"]}
    assert all(t["metaflowProfile"] == rendering.outputs["metaflowProfile"] for t in teams)


def _plan(tmp_path, stack: str, changes: dict) -> int:
    import yaml

    from gpuready.cli import main

    data = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    data["config"].update(changes)
    path = tmp_path / "Pulumi.custom.yaml"
    path.write_text(yaml.safe_dump(data))
    return main(["plan", "--stack-file", str(path), "--no-policies"])


@pytest.mark.parametrize("changes, key, says", [
    ({"gpuready:teams": [{"name": "ml-a", "gpus": 1}, {"name": "mla", "gpus": 1}]}, "gpuready:teams[1].name",
     "its share identifier mla is also that of teams[0] (ml-a)"),
    ({"gpuready:teams": [{"name": "research", "gpus": 4, "borrow": 4}]}, "gpuready:teams[0].borrow",
     "no per-team borrowing or lending limit"),
    ({"gpuready:teams": [{"name": "research", "gpus": 17}]}, "gpuready:teams[0].gpus",
     "more GPUs than its pools reach at full scale (16)"),
    ({"gpuready:teams": [{"name": "research", "gpus": 10}, {"name": "prod", "gpus": 10}]}, "gpuready:teams",
     "add up to more GPUs than the stack reaches at full scale (16)"),
    ({"gpuready:teams": [{"name": "research", "gpus": 1, "pools": ["spot"]}]}, "gpuready:teams[0].pools",
     "no GPU pool of the stack has this name"),
    ({"gpuready:teams": [{"gpus": 1}]}, "gpuready:teams[0].name", "required"),
    ({"gpuready:fairShareComputeReservation": 100}, "gpuready:fairShareComputeReservation", "from 0 to 99"),
    ({"gpuready:fairShareDecaySeconds": -1}, "gpuready:fairShareDecaySeconds", "from 0 to 604800"),
])
def test_team_mistakes_name_the_key_the_user_typed(tmp_path, capsys, changes, key, says):
    code = _plan(tmp_path, "aws-batch", changes)
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(f"gpuready: plan: {key}") and says in err, err
    assert len(err.strip().splitlines()) == 1, err


def test_overcommit_quotas_lets_the_teams_ask_for_more_than_the_stack_reaches(tmp_path, capsys):
    teams = [{"name": "research", "gpus": 10}, {"name": "prod", "gpus": 10}]
    assert _plan(tmp_path, "aws-batch", {"gpuready:teams": teams, "gpuready:overcommitQuotas": True}) == 0
