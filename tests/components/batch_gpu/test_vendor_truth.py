"""Every value the component sends that AWS constrains, checked against botocore's service models."""

from __future__ import annotations

import json
import re

import botocore.session
import pytest
from botocore.validate import ParamValidator

from gpuready_components import catalog
from gpuready_components.aws_instances import ENA_ONLY_FIRST_CARD
from gpuready_components.batch_gpu import CpuQueueArgs, MultiNodeArgs, facts
from gpuready_components.batch_gpu.shares import ALPHANUMERIC
from gpuready_components.teams import TeamArgs

from .helpers import CE, JOB, LT, POLICY, QUEUE, build, container

TEAMS = (TeamArgs("ml-research", 6, weight=2), TeamArgs("inference", 9), TeamArgs("scavenger", 0))


@pytest.fixture(scope="module")
def batch():
    return botocore.session.get_session().get_service_model("batch")


@pytest.fixture(scope="module")
def ec2():
    return botocore.session.get_session().get_service_model("ec2")


def _valid(model, operation: str, params: dict) -> None:
    report = ParamValidator().validate(params, model.operation_model(operation).input_shape)
    assert not report.has_errors(), report.generate_report()


def test_capacity_types_and_strategies_are_batch_enums(batch):
    for resource_type, strategy in facts.CAPACITY.values():
        assert resource_type in batch.shape_for("CRType").enum
        assert strategy in batch.shape_for("CRAllocationStrategy").enum


def test_image_types_are_documented_batch_image_types(batch):
    documented = set(re.findall(r"<dt>(ECS_[A-Z0-9_]+)</dt>",
                                batch.shape_for("Ec2Configuration").members["imageType"].documentation))
    assert {*facts.GPU_IMAGE_TYPES, facts.CPU_IMAGE_TYPE} <= documented
    assert all("NVIDIA" in t for t in facts.GPU_IMAGE_TYPES)


def test_unsupported_families_match_the_documentation(batch):
    doc = batch.shape_for("Ec2Configuration").members["imageType"].documentation
    assert "ECS_AL2023_NVIDIA doesn't support <code>p3</code> and <code>g3</code>" in doc
    assert facts.AL2_BLOCKED_FROM == "2026-06-30" and "June 30, 2026" in doc


def test_runnable_limits_match_the_model(batch):
    doc = batch.shape_for("JobStateTimeLimitAction").members["maxTimeSeconds"].documentation
    assert "minimum value is 600" in doc and "maximum value is 86,400" in doc
    assert facts.RUNNABLE_SECONDS_RANGE == (600, 86_400)
    assert "CANCEL" in batch.shape_for("JobStateTimeLimitActionsAction").enum
    assert "RUNNABLE" in batch.shape_for("JobStateTimeLimitActionsState").enum


def test_every_catalog_aws_type_is_an_ec2_instance_type(ec2):
    assert {r.name for r in catalog.rows() if r.cloud == "aws"} <= set(ec2.shape_for("InstanceType").enum)
    assert set(CpuQueueArgs().instance_types) <= set(ec2.shape_for("InstanceType").enum)


def _compute_environment_request(env) -> dict:
    """The CreateComputeEnvironment request the provider would send for a rendered environment."""
    res = env.inputs["computeResources"]
    resources = {
        "type": res["type"], "allocationStrategy": res["allocationStrategy"],
        "minvCpus": int(res["minVcpus"]), "maxvCpus": int(res["maxVcpus"]),
        "instanceTypes": res["instanceTypes"], "subnets": res["subnets"], "instanceRole": res["instanceRole"],
        "launchTemplate": res["launchTemplate"], "ec2Configuration": res["ec2Configurations"], "tags": res["tags"],
    }
    for key in ("placementGroup", "spotIamFleetRole", "securityGroupIds"):
        if key in res:
            resources[key] = res[key]
    return {"computeEnvironmentName": env.name, "type": env.inputs["type"], "state": env.inputs["state"],
            "computeResources": resources, "tags": env.inputs["tags"]}


@pytest.mark.parametrize("overrides", [{}, {"capacity": ["spot", "on-demand"], "cpu_queue": CpuQueueArgs()},
                                       {"multi_node": MultiNodeArgs(nodes=2)},
                                       {"multi_node": MultiNodeArgs(efa_interfaces=0)},
                                       {"instance_types": ["p5.48xlarge"], "max_vcpus": 192,
                                        "multi_node": MultiNodeArgs()},
                                       {"instance_types": ["p6-b300.48xlarge"], "max_vcpus": 192,
                                        "multi_node": MultiNodeArgs()},
                                       {"multi_node": MultiNodeArgs(), "teams": TEAMS,
                                        "fair_share_compute_reservation": 99, "fair_share_decay_seconds": 604_800}])
def test_rendered_resources_are_valid_batch_api_requests(render, batch, overrides):
    rendering, _ = build(render, **overrides)
    for env in rendering.of_type(CE):
        request = _compute_environment_request(env)
        _valid(batch, "CreateComputeEnvironment", request)
        if "updatePolicy" in env.inputs:  # the provider sends it with UpdateComputeEnvironment
            policy = {k: int(v) if isinstance(v, float) else v for k, v in env.inputs["updatePolicy"].items()}
            _valid(batch, "UpdateComputeEnvironment", {"computeEnvironment": env.name, "updatePolicy": policy})
        assert request["computeResources"]["type"] in batch.shape_for("CRType").enum
        assert request["computeResources"]["allocationStrategy"] in batch.shape_for("CRAllocationStrategy").enum
    for queue in rendering.of_type(QUEUE):
        _valid(batch, "CreateJobQueue", _job_queue_request(queue))
    for policy in rendering.of_type(POLICY):
        _valid(batch, "CreateSchedulingPolicy", scheduling_policy_request(policy))
    for job in rendering.of_type(JOB):
        request = {"jobDefinitionName": job.name, "type": job.inputs["type"],
                   "platformCapabilities": job.inputs["platformCapabilities"],
                   "timeout": {"attemptDurationSeconds": int(job.inputs["timeout"]["attemptDurationSeconds"])}}
        if job.inputs["type"] == "container":
            request["containerProperties"] = container(job)
            requirements = request["containerProperties"]["resourceRequirements"]
        else:
            request["nodeProperties"] = json.loads(job.inputs["nodeProperties"])
            requirements = request["nodeProperties"]["nodeRangeProperties"][0]["container"]["resourceRequirements"]
        _valid(batch, "RegisterJobDefinition", request)
        assert {r["type"] for r in requirements} <= set(batch.shape_for("ResourceType").enum)
        log_driver = (request.get("containerProperties") or
                      request["nodeProperties"]["nodeRangeProperties"][0]["container"])["logConfiguration"]
        assert log_driver["logDriver"] in batch.shape_for("LogDriver").enum


def _job_queue_request(queue) -> dict:
    """The CreateJobQueue request the provider would send for a rendered queue."""
    request = {
        "jobQueueName": queue.name, "state": queue.inputs["state"], "priority": int(queue.inputs["priority"]),
        "computeEnvironmentOrder": [{"order": int(o["order"]), "computeEnvironment": o["computeEnvironment"]}
                                    for o in queue.inputs["computeEnvironmentOrders"]],
        "jobStateTimeLimitActions": [{**a, "maxTimeSeconds": int(a["maxTimeSeconds"])}
                                     for a in queue.inputs.get("jobStateTimeLimitActions", [])]}
    if "schedulingPolicyArn" in queue.inputs:
        request["schedulingPolicyArn"] = queue.inputs["schedulingPolicyArn"]
    return request


def scheduling_policy_request(policy) -> dict:
    """The CreateSchedulingPolicy request the provider would send for a rendered policy."""
    fair = policy.inputs["fairSharePolicy"]
    return {"name": policy.name, "tags": policy.inputs["tags"], "fairsharePolicy": {
        "computeReservation": int(fair["computeReservation"]), "shareDecaySeconds": int(fair["shareDecaySeconds"]),
        "shareDistribution": [{"shareIdentifier": s["shareIdentifier"], "weightFactor": float(s["weightFactor"])}
                              for s in fair["shareDistributions"]]}}


def test_fair_share_bounds_are_batchs(batch):
    share = batch.shape_for("ShareAttributes").members
    assert "smallest supported value is 0.0001, and the largest supported value is 999.9999" in \
        share["weightFactor"].documentation and facts.SHARE_WEIGHT_RANGE == (0.0001, 999.9999)
    assert "A lower value has a higher priority for compute resources" in share["weightFactor"].documentation
    assert "limited to 255 alphanumeric characters" in share["shareIdentifier"].documentation
    assert facts.SHARE_IDENTIFIER_MOST == 255
    fair = batch.shape_for("FairsharePolicy").members
    assert "The minimum value is 0 and the maximum value is 99" in fair["computeReservation"].documentation
    assert facts.COMPUTE_RESERVATION_RANGE == (0, 99)
    assert "A value of zero (0) indicates the default minimum time window (600 seconds). The maximum supported " \
        "value is 604800" in fair["shareDecaySeconds"].documentation
    assert facts.SHARE_DECAY_SECONDS_RANGE == (0, 604_800)
    assert facts.DEFAULT_SHARE_DECAY_SECONDS > 600  # over the minimum window the documentation says to raise


@pytest.mark.parametrize("teams", [TEAMS, (TeamArgs("big", 15, weight=66), TeamArgs("tiny", 1))])
def test_rendered_shares_are_within_batchs_bounds(render, batch, teams):
    rendering, _ = build(render, teams=teams)
    (policy,) = rendering.of_type(POLICY)
    low, high = facts.SHARE_WEIGHT_RANGE
    distribution = scheduling_policy_request(policy)["fairsharePolicy"]["shareDistribution"]
    assert len(distribution) == len(teams)
    for share in distribution:
        assert low <= share["weightFactor"] <= high and round(share["weightFactor"], 4) == share["weightFactor"]
        assert ALPHANUMERIC.fullmatch(share["shareIdentifier"]) and len(share["shareIdentifier"]) <= 255


def test_two_queues_because_a_fair_share_queue_wants_a_share_identifier_and_a_fifo_queue_gets_no_policy(batch):
    """The two facts behind the design: SubmitJob on a fair-share queue must name a share (Metaflow's @batch names
    none), and a FIFO queue cannot be given a policy later (so the existing GPU queue would be replaced)."""
    submit = batch.operation_model("SubmitJob").input_shape.members["shareIdentifier"].documentation
    assert "If the job queue has a fair-share scheduling policy, then this parameter must be specified" in submit
    assert "Don't specify this parameter if the job queue doesn't have a fair-share scheduling policy" in submit
    create = batch.operation_model("CreateJobQueue").input_shape.members
    assert "can't have a fair-share scheduling policy added" in create["schedulingPolicyArn"].documentation
    assert "a job queue with a priority value of <code>10</code> is given scheduling preference over a job queue " \
        "with a priority value of <code>1</code>" in create["priority"].documentation
    assert facts.TEAMS_QUEUE_PRIORITY > facts.QUEUE_PRIORITY


def test_omitting_the_service_role_is_batchs_service_linked_role(batch):
    doc = batch.operation_model("CreateComputeEnvironment").input_shape.members["serviceRole"].documentation
    assert "that role is used by default for your compute environment unless you specify a different role" in doc
    assert "serviceRole" not in batch.operation_model("CreateComputeEnvironment").input_shape.required_members
    update = batch.operation_model("UpdateComputeEnvironment").input_shape.members["serviceRole"].documentation
    assert "<b>AWSServiceRoleForBatch</b> service-linked role must be used" in update


def test_job_role_is_a_container_property_assumed_as_an_ecs_task(batch):
    assert "jobRoleArn" in batch.shape_for("ContainerProperties").members
    assert "task-iam-roles" in batch.shape_for("ContainerProperties").members["jobRoleArn"].documentation
    assert facts.JOB_ROLE_PRINCIPAL == "ecs-tasks.amazonaws.com"


def test_launch_template_values_are_ec2_enums(render, ec2):
    rendering, _ = build(render)
    (template,) = rendering.of_type(LT)
    options = template.inputs["metadataOptions"]
    request = {"LaunchTemplateName": "t", "LaunchTemplateData": {"MetadataOptions": {
        "HttpTokens": options["httpTokens"], "HttpEndpoint": options["httpEndpoint"],
        "HttpPutResponseHopLimit": int(options["httpPutResponseHopLimit"])}}}
    _valid(ec2, "CreateLaunchTemplate", request)
    assert int(options["httpPutResponseHopLimit"]) == facts.IMDS_HOP_LIMIT == 1
    assert template.inputs["metadataOptions"]["httpTokens"] in ec2.shape_for("HttpTokensState").enum
    assert template.inputs["blockDeviceMappings"][0]["ebs"]["volumeType"] in ec2.shape_for("VolumeType").enum
    group = rendering.of_type("aws:ec2/placementGroup:PlacementGroup")
    assert not group
    multi, _ = build(render, multi_node=MultiNodeArgs())
    strategy = multi.of_type("aws:ec2/placementGroup:PlacementGroup")[0].inputs["strategy"]
    assert strategy in ec2.shape_for("PlacementStrategy").enum


def _launch_template_request(template) -> dict:
    """The CreateLaunchTemplate request the provider would send for a rendered multi-node launch template."""
    data = {"MetadataOptions": {k[0].upper() + k[1:]: int(v) if isinstance(v, float) else v
                                for k, v in template.inputs["metadataOptions"].items()}}
    interfaces = template.inputs.get("networkInterfaces") or []
    if interfaces:
        data["NetworkInterfaces"] = [{
            "NetworkCardIndex": int(i["networkCardIndex"]), "DeviceIndex": int(i["deviceIndex"]),
            "InterfaceType": i["interfaceType"], "SubnetId": i["subnetId"], "Groups": i["securityGroups"],
            "DeleteOnTermination": i["deleteOnTermination"] == "true"} for i in interfaces]
    return {"LaunchTemplateName": template.name, "LaunchTemplateData": data}


@pytest.mark.parametrize("instance_type, cards", [("p5.48xlarge", 32), ("p6-b300.48xlarge", 17),
                                                  ("g6e.48xlarge", 4), ("g6.12xlarge", 1)])
def test_multi_node_launch_template_is_valid_and_fits_the_instances_network_cards(render, ec2, instance_type,
                                                                                    cards):
    """One interface per network card that EC2's data says the type has, each of a type that card takes: EFA on
    every card that takes EFA, and an ENA primary where card 0 takes no EFA (p6-b300)."""
    from tests.components.catalog.test_catalog import _moto_instance_types

    rendering, _ = build(render, instance_types=[instance_type], max_vcpus=192, multi_node=MultiNodeArgs())
    (template,) = [t for t in rendering.of_type(LT) if t.name == "gpu-multi-node"]
    request = _launch_template_request(template)
    _valid(ec2, "CreateLaunchTemplate", request)
    interfaces = request["LaunchTemplateData"]["NetworkInterfaces"]
    assert len(interfaces) == cards
    network = _moto_instance_types()[instance_type]["NetworkInfo"]
    by_card = {c["NetworkCardIndex"]: c for c in network["NetworkCards"]}
    assert len({i["NetworkCardIndex"] for i in interfaces}) == len(interfaces)  # one per card
    for i in interfaces:
        assert i["InterfaceType"] in by_card[i["NetworkCardIndex"]]["InterfaceTypes"]
        assert i["DeviceIndex"] == (0 if i["NetworkCardIndex"] == 0 else 1)
    assert sum(i["InterfaceType"] == "efa" for i in interfaces) == network["EfaInfo"]["MaximumEfaInterfaces"]
    assert {i["InterfaceType"] for i in interfaces} <= set(ec2.shape_for("NetworkInterfaceType").enum)


def test_ena_only_first_card_fact_matches_ec2_data():
    from tests.components.catalog.test_catalog import _moto_instance_types

    ec2_data = _moto_instance_types()
    ena_only = {r.name for r in catalog.rows() if r.cloud == "aws" and r.efa_interfaces and r.name in ec2_data and
                "efa" not in ec2_data[r.name]["NetworkInfo"]["NetworkCards"][0]["InterfaceTypes"]}
    assert ena_only == set(ENA_ONLY_FIRST_CARD)


def test_multi_node_job_definition_knobs_are_batch_shapes(batch):
    assert "sharedMemorySize" in batch.shape_for("LinuxParameters").members
    device = batch.shape_for("Device").members  # a device given by its host path alone: what Batch's EFA guide sets
    assert "By default, the <code>hostPath</code> value is used" in device["containerPath"].documentation
    assert "read</code>, <code>write</code>, and <code>mknod" in device["permissions"].documentation
    assert "memlock" in batch.shape_for("Ulimit").members["name"].documentation
