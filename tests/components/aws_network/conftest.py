"""Subnets in moto for the reservation checks that read a pool's subnets' zones."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from gpuready.plan.render import PlanMocks
from gpuready_components.aws_network import zones


@pytest.fixture
def subnets(monkeypatch):
    """Two subnets in moto, in us-east-1a and us-east-1b, and the getSubnet invoke answered from moto's
    ``DescribeSubnets`` under the invoke's own field name (pulumi_aws ``GetSubnetResult.availability_zone``)."""
    with mock_aws():
        ec2 = boto3.client("ec2", region_name="us-east-1")
        vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        made = [ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.0.{i}.0/24", AvailabilityZone=f"us-east-1{z}")[
            "Subnet"]["SubnetId"] for i, z in enumerate("ab")]
        answer = PlanMocks.call

        def call(self, args):
            if args.token != zones.SUBNET_INVOKE:
                return answer(self, args)
            (subnet,) = ec2.describe_subnets(SubnetIds=[args.args["id"]])["Subnets"]
            return {"id": subnet["SubnetId"], "availabilityZone": subnet["AvailabilityZone"]}

        monkeypatch.setattr(PlanMocks, "call", call)
        yield made
