"""Reserved capacity for the AKS GPU agent pool: an Azure capacity reservation group, brought by its resource id and
named in the agent pool's ``capacityReservationGroupID``.

What Azure documents, and what this module does with it:

- AKS uses the group through the cluster's identity, which must be user-assigned and hold Contributor on the group's
  resource group; a system-assigned identity cannot (AKS docs, "Assign capacity reservation groups to AKS node
  pools"). The component then creates that identity and the role assignment, and the agent pool after them.
- A capacity reservation is one VM size in one region (and, if it names one, one zone), a quantity of VMs; a VM uses
  it only if it names the group (Azure docs, "On-demand capacity reservation"): the pool's ``vm_size`` must be the
  reserved size, and with the reservation's zones known, the pool's zones must be among them.
- Azure deploys VMs of the group past the reserved quantity without the reservation's guarantee, as long as it has
  capacity (Azure docs, "Overallocate capacity reservation"): a pool on a group falls back to on-demand past it, and
  no setting of the pool stops that. ``only`` (reservations only) cannot be honoured and is refused.
- Spot VMs cannot use a capacity reservation (Azure docs, "On-demand capacity reservation", limitations): refused.
- A capacity reservation has no term: it holds until deleted. ``start`` and ``end`` are the window the stack's owner
  plans for it (shown by ``gpuready plan``, read by the policy pack); an ``end`` in the past is refused."""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from .. import azure_roles
from ..capacity import check_reservation_facts, reservation_stamps
from ..errors import ConfigError
from . import facts

KIND = facts.RESERVATION_KIND
_FIELD = "node_pool.reservation"


@dataclass(frozen=True, kw_only=True)
class CapacityReservationGroupArgs:
    """An Azure capacity reservation group the GPU agent pool takes its VMs from (``capacityReservationGroupID``).
    The known facts (``vm_size``, ``count``, ``zones``, ``start``, ``end``) are optional; given, they are checked at
    preview against the pool. A new cluster gets a user-assigned identity with Contributor on the group's resource
    group; an existing cluster must have one already."""

    group_id: str
    """The group's resource id: ``/subscriptions/SUB/resourceGroups/RG/providers/Microsoft.Compute/
    capacityReservationGroups/NAME`` (``az capacity reservation group show -n NAME -g RG --query id -o tsv``)."""
    vm_size: Optional[str] = None
    """The VM size reserved, when known: the pool's ``vm_size`` must be it."""
    count: Optional[int] = None
    """VMs reserved, when known. Nodes past it still come, without the reservation's guarantee (Azure
    overallocates); ``gpuready plan`` counts only these as reserved."""
    zones: Sequence[str] = ()
    """The zones its reservations are in (``1``, ``2``, ``3``), when known: the pool must be zonal, in these only."""
    start: Optional[str] = None
    """From when the stack counts on it (ISO date or date-time, UTC), when known."""
    end: Optional[str] = None
    """Until when the stack counts on it (ISO date or date-time, UTC), when known: an end in the past is refused."""
    only: bool = False
    """Reservations only. Refused: Azure deploys the pool's VMs past the group's reserved count without its
    guarantee, and no agent pool setting stops it."""


def check(res: CapacityReservationGroupArgs, *, vm_size: str, spot: bool, zones: Sequence[str],
          now: Optional[datetime.datetime] = None) -> None:
    """Raise :class:`ConfigError` for a group the agent pool cannot take its VMs from, or a promise Azure would not
    keep."""
    if not isinstance(res.group_id, str) or not re.fullmatch(facts.CAPACITY_RESERVATION_GROUP_ID, res.group_id,
                                                              re.IGNORECASE):
        raise ConfigError(f"{_FIELD}.group_id", res.group_id, "not a capacity reservation group's resource id",
                          "give /subscriptions/SUB/resourceGroups/RG/providers/Microsoft.Compute/"
                          "capacityReservationGroups/NAME (az capacity reservation group show --query id -o tsv)")
    if spot:
        raise ConfigError("node_pool.spot", True, "Spot VMs cannot use a capacity reservation group",
                          "set spot false (Regular priority), or remove node_pool.reservation")
    if res.only:
        raise ConfigError(f"{_FIELD}.only", True, "Azure deploys a group's VMs past its reserved count without the "
                          "reservation's guarantee (overallocation), and no agent pool setting stops that",
                          "set only false; cap max_count at the reserved count to stay within it")
    if res.vm_size is not None and res.vm_size.lower() != vm_size.lower():
        raise ConfigError("node_pool.vm_size", vm_size, f"the capacity reservation group holds {res.vm_size} only",
                          f"set vm_size to {res.vm_size}")
    if res.count is not None and res.count < 1:
        raise ConfigError(f"{_FIELD}.count", res.count, "a capacity reservation holds 1 VM or more",
                          "set the reserved VM count, or leave it out")
    bad = [z for z in res.zones if z not in facts.ZONES]
    if bad:
        raise ConfigError(f"{_FIELD}.zones", bad, "not Azure availability zones", "use 1, 2 and/or 3")
    outside = [z for z in zones if z not in res.zones]
    if res.zones and (not zones or outside):
        raise ConfigError("node_pool.availability_zones", list(zones), f"the reservations are in zone(s) "
                          f"{', '.join(res.zones)}: VMs elsewhere do not use them",
                          f"set availability_zones to {list(res.zones)} (or some of them)")
    check_reservation_facts(_FIELD, count=None, start=res.start, end=res.end, now=now)


def scope(group_id: str) -> str:
    """The group's resource group, as a role assignment's scope: ``/subscriptions/SUB/resourceGroups/RG``."""
    return "/".join(group_id.split("/")[:5])


def contributor_role(group_id: str) -> str:
    """The built-in Contributor role definition's id in the group's subscription."""
    return (f"/subscriptions/{group_id.split('/')[2]}/providers/Microsoft.Authorization/roleDefinitions/"
            f"{azure_roles.CONTRIBUTOR_ROLE}")


def stamps(res: Optional[CapacityReservationGroupArgs]) -> dict[str, str]:
    """The agent pool's tags that tell readers the reservation's known facts
    (:func:`gpuready_components.capacity.reservation_stamps`)."""
    if res is None:
        return {}
    return reservation_stamps(only=res.only, start=res.start, end=res.end, count=res.count)


def output(res: CapacityReservationGroupArgs, node_zones: Sequence[str] = ()) -> dict[str, Any]:
    """The reservation as the ``gpuReservations`` output holds it (beside its pool): kind, target, only, the facts
    given (``zone`` when it is in one) and, its zones given, ``nodeZones``: the pool's zones, which :func:`check` found
    among them."""
    known = {"start": res.start, "end": res.end, "count": res.count,
             "zone": res.zones[0] if len(res.zones) == 1 else None,
             "nodeZones": list(node_zones) if res.zones else None}
    return {"kind": KIND, "target": res.group_id, "only": res.only, **{k: v for k, v in known.items() if v is not None}}
