"""Typed inputs of :class:`~gpuready_components.aws_network.AwsNetwork`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping


@dataclass(frozen=True, kw_only=True)
class AwsNetworkArgs:
    """A VPC with one public and one private subnet per availability zone."""

    cidr_block: str = "10.42.0.0/16"
    """VPC range; each subnet gets a /20 of it."""
    availability_zones: int = 2
    """How many zones to spread the private subnets over (more zones, more GPU capacity pools)."""
    tags: Mapping[str, str] = field(default_factory=dict)
