"""Whether a reservation's instances can launch where a pool launches: a Capacity Block or an ODCR lives in one
Availability Zone, and an instance "can't launch in a subnet in a different Availability Zone" (EC2 user guide,
"Launch instances using Capacity Blocks"; an ODCR's instances must match its zone, "Capacity Reservation concepts").

The subnets' zones are read at preview with the ``aws:ec2/getSubnet:getSubnet`` invoke
(``pulumi_aws.ec2.get_subnet_output``, its ``availability_zone``), only when the reservation's zone is known. A zone
the answer does not give (``gpuready plan`` offline answers no zone) leaves the check undone, never guessed."""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import pulumi

from ..errors import ConfigError
from ..sdk import require

SUBNET_INVOKE = "aws:ec2/getSubnet:getSubnet"
"""The invoke that reads a subnet (its ``availabilityZone``): ``gpuready plan`` answers it offline."""


def check_zone(field: str, reservation: str, zone: Optional[str], zones: Mapping[str, Optional[str]],
               zone_field: str) -> None:
    """Raise :class:`ConfigError` at ``field`` (the pool's subnets' key) when the zone of every subnet in ``zones``
    (subnet id to its zone) is known and none is ``zone``, the zone of ``reservation`` (``odcr cr-...``) given at
    ``zone_field``; do nothing when ``zone`` or a subnet's zone is unknown."""
    if not zone or not zones or any(z is None for z in zones.values()) or zone in zones.values():
        return
    where = ", ".join(f"{subnet} in {z}" for subnet, z in zones.items())
    raise ConfigError(field, list(zones), f"the reservation ({reservation}) is in {zone}, its instances launch there "
                      f"only, and no subnet is ({where})",
                      f"give a subnet in {zone}, or correct {zone_field} if the reservation is elsewhere")


def known_zones(zones: Mapping[str, Optional[str]]) -> Optional[list[str]]:
    """The subnets' zones, sorted once each, when every one is known; else None."""
    if not zones or any(z is None for z in zones.values()):
        return None
    return sorted({z for z in zones.values() if z})


def subnet_zones(subnet_ids: Any, parent: pulumi.Resource) -> pulumi.Output[dict[str, Optional[str]]]:
    """Each of ``subnet_ids`` (a list, or an output of one) with its Availability Zone as EC2 describes it (None
    where the answer gives none)."""
    def read(ids: Sequence[str]) -> Any:
        ids = list(ids)
        opts = pulumi.InvokeOutputOptions(parent=parent)
        return pulumi.Output.all(*[_zone(i, opts) for i in ids]).apply(lambda found: dict(zip(ids, found)))
    return pulumi.Output.from_input(subnet_ids).apply(read)


def _zone(subnet_id: str, opts: pulumi.InvokeOutputOptions) -> pulumi.Output[Optional[str]]:
    aws = require("pulumi_aws")  # on first use: the policy pack imports this package without the AWS SDK
    return aws.ec2.get_subnet_output(id=subnet_id, opts=opts).availability_zone


def checked_subnets(subnet_ids: Any, zones: pulumi.Output[Mapping[str, Optional[str]]], *, field: str,
                    reservation: str, zone: Optional[str], zone_field: str) -> pulumi.Output[list[str]]:
    """``subnet_ids`` once :func:`check_zone` passed on ``zones`` (from :func:`subnet_zones`): the pool's subnets
    as given, so that the check fails the preview that resolves them."""
    return pulumi.Output.all(subnet_ids, zones).apply(
        lambda a: (check_zone(field, reservation, zone, a[1], zone_field), list(a[0]))[1])
