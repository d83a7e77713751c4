"""Node groups on reserved capacity: a Capacity Block for ML and an On-Demand Capacity Reservation."""

from __future__ import annotations

import botocore.session
import pytest
from botocore.validate import ParamValidator

from gpuready_components.eks_gpu import CapacityReservationArgs
from gpuready_components import aws_reservations
from gpuready_components.eks_gpu import reservation
from gpuready_components.eks_gpu.validation import check
from gpuready_components.errors import ConfigError
from tests.conftest import one

from .helpers import LT, NODE_GROUP, args, build

BLOCK_ID = "cr-0123456789abcdef0"
BLOCK = {"instance_types": ["p5.48xlarge"], "max_size": 2,
         "reservation": CapacityReservationArgs(kind="capacity-block", id=BLOCK_ID, instance_type="p5.48xlarge",
                                                availability_zone="us-east-1a", count=2, end="2999-01-01")}
EKS = botocore.session.get_session().get_service_model("eks")
EC2 = botocore.session.get_session().get_service_model("ec2")


def test_a_capacity_block_group_is_capacity_block_and_its_template_names_the_block(render):
    rendering, eks = build(render, BLOCK)
    ng = one(rendering, NODE_GROUP, "ml-gpu")
    assert ng.inputs["capacityType"] == "CAPACITY_BLOCK"
    assert ng.inputs["instanceTypes"] == ["p5.48xlarge"]
    lt = one(rendering, LT, "ml-gpu")
    assert lt.inputs["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert lt.inputs["capacityReservationSpecification"] == {"capacityReservationTarget": {
        "capacityReservationId": BLOCK_ID}}
    assert "capacityReservationSpecification" not in one(rendering, LT, "ml-system").inputs


@pytest.mark.parametrize("res, spec", [
    (CapacityReservationArgs(kind="odcr", id=BLOCK_ID), {"capacityReservationTarget": {"capacityReservationId": BLOCK_ID}}),
    (CapacityReservationArgs(kind="odcr", resource_group_arn="arn:aws:resource-groups:us-east-1:123456789012:group/gpus"),
     {"capacityReservationTarget": {
         "capacityReservationResourceGroupArn": "arn:aws:resource-groups:us-east-1:123456789012:group/gpus"}}),
    (CapacityReservationArgs(kind="odcr", preference="open"), {"capacityReservationPreference": "open"}),
    (CapacityReservationArgs(kind="odcr", resource_group_arn="arn:aws:resource-groups:us-east-1:123456789012:group/gpus",
                             only=True),
     {"capacityReservationPreference": "capacity-reservations-only", "capacityReservationTarget": {
         "capacityReservationResourceGroupArn": "arn:aws:resource-groups:us-east-1:123456789012:group/gpus"}}),
])
def test_an_odcr_group_stays_on_demand_and_its_template_targets_or_opens(render, res, spec):
    rendering, _ = build(render, {"reservation": res})
    for suffix in ("", "-4x"):
        assert one(rendering, NODE_GROUP, f"ml-gpu{suffix}").inputs["capacityType"] == "ON_DEMAND"
    lt = one(rendering, LT, "ml-gpu")
    assert lt.inputs["capacityReservationSpecification"] == spec
    assert "instanceMarketOptions" not in lt.inputs


def test_no_reservation_leaves_the_template_alone(render):
    rendering, _ = build(render)
    lt = one(rendering, LT, "ml-gpu")
    assert "capacityReservationSpecification" not in lt.inputs and "instanceMarketOptions" not in lt.inputs
    assert one(rendering, NODE_GROUP, "ml-gpu").inputs["capacityType"] == "ON_DEMAND"


def test_every_value_emitted_is_in_the_vendors_models():
    # EKS CreateNodegroup capacityType: shape CapacityTypes.
    assert set(reservation.NODE_GROUP_CAPACITY_TYPE.values()) <= set(EKS.shape_for("CapacityTypes").enum)
    assert EKS.operation_model("CreateNodegroup").input_shape.members["capacityType"].name == "CapacityTypes"
    # EC2 LaunchTemplateInstanceMarketOptionsRequest.MarketType: shape MarketType.
    market = EC2.shape_for("LaunchTemplateInstanceMarketOptionsRequest").members["MarketType"]
    assert set(reservation.MARKET_TYPE.values()) <= set(market.enum)
    # LaunchTemplateCapacityReservationSpecificationRequest.CapacityReservationPreference.
    spec = EC2.shape_for("LaunchTemplateCapacityReservationSpecificationRequest")
    assert reservation.OPEN in spec.members["CapacityReservationPreference"].enum
    assert set(spec.members["CapacityReservationTarget"].members) == {"CapacityReservationId",
                                                                      "CapacityReservationResourceGroupArn"}


@pytest.mark.parametrize("node_group", [BLOCK, {"reservation": CapacityReservationArgs(kind="odcr", preference="open")},
                                        {"reservation": CapacityReservationArgs(
                                            kind="odcr", resource_group_arn="arn:aws:resource-groups:us-east-1:"
                                                                            "123456789012:group/gpus")},
                                        {"reservation": CapacityReservationArgs(
                                            kind="odcr", only=True, resource_group_arn="arn:aws:resource-groups:"
                                                                                      "us-east-1:123456789012:group/g")}])
def test_the_rendered_template_is_a_valid_create_launch_template_request(render, node_group):
    """The provider's field names map to EC2's RequestLaunchTemplateData members (camelCase -> PascalCase)."""
    lt = one(build(render, node_group)[0], LT, "ml-gpu")

    def ec2_names(value):
        if isinstance(value, dict):
            return {k[0].upper() + k[1:]: ec2_names(v) for k, v in value.items()}
        return value

    data = {key[0].upper() + key[1:]: ec2_names(lt.inputs[key])
            for key in ("capacityReservationSpecification", "instanceMarketOptions") if key in lt.inputs}
    assert data
    report = ParamValidator().validate({"LaunchTemplateName": lt.name, "LaunchTemplateData": data},
                                       EC2.operation_model("CreateLaunchTemplate").input_shape)
    assert not report.has_errors(), report.generate_report()


def _block(**changes):
    return CapacityReservationArgs(**{**dict(kind="capacity-block", id=BLOCK_ID), **changes})


@pytest.mark.parametrize("node_group, overrides, field, words", [
    ({**BLOCK, "capacity_type": "SPOT"}, {}, "node_group.capacity_type", "not Spot capacity"),
    ({"reservation": CapacityReservationArgs(kind="odcr", id=BLOCK_ID), "capacity_type": "SPOT"}, {},
     "node_group.capacity_type", "not Spot capacity"),
    ({"reservation": _block()}, {}, "node_group.instance_types", "one instance type"),
    ({**BLOCK, "instance_types": ["p4d.24xlarge"]}, {}, "node_group.instance_types", "holds p5.48xlarge only"),
    ({**BLOCK, "max_size": 3}, {}, "node_group.max_size", "holds 2 instances"),
    ({**BLOCK, "reservation": _block(end="2020-01-01")}, {}, "node_group.reservation.end", "has ended"),
    ({**BLOCK, "reservation": _block(end="soon")}, {}, "node_group.reservation.end", "not an ISO date"),
    ({**BLOCK, "reservation": _block(id="cr-123")}, {}, "node_group.reservation.id", "17 hex digits"),
    ({**BLOCK, "reservation": _block(id=None)}, {}, "node_group.reservation.id", "by its id alone"),
    ({**BLOCK, "reservation": _block(kind="reserved")}, {}, "node_group.reservation.kind", "not a reservation kind"),
    ({**BLOCK, "reservation": _block(count=0)}, {}, "node_group.reservation.count", "1 instance or more"),
    ({"reservation": CapacityReservationArgs(kind="odcr", id=BLOCK_ID, preference="open")}, {},
     "node_group.reservation.preference", "names none"),
    ({"reservation": CapacityReservationArgs(kind="odcr", preference="targeted")}, {},
     "node_group.reservation.preference", "needs the reservation"),
    ({"reservation": CapacityReservationArgs(kind="odcr", preference="closed")}, {},
     "node_group.reservation.preference", "not an ODCR preference"),
    ({"reservation": CapacityReservationArgs(kind="odcr", resource_group_arn="my-group")}, {},
     "node_group.reservation.resource_group_arn", "not a resource group ARN"),
    ({"reservation": CapacityReservationArgs(kind="odcr", id=BLOCK_ID,
                                             resource_group_arn="arn:aws:resource-groups:us-east-1:123456789012:group/g")},
     {}, "node_group.reservation.id", "not both"),
    ({"reservation": CapacityReservationArgs(kind="odcr", tags={"team": "ml"})}, {},
     "node_group.reservation.tags", "not by tags"),
    ({**BLOCK, "reservation": CapacityReservationArgs(kind="odcr", id=BLOCK_ID, count=1, only=True)}, {},
     "node_group.max_size", "only: true"),
    ({"reservation": CapacityReservationArgs(kind="odcr", only=True)}, {}, "node_group.reservation.only",
     "launches on-demand when no matching reservation has room"),
    ({**BLOCK, "reservation": _block(start="2999-02-01", end="2999-01-01")}, {}, "node_group.reservation.start",
     "not before the end 2999-01-01"),
    ({**BLOCK, "reservation": _block(start="next week")}, {}, "node_group.reservation.start", "not an ISO date"),
])
def test_impossible_reservations_are_refused(node_group, overrides, field, words):
    with pytest.raises(ConfigError) as error:
        check(args(node_group, **overrides))
    assert error.value.field == field
    assert words in str(error.value) and error.value.fix
    assert "\n" not in str(error.value)


def test_an_odcr_smaller_than_max_size_is_accepted_the_reservation_may_grow():
    check(args({"reservation": CapacityReservationArgs(kind="odcr", id=BLOCK_ID, count=1)}))


def test_the_reservation_id_shape_is_ec2s():
    assert aws_reservations.RESERVATION_ID.fullmatch(BLOCK_ID)
    assert not aws_reservations.RESERVATION_ID.fullmatch("cr-0123456789ABCDEF0")
    assert reservation.describe(_block()) == f"capacity-block {BLOCK_ID}"
    assert reservation.describe(CapacityReservationArgs(kind="odcr")) == "odcr open"


def test_the_groups_carry_the_reservations_known_facts_as_tags_for_plan_and_policy(render):
    block = CapacityReservationArgs(kind="capacity-block", id=BLOCK_ID, instance_type="p5.48xlarge", count=2,
                                    start="2026-11-20T11:30:00Z", end="2999-01-01", only=True)
    rendering, _ = build(render, {**BLOCK, "reservation": block})
    tags = one(rendering, NODE_GROUP, "ml-gpu").inputs["tags"]
    assert {k: v for k, v in tags.items() if k.endswith("gpuready.io")} == {
        "reservations-only.gpuready.io": "true", "reservation-start.gpuready.io": "20261120t113000z",
        "reservation-end.gpuready.io": "29990101t000000z", "reservation-count.gpuready.io": "2"}
    # Tag values EC2/EKS accept (botocore TagValue: at most 256 characters; the stamps are letters and digits).
    value = EKS.shape_for("TagValue")
    assert all(len(v) <= value.metadata["max"] for v in tags.values())
    assert not any(k.endswith("gpuready.io") for k in one(rendering, NODE_GROUP, "ml-system").inputs["tags"])
