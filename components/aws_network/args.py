"""Typed inputs of :class:`~gpuready_components.aws_network.AwsNetwork`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional


@dataclass(frozen=True, kw_only=True)
class AwsNetworkArgs:
    """A VPC with one public and one private subnet per availability zone."""

    cidr_block: str = "10.42.0.0/16"
    """VPC range; each subnet gets a /20 of it."""
    availability_zones: int = 2
    """How many zones to spread the private subnets over (more zones, more GPU capacity pools)."""
    first_zone: Optional[str] = None
    """A zone the subnets must include, by name (``us-east-1a``): a reservation's, which launches only there. Its
    subnets come first (``private_subnet_ids[0]``); the other zones follow in the region's order. Without it: the
    region's first zones."""
    tags: Mapping[str, str] = field(default_factory=dict)
