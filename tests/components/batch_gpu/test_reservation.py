"""The GPU compute environment on an On-Demand Capacity Reservation: its launch template names the reservation,
checked against botocore's EC2 and Batch models and made in moto's server (launch template, then the compute
environment that launches from it); what Batch does not support is refused with one line."""

from __future__ import annotations

import contextlib

import boto3
import botocore.session
import pytest
from botocore.validate import ParamValidator
from moto import mock_aws

from gpuready_components.batch_gpu import BatchReservationArgs, CpuQueueArgs
from gpuready_components.batch_gpu import reservation
from gpuready_components.batch_gpu.validation import check
from gpuready_components.errors import ConfigError
from tests.conftest import one

from .helpers import CE, LT, args, build

ID = "cr-0123456789abcdef0"
GROUP = "arn:aws:resource-groups:us-east-1:123456789012:group/gpus"
SESSION = botocore.session.get_session()
EC2, BATCH = SESSION.get_service_model("ec2"), SESSION.get_service_model("batch")


def _ec2(value):
    """Pulumi's launch template inputs in EC2's member names (camelCase -> PascalCase)."""
    if isinstance(value, dict):
        return {k[0].upper() + k[1:]: _ec2(v) for k, v in value.items()}
    return value


def _template_data(lt) -> dict:
    return {"CapacityReservationSpecification": _ec2(lt.inputs["capacityReservationSpecification"])}


@pytest.mark.parametrize("res, spec", [
    (BatchReservationArgs(id=ID), {"capacityReservationTarget": {"capacityReservationId": ID}}),
    (BatchReservationArgs(resource_group_arn=GROUP), {"capacityReservationTarget": {
        "capacityReservationResourceGroupArn": GROUP}}),
    (BatchReservationArgs(resource_group_arn=GROUP, only=True), {
        "capacityReservationPreference": "capacity-reservations-only",
        "capacityReservationTarget": {"capacityReservationResourceGroupArn": GROUP}}),
    (BatchReservationArgs(preference="open"), {"capacityReservationPreference": "open"}),
])
def test_the_gpu_template_names_the_reservation_as_ec2s_model_has_it(render, res, spec):
    rendering, _ = build(render, reservation=res)
    lt = one(rendering, LT, "gpu-gpu")
    assert lt.inputs["capacityReservationSpecification"] == spec
    assert "instanceMarketOptions" not in lt.inputs  # Batch ignores market options: none is written
    report = ParamValidator().validate({"LaunchTemplateName": lt.name, "LaunchTemplateData": _template_data(lt)},
                                       EC2.operation_model("CreateLaunchTemplate").input_shape)
    assert not report.has_errors(), report.generate_report()
    preference = EC2.shape_for("LaunchTemplateCapacityReservationSpecificationRequest").members[
        "CapacityReservationPreference"]
    assert spec.get("capacityReservationPreference", "open") in preference.enum


def test_the_environment_carries_the_reservations_stamps_and_the_cpu_queue_launches_outside_it(render):
    res = BatchReservationArgs(id=ID, instance_type="g6.12xlarge", count=2, end="2999-01-01", only=True)
    rendering, _ = build(render, reservation=res, instance_types=["g6.12xlarge"], max_vcpus=96,
                         cpu_queue=CpuQueueArgs())
    tags = one(rendering, CE, "gpu-gpu-on-demand").inputs["tags"]
    assert tags["reservations-only.gpuready.io"] == "true" and tags["reservation-count.gpuready.io"] == "2"
    assert tags["reservation-end.gpuready.io"] == "29990101t000000z"
    assert "capacityReservationSpecification" not in one(rendering, LT, "gpu-cpu").inputs
    cpu = [e for e in rendering.of_type(CE) if e.name.startswith("gpu-cpu")]
    assert cpu and all("reservations-only.gpuready.io" not in e.inputs["tags"] for e in cpu)


def test_no_reservation_leaves_the_template_alone(render):
    rendering, _ = build(render)
    assert "capacityReservationSpecification" not in one(rendering, LT, "gpu-gpu").inputs


@mock_aws
def test_moto_makes_the_template_and_the_environment_that_launches_from_it(render):
    rendering, _ = build(render, reservation=BatchReservationArgs(id=ID))
    lt, env = one(rendering, LT, "gpu-gpu"), one(rendering, CE, "gpu-gpu-on-demand")
    ec2, iam, batch = (boto3.client(s, region_name="us-east-1") for s in ("ec2", "iam", "batch"))
    template = ec2.create_launch_template(LaunchTemplateName=lt.name,
                                          LaunchTemplateData=_template_data(lt))["LaunchTemplate"]
    vpc = ec2.create_vpc(CidrBlock="10.42.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.42.0.0/20")["Subnet"]["SubnetId"]
    group = ec2.create_security_group(GroupName="gpu", Description="gpu", VpcId=vpc)["GroupId"]
    role = iam.create_role(RoleName="batch", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    profile = iam.create_instance_profile(InstanceProfileName="ecs")["InstanceProfile"]["Arn"]
    res = env.inputs["computeResources"]
    request = {"computeEnvironmentName": env.name, "type": env.inputs["type"], "state": env.inputs["state"],
               "serviceRole": role,
               "computeResources": {"type": res["type"], "allocationStrategy": res["allocationStrategy"],
                                    "minvCpus": int(res["minVcpus"]), "maxvCpus": int(res["maxVcpus"]),
                                    "instanceTypes": res["instanceTypes"], "subnets": [subnet],
                                    "securityGroupIds": [group], "instanceRole": profile,
                                    "launchTemplate": {"launchTemplateId": template["LaunchTemplateId"],
                                                       "version": "$Latest"}}}
    report = ParamValidator().validate(request, BATCH.operation_model("CreateComputeEnvironment").input_shape)
    assert not report.has_errors(), report.generate_report()
    batch.create_compute_environment(**request)
    (made,) = batch.describe_compute_environments(computeEnvironments=[env.name])["computeEnvironments"]
    assert made["computeResources"]["launchTemplate"]["launchTemplateId"] == template["LaunchTemplateId"]
    assert made["computeResources"]["type"] == "EC2"  # on-demand: the reservation's purchase option
    (version,) = ec2.describe_launch_template_versions(LaunchTemplateId=template["LaunchTemplateId"])[
        "LaunchTemplateVersions"]
    assert version["LaunchTemplateData"]["CapacityReservationSpecification"] == {
        "CapacityReservationTarget": {"CapacityReservationId": ID}}


def test_batch_takes_a_launch_template_but_no_market_type_of_its_own():
    """Batch's compute resource names a launch template and its own purchase option (``type``): no market type a
    Capacity Block needs has a place there (botocore ``ComputeResource``, ``CRType``)."""
    resource = BATCH.shape_for("ComputeResource")
    assert "launchTemplate" in resource.members and "instanceMarketOptions" not in resource.members
    assert {"EC2", "SPOT"} <= set(BATCH.shape_for("CRType").enum)
    assert "capacity-block" in EC2.shape_for("MarketType").enum  # EC2 has it; Batch ignores a template's


@pytest.mark.parametrize("overrides, field, words", [
    ({"reservation": BatchReservationArgs(kind="capacity-block", id=ID)}, "reservation.kind", "ignores"),
    ({"reservation": BatchReservationArgs(id=ID), "capacity": ["spot", "on-demand"]}, "capacity", "not Spot"),
    ({"reservation": BatchReservationArgs(id=ID, instance_type="p5.48xlarge")}, "instance_types",
     "holds p5.48xlarge only"),
    ({"reservation": BatchReservationArgs(preference="open", only=True)}, "reservation.only", "open"),
    ({"reservation": BatchReservationArgs(id=ID, resource_group_arn=GROUP)}, "reservation.id", "not both"),
    ({"reservation": BatchReservationArgs(id="cr-1")}, "reservation.id", "17 hex"),
    ({"reservation": BatchReservationArgs(id=ID, preference="open")}, "reservation.preference", "open names"),
    ({"reservation": BatchReservationArgs(id=ID, instance_type="g6.12xlarge", count=1, only=True),
      "max_vcpus": 96}, "max_vcpus", "never come"),
    ({"reservation": BatchReservationArgs(id=ID, end="2020-01-01")}, "reservation.end", "ended"),
    ({"reservation": BatchReservationArgs(id=ID, start="2999-02-01", end="2999-01-01")}, "reservation.start",
     "not before"),
])
def test_what_batch_cannot_launch_into_is_refused_in_one_line(overrides, field, words):
    with pytest.raises(ConfigError) as error:
        check(args(**overrides))
    assert error.value.field == field and words in str(error.value) and "\n" not in str(error.value)


def test_capacity_blocks_are_the_one_kind_refused_for_a_reason():
    assert set(reservation.UNSUPPORTED) == {"capacity-block"}


@pytest.mark.parametrize("id, refused", [
    ("cr-0123456789abcdef0", False),  # EC2's shape: cr- and 17 hex digits
    ("cr-01234567", True),  # 8 hex digits (an EC2 id of the old, short form: reservations never had it)
    ("cr-0123456789abcdef", True), ("cr-0123456789abcdef01", True),  # 16 and 18
    ("cr-0123456789ABCDEF0", True), ("cr-0123456789abcdeg0", True),  # upper case, not hex
])
def test_a_reservation_id_is_cr_and_exactly_17_hex_digits(id, refused):
    with pytest.raises(ConfigError) if refused else contextlib.nullcontext() as error:
        check(args(reservation=BatchReservationArgs(id=id)))
    if refused:
        assert error.value.field == "reservation.id" and "17 hex digits" in str(error.value)


@pytest.mark.parametrize("start, refused", [("2999-01-01T00:00:00Z", True), ("2998-12-31T23:59:59Z", False)])
def test_a_reservation_must_start_before_it_ends_not_at_its_end(start, refused):
    res = BatchReservationArgs(id=ID, start=start, end="2999-01-01T00:00:00Z")
    with pytest.raises(ConfigError) if refused else contextlib.nullcontext() as error:
        check(args(reservation=res))
    if refused:
        assert error.value.field == "reservation.start" and "not before the end" in str(error.value)
