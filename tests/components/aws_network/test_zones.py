"""A reservation's zone against the zones of the subnets a pool launches in: the subnets are made in moto (EC2's
``CreateSubnet`` in a named zone) and the ``aws:ec2/getSubnet:getSubnet`` invoke is answered from moto's
``DescribeSubnets``, under the invoke's own field name (pulumi_aws ``GetSubnetResult.availability_zone``); offline,
``gpuready plan`` answers no zone and the check waits rather than guess."""

from __future__ import annotations

import inspect

import pulumi
import pytest
from pulumi_aws.ec2 import get_subnet
from pulumi_aws.ec2.get_subnet import GetSubnetResult

from gpuready.plan.render import PlanMocks
from gpuready_components.aws_network import zones
from gpuready_components.batch_gpu import BatchGpuEnvironment, BatchReservationArgs
from gpuready_components.eks_gpu import CapacityReservationArgs, EksGpuCluster
from gpuready_components.errors import ConfigError
from tests.components.batch_gpu.helpers import args as batch_args
from tests.components.eks_gpu.helpers import args as eks_args

ID = "cr-0123456789abcdef0"


def test_the_invoke_and_its_field_are_pulumi_aws_own():
    assert zones.SUBNET_INVOKE in inspect.getsource(get_subnet)
    assert isinstance(GetSubnetResult.availability_zone, property)


def _batch(render, **overrides):
    """The ``gpuReservations`` output of a Batch environment built with ``overrides``."""
    def program():
        pulumi.export("gpuReservations", BatchGpuEnvironment("gpu", batch_args(**overrides)).outputs["gpuReservations"])
    return render(program).outputs["gpuReservations"]


def test_a_batch_reservation_in_a_zone_no_subnet_is_in_fails_in_one_line(render, subnets):
    with pytest.raises(ConfigError) as error:
        _batch(render, subnet_ids=subnets, reservation=BatchReservationArgs(id=ID, availability_zone="us-east-1c"))
    text = str(error.value)
    assert error.value.field == "subnet_ids" and "\n" not in text
    assert all(s in text for s in (f"odcr {ID}", "us-east-1c", f"{subnets[0]} in us-east-1a",
                                   f"{subnets[1]} in us-east-1b", "give a subnet in us-east-1c"))


def test_a_batch_reservation_in_a_subnets_zone_passes_and_the_output_carries_both_zones(render, subnets):
    (entry,) = _batch(render, subnet_ids=subnets,
                      reservation=BatchReservationArgs(id=ID, availability_zone="us-east-1b", count=2))
    assert entry["zone"] == "us-east-1b" and entry["subnetZones"] == ["us-east-1a", "us-east-1b"]
    assert entry["kind"] == "odcr" and entry["target"] == ID and entry["count"] == 2
    assert entry["pool"].startswith("gpu-gpu-on-demand")


def test_offline_the_zone_is_unchecked_not_invented(render):
    """``gpuready plan``'s own answer (no zone): the stack builds, and its output holds no subnet zone."""
    (entry,) = _batch(render, reservation=BatchReservationArgs(id=ID, availability_zone="us-east-1c"))
    assert entry["zone"] == "us-east-1c" and "subnetZones" not in entry


def test_without_a_reservation_zone_no_subnet_is_read(render, monkeypatch):
    asked = []
    answer = PlanMocks.call
    monkeypatch.setattr(PlanMocks, "call", lambda self, args: asked.append(args.token) or answer(self, args))
    (entry,) = _batch(render, reservation=BatchReservationArgs(id=ID))
    assert zones.SUBNET_INVOKE not in asked and "zone" not in entry


def test_an_eks_node_group_on_a_reservation_in_another_zone_fails(render, subnets):
    res = CapacityReservationArgs(kind="odcr", id=ID, availability_zone="us-east-1c")
    with pytest.raises(ConfigError) as error:
        render(lambda: EksGpuCluster("eks", eks_args({"reservation": res}, subnet_ids=subnets)))
    assert error.value.field == "subnet_ids" and f"odcr {ID}" in str(error.value)
    assert f"{subnets[0]} in us-east-1a" in str(error.value)


def test_an_eks_node_group_in_the_reservations_zone_says_the_subnets_zones(render, subnets):
    res = CapacityReservationArgs(kind="odcr", id=ID, availability_zone="us-east-1a")

    def program():
        cluster = EksGpuCluster("eks", eks_args({"reservation": res}, subnet_ids=subnets))
        pulumi.export("gpuReservations", cluster.gpu_reservations)
    entries = render(program).outputs["gpuReservations"]
    assert entries and all(e["zone"] == "us-east-1a" and e["subnetZones"] == ["us-east-1a", "us-east-1b"]
                           for e in entries)

