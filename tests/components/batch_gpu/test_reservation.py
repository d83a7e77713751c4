"""The GPU compute environment on an On-Demand Capacity Reservation: its launch template names the reservation,
checked against botocore's EC2 and Batch models and made in moto's server (launch template, then the compute
environment that launches from it); what Batch does not support is refused with one line."""

from __future__ import annotations

import contextlib
import datetime

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


_PREFERENCE = ("open names no reservation and targeted names one. Fix: give id or resource_group_arn (targeted), or "
               "neither (open)")
_OPEN_ONLY = ("reservation.only = True: an open preference launches on-demand when no matching reservation has room. "
              "Fix: target the reservation by id or resource_group_arn")
_SPOT = "a reservation is on-demand capacity, not Spot. Fix: use ['on-demand']"


@pytest.mark.parametrize("overrides, line", [
    ({"reservation": BatchReservationArgs(kind="capacity-block", id=ID)},
     "reservation.kind = 'capacity-block': AWS Batch ignores a launch template's instance market options (Batch user "
     "guide, launch-templates), so a Capacity Block's market type never reaches the instances. Fix: use an ODCR (kind "
     "odcr), or EKS (gpuready:platform eks) for a Capacity Block"),
    ({"reservation": BatchReservationArgs(kind="reserved", id=ID)},
     "reservation.kind = 'reserved': not a reservation kind Batch launches into. Fix: use odcr"),
    ({"reservation": BatchReservationArgs(id=ID), "capacity": ["spot", "on-demand"]}, f"capacity = ['spot', 'on-demand']: {_SPOT}"),
    ({"reservation": BatchReservationArgs(id=ID), "capacity": ["on-demand", "spot"]}, f"capacity = ['on-demand', 'spot']: {_SPOT}"),
    ({"reservation": BatchReservationArgs(id=ID), "capacity": ["spot"]}, f"capacity = ['spot']: {_SPOT}"),
    ({"reservation": BatchReservationArgs(id="cr-0123456789abcdef")},
     "reservation.id = 'cr-0123456789abcdef': not a capacity reservation id (cr- and 17 hex digits). Fix: copy the id "
     "from the EC2 console or `aws ec2 describe-capacity-reservations`"),
    ({"reservation": BatchReservationArgs(id=ID, resource_group_arn=GROUP)},
     f"reservation.id = '{ID}': an ODCR is targeted by an id or a resource group ARN, not both. Fix: keep one of id and "
     "resource_group_arn"),
    ({"reservation": BatchReservationArgs(resource_group_arn="gpus")},
     "reservation.resource_group_arn = 'gpus': not a resource group ARN. Fix: use "
     "arn:aws:resource-groups:REGION:ACCOUNT:group/NAME"),
    ({"reservation": BatchReservationArgs(preference="closed")},
     "reservation.preference = 'closed': not an ODCR preference. Fix: use open or targeted"),
    ({"reservation": BatchReservationArgs(id=ID, preference="open")}, f"reservation.preference = 'open': {_PREFERENCE}"),
    ({"reservation": BatchReservationArgs(resource_group_arn=GROUP, preference="open")},
     f"reservation.preference = 'open': {_PREFERENCE}"),
    ({"reservation": BatchReservationArgs(preference="targeted")}, f"reservation.preference = 'targeted': {_PREFERENCE}"),
    ({"reservation": BatchReservationArgs(preference="open", only=True)}, _OPEN_ONLY),
    ({"reservation": BatchReservationArgs(only=True)}, _OPEN_ONLY),
    ({"reservation": BatchReservationArgs(id=ID, instance_type="p5.48xlarge")},
     "instance_types = ['g6.xlarge', 'g6.12xlarge']: the reservation holds p5.48xlarge only. Fix: add p5.48xlarge to "
     "instance_types"),
    ({"reservation": BatchReservationArgs(id=ID, count=0)},
     "reservation.count = 0: a reservation holds 1 instance or more. Fix: set the reserved instance count, or leave it "
     "out"),
    ({"reservation": BatchReservationArgs(id=ID, instance_type="g6.12xlarge", count=2, only=True), "max_vcpus": 97},
     "max_vcpus = 97: the reservation (only: true) holds 2 instances of 48 vCPUs, so the vCPUs past them never come. "
     "Fix: set max_vcpus to 96 or less"),
    ({"reservation": BatchReservationArgs(id=ID, start="soon")},
     "reservation.start = 'soon': not an ISO date. Fix: write it like 2026-12-31 or 2026-12-31T11:30:00Z"),
    ({"reservation": BatchReservationArgs(id=ID, end="2020-01-01")},
     "reservation.end = '2020-01-01': the reservation has ended. Fix: name a current reservation, or remove reservation"),
])
def test_each_refusal_is_one_whole_line_naming_the_value_and_the_fix(overrides, line):
    with pytest.raises(ConfigError) as error:
        check(args(**overrides))
    assert str(error.value) == line


@pytest.mark.parametrize("res, max_vcpus", [
    (BatchReservationArgs(id=ID, instance_type="g6.12xlarge", count=2, only=True), 96),  # exactly the reserved vCPUs
    (BatchReservationArgs(id=ID, instance_type="g6.12xlarge", count=1), 96),  # not only: on-demand past it
    (BatchReservationArgs(resource_group_arn=GROUP, instance_type="g6.12xlarge", count=1, only=True), 48),
    (BatchReservationArgs(id=ID, instance_type="g6.12xlarge", count=1, only=True, preference="targeted"), 48),
    (BatchReservationArgs(preference="open", count=1), 64),
])
def test_a_reservation_at_each_limit_is_accepted(res, max_vcpus):
    check(args(reservation=res, max_vcpus=max_vcpus))


def test_the_output_and_the_description_tell_the_target():
    res = BatchReservationArgs(resource_group_arn=GROUP, instance_type="g6.12xlarge", availability_zone="us-east-1a",
                               count=2, start="2999-01-01", end="2999-02-01", only=True)
    assert reservation.output(res, "gpu-g6", ["us-east-1a"]) == {
        "pool": "gpu-g6", "kind": "odcr", "target": GROUP, "only": True, "start": "2999-01-01", "end": "2999-02-01",
        "count": 2, "zone": "us-east-1a", "subnetZones": ["us-east-1a"]}
    assert reservation.output(BatchReservationArgs(id=ID), "gpu") == {"pool": "gpu", "kind": "odcr", "target": ID,
                                                                      "only": False}
    assert [reservation.describe(r) for r in (BatchReservationArgs(id=ID), BatchReservationArgs(resource_group_arn=GROUP),
                                              BatchReservationArgs())] == [f"odcr {ID}", f"odcr {GROUP}", "odcr open"]
    assert reservation.stamps(None) == {}
    assert reservation.stamps(res) == {"reservations-only.gpuready.io": "true",
                                       "reservation-start.gpuready.io": "29990101t000000z",
                                       "reservation-end.gpuready.io": "29990201t000000z",
                                       "reservation-count.gpuready.io": "2"}


def test_an_end_is_read_against_the_clock_it_is_given():
    res = BatchReservationArgs(id=ID, end="2030-01-01T00:00:00Z")
    given = dict(capacity=["on-demand"], instance_types=["g6.xlarge"], rows=[], max_vcpus=64)
    reservation.check(res, **given, now=datetime.datetime(2029, 12, 31, 23, 59, 59, tzinfo=datetime.timezone.utc))
    with pytest.raises(ConfigError) as error:
        reservation.check(res, **given, now=datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc))
    assert str(error.value) == ("reservation.end = '2030-01-01T00:00:00Z': the reservation has ended. Fix: name a "
                                "current reservation, or remove reservation")
