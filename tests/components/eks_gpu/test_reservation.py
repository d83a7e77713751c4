"""Node groups on reserved capacity: a Capacity Block for ML and an On-Demand Capacity Reservation."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime

import botocore.session
import pytest
from botocore.validate import ParamValidator

from gpuready_components.eks_gpu import AutoscalerArgs, CapacityReservationArgs
from gpuready_components import aws_reservations
from gpuready_components.aws_network.capacity_blocks import BlockFacts, BlockPool
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


KARPENTER = {"autoscaler": AutoscalerArgs(mode="karpenter")}
AUTO_MODE = {"autoscaler": AutoscalerArgs(mode="auto-mode")}
ARN = "arn:aws:resource-groups:us-east-1:123456789012:group/g"
P5 = {"instance_types": ["p5.48xlarge"], "max_size": 2}
_TYPE = "node_group.capacity_type = 'SPOT': "
_ON_DEMAND = "Fix: use ON_DEMAND (the reservation sets the node group's capacity type)"
_ONE_ID = ("a Capacity Block is launched into by its id alone. Fix: set id to the block's cr-... id (no "
           "resource_group_arn, no preference)")
_TAGS = ("tags select ODCRs instead of an id. Fix: give an ODCR's id or a non-empty map of its tags, not both (a "
         "Capacity Block: its id)")
_NEVER = "instances, so the nodes past them never come. Fix: set max_size to 1 or less"


@pytest.mark.parametrize("node_group, overrides, line", [
    ({"reservation": CapacityReservationArgs(kind="reserved", id=BLOCK_ID)}, {},
     "node_group.reservation.kind = 'reserved': not a reservation kind. Fix: use capacity-block or odcr"),
    ({"reservation": _block(), "capacity_type": "SPOT"}, {}, f"{_TYPE}a Capacity Block is not Spot capacity. {_ON_DEMAND}"),
    ({"reservation": CapacityReservationArgs(kind="odcr", id=BLOCK_ID), "capacity_type": "SPOT"}, {},
     f"{_TYPE}an ODCR is not Spot capacity. {_ON_DEMAND}"),
    ({"reservation": _block(), "capacity_type": "SPOT"}, KARPENTER,
     f"{_TYPE}a Capacity Block is not Spot capacity and a Capacity Block pool mixes no Spot. {_ON_DEMAND}"),
    ({"reservation": CapacityReservationArgs(kind="odcr", id=BLOCK_ID, only=True), "capacity_type": "SPOT"}, AUTO_MODE,
     f"{_TYPE}an ODCR is not Spot capacity and a reservations-only (only: true) pool admits no Spot. {_ON_DEMAND}, or "
     "set only false (Spot past the reservation)"),
    ({"reservation": CapacityReservationArgs(kind="odcr", tags={"team": "ml"})}, {},
     "node_group.reservation.tags = {'team': 'ml'}: a launch template names a reservation by id or resource group, not "
     "by tags. Fix: give id or resource_group_arn (or use autoscaler karpenter or auto-mode)"),
    ({"reservation": _block(tags={"team": "ml"})}, KARPENTER, f"node_group.reservation.tags = {{'team': 'ml'}}: {_TAGS}"),
    ({"reservation": CapacityReservationArgs(kind="odcr", id=BLOCK_ID, tags={"team": "ml"})}, KARPENTER,
     f"node_group.reservation.tags = {{'team': 'ml'}}: {_TAGS}"),
    ({"reservation": CapacityReservationArgs(kind="odcr", tags={})}, AUTO_MODE, f"node_group.reservation.tags = {{}}: {_TAGS}"),
    ({"reservation": CapacityReservationArgs(kind="odcr", resource_group_arn=ARN)}, KARPENTER,
     f"node_group.reservation.resource_group_arn = '{ARN}': Karpenter selects reservations by id or tags, not by "
     "resource group. Fix: give id, or tags the group's reservations carry"),
    ({"reservation": CapacityReservationArgs(kind="odcr", resource_group_arn=ARN)}, AUTO_MODE,
     f"node_group.reservation.resource_group_arn = '{ARN}': EKS Auto Mode selects reservations by id or tags, not by "
     "resource group. Fix: give id, or tags the group's reservations carry"),
    ({"reservation": _block(id="cr-0123456789abcdef")}, {},
     "node_group.reservation.id = 'cr-0123456789abcdef': not a capacity reservation id (cr- and 17 hex digits). Fix: "
     "copy the id from the EC2 console or `aws ec2 describe-capacity-reservations`"),
    ({"reservation": CapacityReservationArgs(kind="odcr", resource_group_arn="my-group")}, {},
     "node_group.reservation.resource_group_arn = 'my-group': not a resource group ARN. Fix: use "
     "arn:aws:resource-groups:REGION:ACCOUNT:group/NAME"),
    ({"reservation": _block(id=None)}, {}, f"node_group.reservation.id = None: {_ONE_ID}"),
    ({"reservation": _block(resource_group_arn=ARN)}, {}, f"node_group.reservation.id = '{BLOCK_ID}': {_ONE_ID}"),
    ({"reservation": _block(preference="targeted")}, {}, f"node_group.reservation.id = '{BLOCK_ID}': {_ONE_ID}"),
    ({"reservation": _block(), "instance_types": ["p5.48xlarge", "p5e.48xlarge"]}, {},
     "node_group.instance_types = ['p5.48xlarge', 'p5e.48xlarge']: a Capacity Block reserves one instance type. Fix: "
     "list only the block's instance type"),
    ({"reservation": CapacityReservationArgs(kind="odcr", preference="closed")}, {},
     "node_group.reservation.preference = 'closed': not an ODCR preference. Fix: use open or targeted"),
    ({"reservation": CapacityReservationArgs(kind="odcr", id=BLOCK_ID, resource_group_arn=ARN)}, {},
     f"node_group.reservation.id = '{BLOCK_ID}': an ODCR is targeted by an id or a resource group ARN, not both. Fix: "
     "keep one of id and resource_group_arn"),
    *[({"reservation": CapacityReservationArgs(kind="odcr", preference="open", **named)}, mode,
       "node_group.reservation.preference = 'open': open launches into any matching reservation, so it names none. "
       "Fix: drop id/resource_group_arn, or use targeted")
      for named, mode in (({"id": BLOCK_ID}, {}), ({"resource_group_arn": ARN}, {}), ({"tags": {"team": "ml"}}, KARPENTER))],
    ({"reservation": CapacityReservationArgs(kind="odcr", preference="targeted")}, {},
     "node_group.reservation.preference = 'targeted': targeted needs the reservation to target. Fix: set id (cr-...) "
     "or resource_group_arn (Karpenter, Auto Mode: or tags), or use open"),
    *[({"reservation": CapacityReservationArgs(kind="odcr", preference=preference)}, AUTO_MODE,
       "node_group.reservation.preference = 'open': an Auto Mode NodeClass selects reservations by id or tags only "
       "(without one, Auto Mode open-matches open ODCRs as on-demand capacity). Fix: give the ODCR's id or tags, or "
       "drop the reservation") for preference in ("open", None)],
    ({"reservation": _block(instance_type="p4d.24xlarge")}, {},
     "node_group.instance_types = ['p5.48xlarge']: the reservation holds p4d.24xlarge only. Fix: use instance_types "
     "[p4d.24xlarge]"),
    ({"reservation": _block(count=0)}, {}, "node_group.reservation.count = 0: a reservation holds 1 instance or more. "
                                           "Fix: set the reserved instance count, or leave it out"),
    ({"reservation": _block(count=1)}, {}, f"node_group.max_size = 2: the Capacity Block holds 1 {_NEVER}"),
    ({"reservation": CapacityReservationArgs(kind="odcr", id=BLOCK_ID, count=1, only=True)}, {},
     f"node_group.max_size = 2: the reservation (only: true) holds 1 {_NEVER}"),
    ({"reservation": CapacityReservationArgs(kind="odcr", only=True)}, KARPENTER,
     "node_group.reservation.only = True: an open ODCR preference launches on-demand when no matching reservation has "
     "room. Fix: target the reservation by id or resource_group_arn, or set only false"),
    ({"reservation": _block(end="2020-01-01")}, {}, "node_group.reservation.end = '2020-01-01': the reservation has "
                                                    "ended. Fix: name a current reservation, or remove "
                                                    "node_group.reservation"),
])
def test_each_refusal_is_one_whole_line_naming_the_value_and_the_fix(node_group, overrides, line):
    with pytest.raises(ConfigError) as error:
        check(args({**P5, **node_group}, **overrides))
    assert str(error.value) == line


@pytest.mark.parametrize("node_group, overrides", [
    ({"reservation": _block(count=2)}, {}),  # max_size equal to the block's count
    ({"reservation": CapacityReservationArgs(kind="odcr", id=BLOCK_ID, count=2, only=True)}, {}),
    ({"reservation": CapacityReservationArgs(kind="odcr", id=BLOCK_ID, count=1)}, {}),  # may grow: not only
    ({"reservation": _block(count=2, instance_type="p5.48xlarge")}, {}),
    ({"reservation": CapacityReservationArgs(kind="odcr", id=BLOCK_ID), "capacity_type": "SPOT"}, KARPENTER),
    ({"reservation": CapacityReservationArgs(kind="odcr", tags={"team": "ml"}), "capacity_type": "SPOT"}, AUTO_MODE),
    ({"reservation": CapacityReservationArgs(kind="odcr", preference="open")}, KARPENTER),
    ({"reservation": CapacityReservationArgs(kind="odcr", resource_group_arn=ARN, only=True)}, {}),
    ({"reservation": CapacityReservationArgs(kind="odcr", preference="targeted", id=BLOCK_ID)}, {}),
])
def test_a_reservation_at_each_limit_is_accepted(node_group, overrides):
    check(args({**P5, **node_group}, **overrides))


def test_the_reservation_check_names_the_modes_that_can_launch_into_it():
    with pytest.raises(ConfigError) as error:
        reservation.check(_block(), capacity_type="ON_DEMAND", instance_types=["p5.48xlarge"], max_size=1,
                          mode="none", managed_modes=("cluster-autoscaler",))
    assert str(error.value) == ("autoscaler.mode = 'none': a reservation is named in the managed node group's launch "
                                "template. Fix: use karpenter or auto-mode or cluster-autoscaler")


def test_a_capacity_block_by_id_is_checked_at_preview_against_its_pool_and_nothing_else_is():
    pool = reservation.block_pool(_block(), instance_types=["p5.48xlarge"], max_size=2, subnets_field="subnet_ids")
    assert pool == BlockPool(block_id=BLOCK_ID, reservation=f"capacity-block {BLOCK_ID}", field="node_group.reservation",
                             instance_types=("p5.48xlarge",), types_field="node_group.instance_types", max_size=2,
                             max_field="node_group.max_size", subnets_field="subnet_ids")
    assert reservation.block_pool(CapacityReservationArgs(kind="odcr", id=BLOCK_ID), instance_types=["p5.48xlarge"],
                                  max_size=2, subnets_field="subnet_ids") is None
    assert reservation.block_pool(_block(id=None), instance_types=["p5.48xlarge"], max_size=2,
                                  subnets_field="subnet_ids") is None


def test_the_output_tells_the_facts_given_else_those_read_and_whether_they_were_read():
    read = BlockFacts(instance_type="p5.48xlarge", availability_zone="us-east-1b", count=4,
                      start="2999-01-01T11:30:00Z", end="2999-01-15T11:30:00Z", state="scheduled")
    # nothing given: what EC2 answered
    assert reservation.output(_block(), ["us-east-1b"], read) == {
        "kind": "capacity-block", "target": BLOCK_ID, "only": False, "start": "2999-01-01T11:30:00Z",
        "end": "2999-01-15T11:30:00Z", "count": 4, "zone": "us-east-1b", "subnetZones": ["us-east-1b"],
        "factsRead": True}
    # given facts are shown before those read (preview refuses a disagreement: here they differ to tell which is shown)
    given = _block(start="2999-01-01", end="2999-01-15", count=0, availability_zone="us-east-1a", only=True)
    assert reservation.output(given, None, read) == {
        "kind": "capacity-block", "target": BLOCK_ID, "only": True, "start": "2999-01-01", "end": "2999-01-15",
        "count": 0, "zone": "us-east-1a", "factsRead": True}
    # offline: EC2 answered the id alone
    assert reservation.output(_block(count=2), [], BlockFacts()) == {
        "kind": "capacity-block", "target": BLOCK_ID, "only": False, "count": 2, "subnetZones": [], "factsRead": False}
    # an ODCR is not read
    assert reservation.output(CapacityReservationArgs(kind="odcr", tags={"b": "2", "a": "1"})) == {
        "kind": "odcr", "target": "tags a=1,b=2", "only": False}


def test_the_target_the_preference_and_the_capacity_type_of_each_reservation():
    group = CapacityReservationArgs(kind="odcr", resource_group_arn=ARN)
    tagged = CapacityReservationArgs(kind="odcr", tags={"team": "ml"})
    assert [reservation.target(r) for r in (_block(), group, tagged, CapacityReservationArgs(kind="odcr"),
                                            CapacityReservationArgs(kind="odcr", tags={}))] == [
        BLOCK_ID, ARN, "tags team=ml", "open", "open"]
    assert [r.preference_of for r in (_block(), group, tagged, CapacityReservationArgs(kind="odcr"),
                                      CapacityReservationArgs(kind="odcr", id=BLOCK_ID, preference="open"))] == [
        "targeted", "targeted", "targeted", "open", "open"]
    assert [reservation.preference(r) for r in (
        _block(), _block(only=True), group, dataclasses.replace(group, only=True), CapacityReservationArgs(kind="odcr"),
        CapacityReservationArgs(kind="odcr", id=BLOCK_ID, only=True))] == [
        None, None, None, "capacity-reservations-only", "open", None]
    assert reservation.capacity_type(_block(), "SPOT") == "CAPACITY_BLOCK"
    assert reservation.capacity_type(group, "SPOT") == "ON_DEMAND"
    assert reservation.capacity_type(None, "SPOT") == "SPOT"
    assert reservation.stamps(None) == {}


def test_an_end_is_read_against_the_clock_it_is_given():
    res = _block(end="2030-01-01T00:00:00Z")
    given = dict(capacity_type="ON_DEMAND", instance_types=["p5.48xlarge"], max_size=1, mode="cluster-autoscaler",
                 managed_modes=("cluster-autoscaler",))
    reservation.check(res, **given, now=datetime.datetime(2029, 12, 31, 23, 59, 59, tzinfo=datetime.timezone.utc))
    with pytest.raises(ConfigError) as error:
        reservation.check(res, **given, now=datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc))
    assert str(error.value) == ("node_group.reservation.end = '2030-01-01T00:00:00Z': the reservation has ended. Fix: "
                                "name a current reservation, or remove node_group.reservation")


@pytest.mark.parametrize("arn, refused", [
    ("arn:aws:resource-groups:us-east-1:123456789012:group/gpus", False),
    ("arn:aws-cn:resource-groups:cn-north-1:123456789012:group/gpus", False),  # another partition
    ("arn:aws:resource-groups:us-east-1:123456789012:group/" + "g" * 128, False),  # the longest group name
    ("arn:aws:resource-groups:us-east-1:123456789012:group/" + "g" * 129, True),
    ("arn:aws:resource-groups:us-east-1:12345678901:group/gpus", True),  # an account id of 11 digits
    ("arn:aws:resource-groups:us-east-1:123456789012:group/", True),
    ("arn:aws:ec2:us-east-1:123456789012:group/gpus", True),  # not a resource group
])
def test_a_resource_group_arn_is_one_of_a_group_in_an_account(arn, refused):
    with pytest.raises(ConfigError) if refused else contextlib.nullcontext() as error:
        aws_reservations.check_names("node_group.reservation", None, arn)
    if refused:
        assert str(error.value) == (f"node_group.reservation.resource_group_arn = '{arn}': not a resource group ARN. "
                                    "Fix: use arn:aws:resource-groups:REGION:ACCOUNT:group/NAME")
