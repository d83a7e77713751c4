"""Reserved capacity for the Batch GPU compute environments: an On-Demand Capacity Reservation (ODCR), brought by id
or resource group (or any matching open one) and written into the GPU launch template's
``capacityReservationSpecification`` (botocore EC2 ``LaunchTemplateCapacityReservationSpecificationRequest``), which
AWS Batch passes to the instances it launches (the Batch user guide's "Use Amazon EC2 launch templates with AWS Batch"
does not list it among the launch template parameters Batch ignores).

What Batch does not support is refused at construction: a Capacity Block for ML, and a reservation beside Spot
environments (a reservation is on-demand capacity). A Capacity Block's launch template needs ``instanceMarketOptions``
market type ``capacity-block`` (EC2's "Launch instances using Capacity Blocks" and botocore's EC2 ``MarketType``), and
the AWS Batch user guide, "Use Amazon EC2 launch templates with AWS Batch"
(https://docs.aws.amazon.com/batch/latest/userguide/launch-templates.html), lists "Instance market options (AWS Batch
must control Spot Instance configuration)" among the launch template parameters Batch ignores; no Batch document says
otherwise (the user guide has no Capacity Block page; Batch's API has no market type, botocore ``ComputeResource``).
Against it stand AWS's sample templates (aws-samples/awsome-distributed-training, ``1.architectures/3.aws-batch``,
P5 and P6 on Batch) that write exactly that market type into a Batch launch template: a sample, not a documented
contract, so the refusal stays until a Batch document says the market type reaches the instances (then the
launch template fields of :mod:`..aws_reservations` apply here as they are). Batch's own ``capacityReservations`` (``CapacityReservationRequest``) belong to ECS Managed Instances
compute environments, which gpuready does not create."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from ..capacity import check_reservation_facts, reservation_entry, reservation_stamps
from ..catalog import GpuInstanceType
from ..aws_reservations import OPEN, PREFERENCES, RESERVATIONS_ONLY, TARGETED, check_names
from ..errors import ConfigError

ODCR = "odcr"
UNSUPPORTED = {"capacity-block": "AWS Batch ignores a launch template's instance market options (Batch user guide, "
                                 "launch-templates), so a Capacity Block's market type never reaches the instances"}
"""Reservation kinds Batch cannot launch into, with the reason (see the module's docstring for the sources)."""
_FIELD = "reservation"


@dataclass(frozen=True, kw_only=True)
class BatchReservationArgs:
    """An On-Demand Capacity Reservation the GPU compute environments launch into. The known facts are optional;
    given, they are checked at preview against the environment."""

    kind: str = ODCR
    """``odcr`` (a ``capacity-block`` is refused: Batch ignores the market type it needs)."""
    id: Optional[str] = None
    """The reservation's id (``cr-`` and 17 hex digits): a launch past it fails (no on-demand beyond it)."""
    resource_group_arn: Optional[str] = None
    """A resource group of reservations instead of ``id``: on-demand past them unless ``only``."""
    preference: Optional[str] = None
    """``targeted`` (the default with ``id`` or ``resource_group_arn``) or ``open`` (any matching open reservation,
    on-demand past it; give no id)."""
    instance_type: Optional[str] = None
    """The reserved instance type, when known: one of ``instance_types``."""
    availability_zone: Optional[str] = None
    """Its Availability Zone, when known (the environment's subnets must include one in it)."""
    count: Optional[int] = None
    """Instances reserved, when known: with ``only``, ``max_vcpus`` may not exceed theirs."""
    start: Optional[str] = None
    """When it starts (ISO date or date-time, UTC), when known."""
    end: Optional[str] = None
    """When it ends (ISO date or date-time, UTC), when known: an end in the past is refused."""
    only: bool = False
    """Reservations only: a resource group gets EC2's ``capacity-reservations-only`` preference; ``open`` cannot."""

    @property
    def preference_of(self) -> str:
        if self.preference:
            return self.preference
        return TARGETED if (self.id or self.resource_group_arn) else OPEN


def check(res: BatchReservationArgs, *, capacity: Sequence[str], instance_types: Sequence[str],
          rows: Sequence[GpuInstanceType], max_vcpus: int, now: Optional[datetime.datetime] = None) -> None:
    """Raise :class:`ConfigError` for a reservation the GPU compute environments cannot launch into."""
    if res.kind in UNSUPPORTED:
        raise ConfigError(f"{_FIELD}.kind", res.kind, UNSUPPORTED[res.kind],
                          "use an ODCR (kind odcr), or EKS (gpuready:platform eks) for a Capacity Block")
    if res.kind != ODCR:
        raise ConfigError(f"{_FIELD}.kind", res.kind, "not a reservation kind Batch launches into", "use odcr")
    if list(capacity) != ["on-demand"]:
        raise ConfigError("capacity", list(capacity), "a reservation is on-demand capacity, not Spot",
                          "use ['on-demand']")
    check_names(_FIELD, res.id, res.resource_group_arn)
    named = res.id is not None or res.resource_group_arn is not None
    if res.id is not None and res.resource_group_arn is not None:
        raise ConfigError(f"{_FIELD}.id", res.id, "an ODCR is targeted by an id or a resource group ARN, not both",
                          "keep one of id and resource_group_arn")
    if res.preference is not None and res.preference not in PREFERENCES:
        raise ConfigError(f"{_FIELD}.preference", res.preference, "not an ODCR preference",
                          f"use {' or '.join(PREFERENCES)}")
    if (res.preference_of == OPEN) == named:
        raise ConfigError(f"{_FIELD}.preference", res.preference_of, "open names no reservation and targeted names "
                          "one", "give id or resource_group_arn (targeted), or neither (open)")
    if res.only and res.preference_of == OPEN:
        raise ConfigError(f"{_FIELD}.only", True, "an open preference launches on-demand when no matching "
                          "reservation has room", "target the reservation by id or resource_group_arn")
    if res.instance_type is not None and res.instance_type not in instance_types:
        raise ConfigError("instance_types", list(instance_types), f"the reservation holds {res.instance_type} only",
                          f"add {res.instance_type} to instance_types")
    if res.count is not None:
        if res.count < 1:
            raise ConfigError(f"{_FIELD}.count", res.count, "a reservation holds 1 instance or more",
                              "set the reserved instance count, or leave it out")
        row = next((r for r in rows if r.name == res.instance_type), None)
        if res.only and row is not None and max_vcpus > res.count * row.vcpus:
            raise ConfigError("max_vcpus", max_vcpus, f"the reservation (only: true) holds {res.count} instances of "
                              f"{row.vcpus} vCPUs, so the vCPUs past them never come",
                              f"set max_vcpus to {res.count * row.vcpus} or less")
    check_reservation_facts(_FIELD, count=None, start=res.start, end=res.end, now=now)


def specification(res: BatchReservationArgs) -> dict[str, object]:
    """The launch template's ``capacityReservationSpecification`` (Pulumi's names): the target (id or resource
    group), or the ``open`` preference; ``capacity-reservations-only`` for a reservations-only group."""
    target = {k: v for k, v in (("capacity_reservation_id", res.id),
                                ("capacity_reservation_resource_group_arn", res.resource_group_arn)) if v}
    preference = OPEN if res.preference_of == OPEN else (
        RESERVATIONS_ONLY if res.only and res.resource_group_arn is not None else None)
    return {**({"capacity_reservation_target": target} if target else {}),
            **({"capacity_reservation_preference": preference} if preference else {})}


def stamps(res: Optional[BatchReservationArgs]) -> dict[str, str]:
    """The tags that tell readers the reservation's known facts."""
    return {} if res is None else reservation_stamps(only=res.only, start=res.start, end=res.end, count=res.count)


def target(res: BatchReservationArgs) -> str:
    """What the reservation targets: its id, its resource group's ARN, or ``open``."""
    return res.id or res.resource_group_arn or OPEN


def describe(res: BatchReservationArgs) -> str:
    """``odcr cr-...``, ``odcr open``: the reservation in a line."""
    return f"{res.kind} {target(res)}"


def output(res: BatchReservationArgs, pool: str, subnet_zones: Optional[Sequence[str]] = None) -> dict[str, Any]:
    """The reservation as the ``gpuReservations`` output holds it, for the GPU compute environment ``pool``."""
    return reservation_entry(pool=pool, kind=res.kind, target=target(res), only=res.only, start=res.start,
                             end=res.end, count=res.count, zone=res.availability_zone, subnet_zones=subnet_zones)
