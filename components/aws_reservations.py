"""EC2 capacity reservations as the AWS platforms' launch templates and NodeClasses name them: the reservation id's
and the resource group ARN's shapes, the launch template's ``capacityReservationPreference`` values, and how
reservations selected by their tags are said. Shared by the Batch compute environments' and the EKS node groups'
launch templates, Karpenter's and Auto Mode's NodeClasses, and the readers.

The preferences are EC2's (botocore EC2 ``CapacityReservationPreference``; the tests read them)."""

from __future__ import annotations

import re
from typing import Mapping, Optional

from .errors import ConfigError

OPEN = "open"
TARGETED = "targeted"
PREFERENCES = (OPEN, TARGETED)
"""An ODCR's ``preference``: ``open`` (any matching open reservation) or ``targeted`` (the one named)."""
RESERVATIONS_ONLY = "capacity-reservations-only"
"""EC2's preference that launches into the targeted reservation or group only (botocore
``CapacityReservationPreference``)."""
RESERVATION_ID = re.compile(r"cr-[0-9a-f]{17}")
"""A capacity reservation id as EC2 makes them (``cr-0123456789abcdef0``; botocore's ``CapacityReservationId`` is a
plain string, so the shape is EC2's documented examples')."""
RESOURCE_GROUP_ARN = re.compile(r"arn:aws[a-z-]*:resource-groups:[a-z0-9-]+:\d{12}:group/[A-Za-z0-9_.-]{1,128}")
"""A resource group's ARN (an ODCR group: ``arn:aws:resource-groups:REGION:ACCOUNT:group/NAME``)."""


def check_names(field: str, id: Optional[str], resource_group_arn: Optional[str]) -> None:
    """Raise :class:`ConfigError` for a reservation id or resource group ARN not of EC2's shape (``field``: the
    reservation's key, e.g. ``node_group.reservation``)."""
    if id is not None and not RESERVATION_ID.fullmatch(id):
        raise ConfigError(f"{field}.id", id, "not a capacity reservation id (cr- and 17 hex digits)",
                          "copy the id from the EC2 console or `aws ec2 describe-capacity-reservations`")
    if resource_group_arn is not None and not RESOURCE_GROUP_ARN.fullmatch(resource_group_arn):
        raise ConfigError(f"{field}.resource_group_arn", resource_group_arn, "not a resource group ARN",
                          "use arn:aws:resource-groups:REGION:ACCOUNT:group/NAME")


def tags_target(tags: Mapping[str, str]) -> str:
    """Reservations selected by ``tags``, as the plan, the outputs and smoke say them: ``tags k=v,...``."""
    return "tags " + ",".join(f"{k}={v}" for k, v in sorted(tags.items()))
