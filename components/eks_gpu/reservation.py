"""Reserved capacity for the EKS GPU node group: an EC2 Capacity Block for ML or an On-Demand Capacity Reservation
(ODCR), brought by id (or, for an ODCR, a resource group's ARN) and written into the node group's launch template.

A Capacity Block is one instance type in one Availability Zone, a fixed count, from a start to an end time: the node
group takes ``capacityType`` ``CAPACITY_BLOCK`` and its launch template ``instanceMarketOptions.marketType``
``capacity-block`` and the block's id as ``capacityReservationTarget``. An ODCR keeps ``ON_DEMAND``; its launch
template names the reservation (targeted) or lets the instances use any matching open reservation (``open``).
The enum values are EC2's and EKS's (botocore's models: ``CapacityTypes``, ``MarketType``,
``CapacityReservationPreference``; the tests read them).

With Karpenter the reservation is selected by the EC2NodeClass (``capacityReservationSelectorTerms``: by id, by the
reservations' tags, or every open one) and the GPU NodePool admits Karpenter's ``reserved`` capacity type, which
Karpenter prefers to Spot and on-demand (``only``: the NodePool admits ``reserved`` alone); see :mod:`.karpenter`.
EKS Auto Mode does the same through a custom ``eks.amazonaws.com/v1`` NodeClass, by id or tags only (see
:mod:`.auto_mode`)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

from ..aws_network.capacity_blocks import BlockFacts, BlockPool
from ..aws_reservations import OPEN, PREFERENCES, RESERVATIONS_ONLY, TARGETED, check_names, tags_target
from ..capacity import check_reservation_facts, reservation_entry, reservation_stamps
from ..errors import ConfigError
from ..k8s_gpu import scalers as sf

CAPACITY_BLOCK = "capacity-block"
ODCR = "odcr"
KINDS = (CAPACITY_BLOCK, ODCR)
"""The ``kind`` values of :class:`CapacityReservationArgs`."""
_NAMED = {CAPACITY_BLOCK: "a Capacity Block", ODCR: "an ODCR"}
"""Each kind as a refusal names it."""
NODE_GROUP_CAPACITY_TYPE = {CAPACITY_BLOCK: "CAPACITY_BLOCK", ODCR: "ON_DEMAND"}
"""EKS ``capacityType`` of a node group on each kind (botocore EKS shape ``CapacityTypes``)."""
MARKET_TYPE = {CAPACITY_BLOCK: "capacity-block"}
"""EC2 launch template ``InstanceMarketOptions.MarketType`` of each kind that has one (EC2 shape ``MarketType``)."""

_FIELD = "node_group.reservation"
NODE_POOL_MODES = (sf.KARPENTER, sf.AUTO_MODE)
"""The scalers whose GPU NodePool's NodeClass selects the reservation (instead of a launch template naming it)."""


@dataclass(frozen=True, kw_only=True)
class CapacityReservationArgs:
    """Reserved GPU capacity the node group launches into: a Capacity Block for ML (``kind`` ``capacity-block``) or an
    On-Demand Capacity Reservation (``kind`` ``odcr``). The known facts (``instance_type``, ``availability_zone``,
    ``count``, ``end``) are optional; given, they are checked at preview against the node group."""

    kind: str
    """``capacity-block`` (an EC2 Capacity Block for ML: capacity type ``CAPACITY_BLOCK``, one instance type) or
    ``odcr`` (an On-Demand Capacity Reservation: capacity type ``ON_DEMAND``)."""
    id: Optional[str] = None
    """The reservation's id (``cr-`` and 17 hex digits); a Capacity Block needs it."""
    resource_group_arn: Optional[str] = None
    """An ODCR only: a resource group of reservations to launch into, instead of ``id``."""
    preference: Optional[str] = None
    """An ODCR only: ``targeted`` (the default with ``id`` or ``resource_group_arn``: launch into that reservation)
    or ``open`` (launch into any matching open reservation; give no id)."""
    instance_type: Optional[str] = None
    """The reserved instance type, when known: the node group must launch only it."""
    availability_zone: Optional[str] = None
    """The reservation's Availability Zone, when known (documentation; the node group's subnets must be in it)."""
    count: Optional[int] = None
    """Instances reserved, when known: a Capacity Block's ``max_size`` may not exceed it (nodes past it never come)."""
    end: Optional[str] = None
    """When the reservation ends (ISO date or date-time, UTC), when known: an end in the past is refused."""
    start: Optional[str] = None
    """When the reservation starts (ISO date or date-time, UTC), when known: shown by ``gpuready plan``, and read by
    the policy pack (a reservation not yet active may sit at zero nodes)."""
    only: bool = False
    """Reservations only: no node of the group launches outside the reservation (a Capacity Block and an ODCR by id
    never do; an ODCR resource group then gets EC2's ``capacity-reservations-only`` preference; ``open`` cannot)."""
    tags: Optional[Mapping[str, str]] = None
    """Karpenter or Auto Mode only, an ODCR only: select every reservation carrying these tags
    (``capacityReservationSelectorTerms`` ``tags``), instead of ``id``; a launch template names a reservation by id or
    resource group, not by tags."""

    @property
    def preference_of(self) -> str:
        """``open`` or ``targeted``: the given ``preference``, else targeted when an id or ARN is given."""
        if self.preference:
            return self.preference
        return TARGETED if (self.id or self.resource_group_arn or self.tags) else OPEN


def check(res: CapacityReservationArgs, *, capacity_type: str, instance_types: Sequence[str], max_size: int,
          mode: str, managed_modes: Sequence[str], now: Optional[datetime.datetime] = None) -> None:
    """Raise :class:`ConfigError` for a reservation the GPU nodes cannot launch into: those of the managed node groups
    (``mode`` among ``managed_modes``: the launch template names it), of Karpenter's NodePool (the EC2NodeClass
    selects it) or of Auto Mode's (a custom NodeClass selects it, by id or tags alone: AWS documents no other term)."""
    if res.kind not in KINDS:
        raise ConfigError(f"{_FIELD}.kind", res.kind, "not a reservation kind", f"use {' or '.join(KINDS)}")
    pools = mode in NODE_POOL_MODES
    who = "Karpenter" if mode == sf.KARPENTER else "EKS Auto Mode"
    if not pools and mode not in managed_modes:
        raise ConfigError("autoscaler.mode", mode, "a reservation is named in the managed node group's launch "
                          "template", f"use {' or '.join((*NODE_POOL_MODES, *managed_modes))}")
    if capacity_type == "SPOT" and not (pools and res.kind == ODCR and not res.only):
        raise ConfigError("node_group.capacity_type", capacity_type, f"{_NAMED[res.kind]} is not Spot capacity"
                          + ((" and a Capacity Block pool mixes no Spot" if res.kind == CAPACITY_BLOCK else
                              " and a reservations-only (only: true) pool admits no Spot") if pools else ""),
                          "use ON_DEMAND (the reservation sets the node group's capacity type)"
                          + (", or set only false (Spot past the reservation)" if pools and res.kind == ODCR else ""))
    if res.tags is not None:
        _check_tags(res, pools)
    if pools and res.resource_group_arn is not None:
        raise ConfigError(f"{_FIELD}.resource_group_arn", res.resource_group_arn, f"{who} selects reservations by "
                          "id or tags, not by resource group", "give id, or tags the group's reservations carry")
    check_names(_FIELD, res.id, res.resource_group_arn)
    if res.kind == CAPACITY_BLOCK:
        if res.id is None or res.resource_group_arn is not None or res.preference is not None:
            raise ConfigError(f"{_FIELD}.id", res.id, "a Capacity Block is launched into by its id alone",
                              "set id to the block's cr-... id (no resource_group_arn, no preference)")
        if len(instance_types) != 1:
            raise ConfigError("node_group.instance_types", list(instance_types),
                              "a Capacity Block reserves one instance type", "list only the block's instance type")
    else:
        if res.preference is not None and res.preference not in PREFERENCES:
            raise ConfigError(f"{_FIELD}.preference", res.preference, "not an ODCR preference",
                              f"use {' or '.join(PREFERENCES)}")
        if res.id is not None and res.resource_group_arn is not None:
            raise ConfigError(f"{_FIELD}.id", res.id, "an ODCR is targeted by an id or a resource group ARN, not both",
                              "keep one of id and resource_group_arn")
        named = res.id is not None or res.resource_group_arn is not None or res.tags is not None
        if res.preference_of == OPEN and named:
            raise ConfigError(f"{_FIELD}.preference", res.preference, "open launches into any matching "
                              "reservation, so it names none", "drop id/resource_group_arn, or use targeted")
        if res.preference_of == TARGETED and not named:
            raise ConfigError(f"{_FIELD}.preference", res.preference, "targeted needs the reservation to target",
                              "set id (cr-...) or resource_group_arn (Karpenter, Auto Mode: or tags), or use open")
        if mode == sf.AUTO_MODE and res.preference_of == OPEN:
            raise ConfigError(f"{_FIELD}.preference", OPEN, "an Auto Mode NodeClass selects reservations by "
                              f"{' or '.join(sf.AUTO_MODE_RESERVATION_TERMS)} only (without one, Auto Mode "
                              "open-matches open ODCRs as on-demand capacity)",
                              "give the ODCR's id or tags, or drop the reservation")
    if res.instance_type is not None and res.instance_type not in instance_types:
        raise ConfigError("node_group.instance_types", list(instance_types),
                          f"the reservation holds {res.instance_type} only", f"use instance_types [{res.instance_type}]")
    if res.count is not None:
        if res.count < 1:
            raise ConfigError(f"{_FIELD}.count", res.count, "a reservation holds 1 instance or more",
                              "set the reserved instance count, or leave it out")
        if (res.kind == CAPACITY_BLOCK or res.only) and max_size > res.count:
            what = "Capacity Block" if res.kind == CAPACITY_BLOCK else "reservation (only: true)"
            raise ConfigError("node_group.max_size", max_size, f"the {what} holds {res.count} instances, "
                              "so the nodes past them never come", f"set max_size to {res.count} or less")
    if res.only and res.kind == ODCR and res.preference_of == OPEN:
        raise ConfigError(f"{_FIELD}.only", True, "an open ODCR preference launches on-demand when no matching "
                          "reservation has room", "target the reservation by id or resource_group_arn, or set only false")
    check_reservation_facts(_FIELD, count=None, start=res.start, end=res.end, now=now)


def _check_tags(res: CapacityReservationArgs, pools: bool) -> None:
    """Tags select ODCRs for a NodeClass alone (Karpenter's or Auto Mode's), and name no id beside them."""
    if not pools:
        raise ConfigError(f"{_FIELD}.tags", dict(res.tags or {}), "a launch template names a reservation by id or "
                          "resource group, not by tags",
                          f"give id or resource_group_arn (or use autoscaler {' or '.join(NODE_POOL_MODES)})")
    if res.kind != ODCR or res.id is not None or not res.tags:
        raise ConfigError(f"{_FIELD}.tags", dict(res.tags or {}), "tags select ODCRs instead of an id",
                          "give an ODCR's id or a non-empty map of its tags, not both (a Capacity Block: its id)")


def capacity_type(res: Optional[CapacityReservationArgs], capacity_type: str) -> str:
    """The node group's EKS ``capacityType``: the reservation's, else the one given."""
    return NODE_GROUP_CAPACITY_TYPE[res.kind] if res is not None else capacity_type


def target(res: CapacityReservationArgs) -> str:
    """What the reservation targets: its id, its resource group's ARN, the tags that select it
    (:func:`tags_target`), or ``open``."""
    return res.id or res.resource_group_arn or (tags_target(res.tags) if res.tags else OPEN)


def describe(res: CapacityReservationArgs) -> str:
    """``capacity-block cr-...``, ``odcr cr-...``, ``odcr tags team=ml``, ``odcr open``: the reservation in a line."""
    return f"{res.kind} {target(res)}"


def preference(res: CapacityReservationArgs) -> Optional[str]:
    """The launch template's ``capacityReservationPreference``: ``open``; ``capacity-reservations-only`` for a
    reservations-only ODCR resource group (EC2 would launch on-demand past the group otherwise); else none (a target
    alone: a launch into a full reservation by id fails rather than falling back)."""
    if res.preference_of == OPEN:
        return OPEN
    return RESERVATIONS_ONLY if res.only and res.resource_group_arn is not None else None


def stamps(res: Optional[CapacityReservationArgs]) -> dict[str, str]:
    """The tags that tell readers the reservation's known facts (:func:`gpuready_components.capacity.reservation_stamps`)."""
    if res is None:
        return {}
    return reservation_stamps(only=res.only, start=res.start, end=res.end, count=res.count)


def block_pool(res: CapacityReservationArgs, *, instance_types: Sequence[str], max_size: int,
               subnets_field: str) -> Optional[BlockPool]:
    """The GPU pool as the facts of its Capacity Block, read at preview, are checked against (its instance types, its
    ``max_size``, its subnets at ``subnets_field``); None unless ``res`` is a Capacity Block named by id."""
    if res.kind != CAPACITY_BLOCK or res.id is None:
        return None
    return BlockPool(block_id=res.id, reservation=describe(res), field=_FIELD, instance_types=tuple(instance_types),
                     types_field="node_group.instance_types", max_size=max_size, max_field="node_group.max_size",
                     subnets_field=subnets_field)


def output(res: CapacityReservationArgs, subnet_zones: Optional[Sequence[str]] = None,
           read: Optional[BlockFacts] = None) -> dict[str, Any]:
    """The reservation as the ``gpuReservations`` output holds it (beside its pool): kind, target, only, the facts
    given or (a Capacity Block: ``read``, from EC2, agreeing with those given) read, whether they were read
    (``factsRead``, a Capacity Block only), and the zones of the pool's subnets when they were read
    (:func:`~gpuready_components.capacity.reservation_entry`)."""
    known = read if read is not None else BlockFacts()
    return reservation_entry(kind=res.kind, target=target(res), only=res.only, start=res.start or known.start,
                             end=res.end or known.end, count=res.count if res.count is not None else known.count,
                             zone=res.availability_zone or known.availability_zone, subnet_zones=subnet_zones,
                             facts_read=known.known if read is not None else None)
