"""A Capacity Block named by id alone: its facts read at preview with ``getCapacityBlockReservation`` and checked
against the pool that launches into it.

moto 5.2 has no capacity reservations, so the invoke's answer here is the mock runtime's: a dict shaped and named as
the installed pulumi_aws result type says (each key is the wire name of a ``GetCapacityBlockReservationResult``
property, read from the type, so a renamed field fails these tests), with the values EC2 would describe for the
block. The pool's subnets are made in moto and their zones answered from it (see ``conftest.py``)."""

from __future__ import annotations

import inspect

import botocore.session
import pulumi
import pytest
from pulumi_aws.ec2 import get_capacity_block_reservation_output
from pulumi_aws.ec2.get_capacity_block_reservation import GetCapacityBlockReservationResult

from gpuready.plan.render import PlanMocks
from gpuready_components.aws_network import capacity_blocks, zones
from gpuready_components.eks_gpu import AutoscalerArgs, CapacityReservationArgs, EksGpuCluster
from gpuready_components.errors import ConfigError
from tests.components.eks_gpu.helpers import args as eks_args

ID = "cr-0123456789abcdef0"
FITS = dict(id=ID, instance_type="p5.48xlarge", availability_zone="us-east-1a", instance_count=2,
            available_instance_count=2, start_date="2026-11-20T11:30:00Z", end_date="2999-12-01T11:30:00Z",
            state="active", reservation_type="capacity-block")
"""A block the pool below fits, by the result type's Python names: one p5.48xlarge pair in us-east-1a."""


def _wire(facts: dict) -> dict:
    """``facts`` under the names the provider answers the invoke with (the result type's getters' names)."""
    return {getattr(GetCapacityBlockReservationResult, k).fget._pulumi_name: v for k, v in facts.items()}


@pytest.fixture
def block(monkeypatch, subnets):
    """Answer the block invoke with the facts a test sets (``block.update(...)`` over :data:`FITS`); record who
    asked for which block in ``block["asked"]``."""
    answer, facts, asked = PlanMocks.call, dict(FITS), []

    def call(self, args):
        if args.token != capacity_blocks.BLOCK_INVOKE:
            return answer(self, args)
        asked.append(args.args.get("id"))
        return _wire(facts) if args.args.get("id") == facts["id"] else {}

    monkeypatch.setattr(PlanMocks, "call", call)
    return {"facts": facts, "asked": asked, "subnets": subnets}


def _cluster(render, block, reservation=None, autoscaler=None, **node_group):
    """The ``gpuReservations`` of an EKS cluster whose GPU pool (p5.48xlarge, at most 2 nodes, the moto subnets)
    launches into ``reservation`` (the block by id alone, unless given)."""
    res = reservation or CapacityReservationArgs(kind="capacity-block", id=ID)
    group = {"instance_types": ["p5.48xlarge"], "max_size": 2, "reservation": res, **node_group}
    scaler = {"autoscaler": AutoscalerArgs(mode=autoscaler)} if autoscaler else {}

    def program():
        cluster = EksGpuCluster("eks", eks_args(group, subnet_ids=block["subnets"], **scaler))
        pulumi.export("gpuReservations", cluster.gpu_reservations)
    return render(program).outputs["gpuReservations"]


def test_the_invoke_and_its_fields_are_pulumi_aws_own():
    assert capacity_blocks.BLOCK_INVOKE in inspect.getsource(get_capacity_block_reservation_output)
    assert "id" in inspect.signature(get_capacity_block_reservation_output).parameters
    assert set(FITS) <= {k for k, v in vars(GetCapacityBlockReservationResult).items() if isinstance(v, property)}


def test_the_ended_states_are_ec2s():
    ec2 = botocore.session.get_session().get_service_model("ec2")
    assert capacity_blocks.ENDED_STATES <= set(ec2.shape_for("CapacityReservationState").enum)


def test_a_block_that_fits_passes_and_the_output_carries_what_ec2_said(render, block):
    entries = _cluster(render, block)
    assert entries and block["asked"] and set(block["asked"]) == {ID}
    for entry in entries:
        assert (entry["kind"], entry["target"], entry["factsRead"]) == ("capacity-block", ID, True)
        assert (entry["zone"], entry["count"], entry["start"], entry["end"]) == (
            "us-east-1a", 2, "2026-11-20T11:30:00Z", "2999-12-01T11:30:00Z")
        assert entry["subnetZones"] == ["us-east-1a", "us-east-1b"]


@pytest.mark.parametrize("read, field, words", [
    ({"availability_zone": "us-east-1c"}, "subnet_ids",
     ("capacity-block cr-0123456789abcdef0", "is in us-east-1c", "in us-east-1a", "give a subnet in us-east-1c")),
    ({"instance_type": "p4d.24xlarge"}, "node_group.instance_types",
     ("capacity-block cr-0123456789abcdef0", "holds p4d.24xlarge only", "['p5.48xlarge']",
      "set instance_types to [p4d.24xlarge]")),
    ({"instance_count": 1}, "node_group.max_size",
     ("capacity-block cr-0123456789abcdef0", "holds 1 instances", "= 2", "set max_size to 1 or less")),
    ({"state": "expired", "end_date": "2020-01-02T11:30:00Z"}, "node_group.reservation.id",
     (ID, "is expired", "name a current block")),
    ({"end_date": "2020-01-02T11:30:00Z"}, "node_group.reservation.id",
     (ID, "ended at 2020-01-02T11:30:00Z", "name a current block")),
])
def test_a_block_the_pool_cannot_use_is_refused_in_one_line(render, block, read, field, words):
    block["facts"].update(read)
    with pytest.raises(ConfigError) as error:
        _cluster(render, block)
    text = str(error.value)
    assert error.value.field == field and "\n" not in text
    assert all(w in text for w in words), text


@pytest.mark.parametrize("read, field", [({"instance_count": 1}, "node_group.max_size"),
                                         ({"availability_zone": "us-east-1c"}, "subnet_ids")])
def test_karpenter_on_a_block_is_checked_the_same_way(render, block, read, field):
    block["facts"].update(read)
    with pytest.raises(ConfigError) as error:
        _cluster(render, block, autoscaler="karpenter")
    assert error.value.field == field and f"capacity-block {ID}" in str(error.value)


@pytest.mark.parametrize("given, field, read", [
    ({"instance_type": "p5.48xlarge"}, "node_group.reservation.instance_type", {"instance_type": "p5e.48xlarge"}),
    ({"count": 2}, "node_group.reservation.count", {"instance_count": 4}),
    ({"availability_zone": "us-east-1b"}, "node_group.reservation.availability_zone", {}),
    ({"end": "2999-11-30"}, "node_group.reservation.end", {}),
])
def test_given_facts_that_disagree_with_ec2_are_refused_as_stale(render, block, given, field, read):
    block["facts"].update(read)
    res = CapacityReservationArgs(kind="capacity-block", id=ID, **given)
    types = [given.get("instance_type", "p5.48xlarge")]
    with pytest.raises(ConfigError) as error:
        _cluster(render, block, res, instance_types=types)
    assert error.value.field == field and "stack file is stale" in str(error.value)
    assert "\n" not in str(error.value) and ID in str(error.value)


def test_given_facts_that_agree_pass_a_date_agreeing_with_the_time_on_it(render, block):
    res = CapacityReservationArgs(kind="capacity-block", id=ID, instance_type="p5.48xlarge", count=2,
                                  availability_zone="us-east-1a", start="2026-11-20T11:30:00Z", end="2999-12-01")
    (entry, *_) = _cluster(render, block, res)
    assert entry["end"] == "2999-12-01" and entry["factsRead"] is True


def test_offline_nothing_is_invented_and_the_entry_says_unread(render):
    """``gpuready plan``'s own answer (the id, no facts): the stack builds, nothing is checked, ``factsRead`` false."""
    res = CapacityReservationArgs(kind="capacity-block", id=ID)
    group = {"instance_types": ["p5.48xlarge"], "max_size": 2, "reservation": res}

    def program():
        pulumi.export("gpuReservations", EksGpuCluster("eks", eks_args(group)).gpu_reservations)
    (entry, *_) = render(program).outputs["gpuReservations"]
    assert entry["factsRead"] is False
    assert not {"zone", "count", "start", "end", "subnetZones"} & set(entry)


def test_an_odcr_is_not_read(render, block, monkeypatch):
    asked = []
    answer = PlanMocks.call
    monkeypatch.setattr(PlanMocks, "call", lambda self, args: asked.append(args.token) or answer(self, args))
    (entry, *_) = _cluster(render, block, CapacityReservationArgs(kind="odcr", id=ID))
    assert asked and capacity_blocks.BLOCK_INVOKE not in asked and zones.SUBNET_INVOKE not in asked
    assert "factsRead" not in entry
