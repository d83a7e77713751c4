"""``AwsNetwork``: VPC, private subnets for GPU instances, public subnets for one NAT gateway."""

from __future__ import annotations

import ipaddress
import re
from typing import Optional

import pulumi

from ..errors import ConfigError
from ..sdk import require
from .args import AwsNetworkArgs

aws = require("pulumi_aws")

TYPE_TOKEN = "gpuready:aws:Network"
"""Never change: renaming a type token replaces every cloud resource under it."""


class AwsNetwork(pulumi.ComponentResource):
    """A VPC whose private subnets reach the internet (image pulls, AWS APIs) through one NAT gateway."""

    vpc_id: pulumi.Output[str]
    private_subnet_ids: list[pulumi.Output[str]]
    public_subnet_ids: list[pulumi.Output[str]]

    def __init__(self, name: str, args: AwsNetworkArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__(TYPE_TOKEN, name, None, opts)
        try:
            network = ipaddress.ip_network(args.cidr_block)
        except ValueError as e:
            raise ConfigError("cidr_block", args.cidr_block, str(e), "use a private range such as 10.42.0.0/16")
        if not 1 <= args.availability_zones <= 6:
            raise ConfigError("availability_zones", args.availability_zones, "must be between 1 and 6",
                              "use 2 or 3")
        subnets = list(network.subnets(new_prefix=20)) if network.prefixlen <= 20 else []
        if len(subnets) < 2 * args.availability_zones:
            raise ConfigError("cidr_block", args.cidr_block,
                              f"too small for {2 * args.availability_zones} /20 subnets", "use a /16")
        child = pulumi.ResourceOptions(parent=self)
        tags = {"gpuready:component": name, **args.tags}
        zones = aws.get_availability_zones_output(state="available").names
        if args.first_zone is not None:
            if not ZONE.fullmatch(args.first_zone):
                raise ConfigError("first_zone", args.first_zone, "not an Availability Zone name",
                                  "use a name such as us-east-1a (the reservation's AvailabilityZone)")
            zones = zones.apply(lambda names: _first(args.first_zone, names))

        vpc = aws.ec2.Vpc(name, cidr_block=args.cidr_block, enable_dns_hostnames=True, enable_dns_support=True,
                          tags={**tags, "Name": name}, opts=child)
        gateway = aws.ec2.InternetGateway(name, vpc_id=vpc.id, tags=tags, opts=child)
        public_routes = aws.ec2.RouteTable(f"{name}-public", vpc_id=vpc.id, routes=[
            aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=gateway.id)], tags=tags, opts=child)

        self.public_subnet_ids, self.private_subnet_ids = [], []
        nat = None
        for i in range(args.availability_zones):
            zone = zones.apply(lambda names, i=i: names[i % len(names)])
            public = aws.ec2.Subnet(f"{name}-public-{i}", vpc_id=vpc.id, cidr_block=str(subnets[2 * i]),
                                    availability_zone=zone, map_public_ip_on_launch=False,
                                    tags={**tags, "Name": f"{name}-public-{i}"}, opts=child)
            aws.ec2.RouteTableAssociation(f"{name}-public-{i}", subnet_id=public.id, route_table_id=public_routes.id,
                                          opts=child)
            if nat is None:
                address = aws.ec2.Eip(f"{name}-nat", domain="vpc", tags=tags, opts=child)
                nat = aws.ec2.NatGateway(f"{name}-nat", subnet_id=public.id, allocation_id=address.id, tags=tags,
                                         opts=pulumi.ResourceOptions(parent=self, depends_on=[gateway]))
                private_routes = aws.ec2.RouteTable(f"{name}-private", vpc_id=vpc.id, routes=[
                    aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", nat_gateway_id=nat.id)], tags=tags,
                    opts=child)
            private = aws.ec2.Subnet(f"{name}-private-{i}", vpc_id=vpc.id, cidr_block=str(subnets[2 * i + 1]),
                                     availability_zone=zone, map_public_ip_on_launch=False,
                                     tags={**tags, "Name": f"{name}-private-{i}"}, opts=child)
            aws.ec2.RouteTableAssociation(f"{name}-private-{i}", subnet_id=private.id,
                                          route_table_id=private_routes.id, opts=child)
            self.public_subnet_ids.append(public.id)
            self.private_subnet_ids.append(private.id)

        self.vpc_id = vpc.id
        self.register_outputs({"vpcId": self.vpc_id, "privateSubnetIds": self.private_subnet_ids,
                               "publicSubnetIds": self.public_subnet_ids})


ZONE = re.compile(r"[a-z]{2}(-[a-z0-9]+)+[a-z]")
"""An Availability Zone's name (``us-east-1a``, a Local Zone's ``us-east-1-bos-1a``), as EC2 names them."""


def _first(zone: str, names: list[str]) -> list[str]:
    """The region's available zones ``names`` with ``zone`` first; a :class:`ConfigError` when it is not one."""
    if zone not in names:
        raise ConfigError("first_zone", zone, f"not an available zone of the region ({', '.join(names)})",
                          "deploy to the reservation's region, or name its zone")
    return [zone, *(n for n in names if n != zone)]
