"""A Capacity Block's facts as EC2 describes them, read at preview when a stack names the block by its id, and checked
against the pool that launches into it: the block's instance type among the pool's, its Availability Zone among the
pool's subnets' zones (a block lives in one zone), its instance count against the pool's most nodes, its end in the
future and its state one that still launches.

The facts are read with pulumi-aws's ``aws:ec2/getCapacityBlockReservation:getCapacityBlockReservation`` invoke
(``pulumi_aws.ec2.get_capacity_block_reservation_output(id=...)``: EC2's ``DescribeCapacityReservations`` of that id,
documented to answer a reservation of type ``capacity-block`` only), under its result type's fields
(``GetCapacityBlockReservationResult``): ``instance_type``, ``availability_zone``, ``instance_count`` (EC2's
``TotalInstanceCount``: terraform-provider-aws's ``internal/service/ec2/ec2_capacity_block_reservation_data_source.go``
maps it so, whatever the generated docstring says of interruptible capacity), ``start_date`` and ``end_date`` (RFC
3339) and ``state``. An answer without them (``gpuready plan`` offline answers the id alone) leaves every check
undone, never guessed, and says so (:attr:`BlockFacts.known`).

An On-Demand Capacity Reservation cannot be read this way: pulumi-aws 7 has no invoke that reads one (no
``getCapacityReservation``; only the resource ``aws.ec2.CapacityReservation``, whose ``get`` would put a read
resource in the stack's state), so an ODCR's facts are those the stack gives, or unchecked."""

from __future__ import annotations

import dataclasses
import datetime
import re
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

import pulumi

from ..capacity import parse_time
from ..errors import ConfigError
from ..sdk import require
from . import zones

BLOCK_INVOKE = "aws:ec2/getCapacityBlockReservation:getCapacityBlockReservation"
"""The invoke that reads a Capacity Block: ``gpuready plan`` answers it offline, with no facts."""
ENDED_STATES = frozenset({"expired", "cancelled", "failed", "payment-failed"})
"""EC2 ``CapacityReservationState`` values (botocore's enum; the tests read it) of a block no instance launches into
again: past its end, cancelled, or never paid for."""
COMPARED = ("instance_type", "availability_zone", "count", "start", "end")
"""The facts a stack may give and EC2 also answers: a given one must agree with the one read."""
_LABELS = {"instance_type": "instance type", "availability_zone": "Availability Zone", "count": "instance count",
           "start": "start", "end": "end"}
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True, kw_only=True)
class BlockFacts:
    """What is known of a Capacity Block, given in the stack or read from EC2; None where unknown."""

    instance_type: Optional[str] = None
    availability_zone: Optional[str] = None
    count: Optional[int] = None
    """Instances the block reserves (EC2's ``TotalInstanceCount``)."""
    start: Optional[str] = None
    end: Optional[str] = None
    state: Optional[str] = None

    @property
    def known(self) -> bool:
        """Whether any fact is known: false for an answer that gave none (``gpuready plan`` offline)."""
        return any(v is not None for v in dataclasses.astuple(self))

    @classmethod
    def of(cls, given: Any) -> "BlockFacts":
        """The facts of :data:`COMPARED` that ``given`` (a reservation's args, with those attributes) holds."""
        return cls(**{name: getattr(given, name, None) for name in COMPARED})


@dataclass(frozen=True, kw_only=True)
class BlockPool:
    """A pool launching into a Capacity Block, as the block's facts are checked against it: each value with the
    stack key that sets it, so that an error names the key."""

    block_id: str
    reservation: str
    """The reservation in words (``capacity-block cr-...``)."""
    field: str
    """The reservation's key (``node_group.reservation``)."""
    instance_types: Sequence[str]
    types_field: str
    max_size: int
    max_field: str
    subnets_field: str


def read(block_id: str, parent: pulumi.Resource) -> pulumi.Output[BlockFacts]:
    """The block ``block_id`` as EC2 describes it (every fact None where the answer gives none)."""
    aws = require("pulumi_aws")  # on first use: the policy pack imports this package without the AWS SDK
    found = aws.ec2.get_capacity_block_reservation_output(id=block_id, opts=pulumi.InvokeOutputOptions(parent=parent))
    return found.apply(lambda b: BlockFacts(
        instance_type=b.instance_type or None, availability_zone=b.availability_zone or None, count=b.instance_count,
        start=b.start_date or None, end=b.end_date or None, state=b.state or None))


def check_agrees(pool: BlockPool, given: BlockFacts, found: BlockFacts) -> None:
    """Raise :class:`ConfigError` for a fact the stack gives that EC2 answers otherwise (the stack file is stale); a
    date given without a time agrees with a time on that date."""
    for name in COMPARED:
        mine, theirs = getattr(given, name), getattr(found, name)
        if mine is not None and theirs is not None and not _same(name, mine, theirs):
            raise ConfigError(f"{pool.field}.{name}", mine, f"EC2 says {pool.reservation} has {_LABELS[name]} "
                              f"{theirs}, so the stack file is stale", f"set it to {theirs!r}, or remove it (the "
                              "preview reads it)")


def _same(name: str, mine: Any, theirs: Any) -> bool:
    if name not in ("start", "end"):
        return mine == theirs
    try:
        a, b = parse_time(str(mine)), parse_time(str(theirs))
    except ValueError:
        return False
    return a.date() == b.date() if _DATE.fullmatch(str(mine)) else a == b


def check_fits(pool: BlockPool, found: BlockFacts, now: Optional[datetime.datetime] = None) -> None:
    """Raise :class:`ConfigError` for a fact of the block read from EC2 that the pool cannot use: a state no instance
    launches in, an end past ``now``, an instance type the pool does not launch, fewer instances than the pool's
    most nodes. Facts not read are not checked."""
    fix = f"name a current block's id, or remove {pool.field}"
    if found.state in ENDED_STATES:
        raise ConfigError(f"{pool.field}.id", pool.block_id, f"EC2 says the Capacity Block is {found.state}, so no "
                          "instance launches into it", fix)
    try:
        ended = found.end is not None and parse_time(found.end) <= (now or datetime.datetime.now(datetime.timezone.utc))
    except ValueError:
        ended = False  # a time EC2 wrote otherwise than RFC 3339: not guessed
    if ended:
        raise ConfigError(f"{pool.field}.id", pool.block_id, f"EC2 says the Capacity Block ended at {found.end}", fix)
    if found.instance_type is not None and found.instance_type not in pool.instance_types:
        raise ConfigError(pool.types_field, list(pool.instance_types), f"EC2 says the Capacity Block "
                          f"({pool.reservation}) holds {found.instance_type} only",
                          f"set {pool.types_field.rsplit('.', 1)[-1]} to [{found.instance_type}]")
    if found.count is not None and pool.max_size > found.count:
        raise ConfigError(pool.max_field, pool.max_size, f"EC2 says the Capacity Block ({pool.reservation}) holds "
                          f"{found.count} instances, so the nodes past them never come",
                          f"set {pool.max_field.rsplit('.', 1)[-1]} to {found.count} or less")


def checked_subnets(subnet_ids: Any, pool: BlockPool, given: BlockFacts, parent: pulumi.Resource) -> tuple[
        pulumi.Output[list[str]], pulumi.Output[Mapping[str, Optional[str]]], pulumi.Output[BlockFacts]]:
    """Read the block (:func:`read`), check the facts the stack gives against it (:func:`check_agrees`) and it
    against the pool (:func:`check_fits`), then the pool's subnets against its zone (the one read, else the one
    given: :func:`~.zones.check_zone`; the subnets are read only when a zone is known).

    Returns the pool's subnets as given once every check passed (so that what launches in them depends on the checks
    and a failed one fails the preview), the subnets' zones (:func:`~.zones.subnet_zones`; empty when no zone is
    known), and the facts read."""
    found = read(pool.block_id, parent).apply(
        lambda f: (check_agrees(pool, given, f), check_fits(pool, f), f)[-1])

    def zone(f: BlockFacts) -> Optional[str]:
        return f.availability_zone or given.availability_zone

    subnet_zones = found.apply(lambda f: zones.subnet_zones(subnet_ids, parent) if zone(f) else {})
    zone_field = f"{pool.field}.{'availability_zone' if given.availability_zone else 'id'}"
    checked = pulumi.Output.all(subnet_ids, subnet_zones, found).apply(
        lambda a: (zones.check_zone(pool.subnets_field, pool.reservation, zone(a[2]), a[1], zone_field),
                   list(a[0]))[-1])
    return checked, subnet_zones, found
