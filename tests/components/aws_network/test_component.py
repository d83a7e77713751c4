"""AwsNetwork: private subnets for GPU instances behind one NAT gateway; bad ranges fail at construction."""

from __future__ import annotations

import pytest

from gpuready_components.aws_network import AwsNetwork, AwsNetworkArgs
from gpuready_components.errors import ConfigError
from gpuready.plan.render import mock_id

SUBNET = "aws:ec2/subnet:Subnet"


def test_private_subnets_route_through_one_nat_gateway(render):
    rendering = render(lambda: AwsNetwork("net", AwsNetworkArgs(availability_zones=3)))
    subnets = {s.name: s for s in rendering.of_type("aws:ec2/subnet:Subnet")}
    assert sorted(subnets) == [f"net-{kind}-{i}" for kind in ("private", "public") for i in range(3)]
    assert {s.inputs["availabilityZone"] for n, s in subnets.items() if "private" in n} == \
        {"us-east-1a", "us-east-1b", "us-east-1c"}
    assert not any(s.inputs["mapPublicIpOnLaunch"] for s in subnets.values())
    (nat,) = rendering.of_type("aws:ec2/natGateway:NatGateway")
    assert nat.inputs["subnetId"] == mock_id(SUBNET, "net-public-0")
    routes = {t.name: t.inputs["routes"] for t in rendering.of_type("aws:ec2/routeTable:RouteTable")}
    assert routes["net-private"] == [{"cidrBlock": "0.0.0.0/0", "natGatewayId": mock_id("aws:ec2/natGateway:NatGateway", "net-nat")}]
    assert routes["net-public"] == [{"cidrBlock": "0.0.0.0/0", "gatewayId": mock_id("aws:ec2/internetGateway:InternetGateway", "net")}]
    cidrs = [s.inputs["cidrBlock"] for s in subnets.values()]
    assert len(set(cidrs)) == 6 and all(c.startswith("10.42.") and c.endswith("/20") for c in cidrs)


@pytest.mark.parametrize("overrides,field", [({"cidr_block": "10.0.0.0/33"}, "cidr_block"),
                                             ({"cidr_block": "10.0.0.0/22"}, "cidr_block"),
                                             ({"availability_zones": 0}, "availability_zones")])
def test_bad_network_inputs_fail_with_the_field(render, overrides, field):
    with pytest.raises(ConfigError) as e:
        render(lambda: AwsNetwork("net", AwsNetworkArgs(**overrides)))
    assert e.value.field == field


def test_a_reservations_zone_comes_first_and_the_others_follow_in_the_regions_order(render):
    rendering = render(lambda: AwsNetwork("net", AwsNetworkArgs(availability_zones=2, first_zone="us-east-1c")))
    zones = {s.name: s.inputs["availabilityZone"] for s in rendering.of_type(SUBNET)}
    assert (zones["net-private-0"], zones["net-private-1"]) == ("us-east-1c", "us-east-1a")
    assert (zones["net-public-0"], zones["net-public-1"]) == ("us-east-1c", "us-east-1a")


def test_a_zone_that_is_not_a_zone_name_fails_at_construction(render):
    with pytest.raises(ConfigError) as e:
        render(lambda: AwsNetwork("net", AwsNetworkArgs(first_zone="use1-az1")))
    assert e.value.field == "first_zone" and "us-east-1a" in e.value.fix


def test_a_zone_the_region_does_not_have_fails_at_preview(render):
    with pytest.raises(Exception) as e:
        render(lambda: AwsNetwork("net", AwsNetworkArgs(first_zone="us-west-2a")))
    assert "first_zone" in str(e.value) and "not an available zone of the region (us-east-1a, us-east-1b, " \
        "us-east-1c)" in str(e.value)
