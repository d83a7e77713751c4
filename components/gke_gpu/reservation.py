"""Where the GKE GPU pool's nodes come from besides on-demand and Spot: a Compute Engine reservation the pool consumes
(``reservation``), or flex-start VMs of the Dynamic Workload Scheduler (``flex_start``), obtained through a queue with
queued provisioning.

A reservation is brought by name (``affinity: specific``: the pool's ``nodeConfig.reservationAffinity`` names it,
and a node that does not fit in it is not created), or consumed wherever one matches (``any``: on-demand past it); or
the pool consumes none (``none``). A flex-start pool (``nodeConfig.flexStart``, ``maxRunDuration``) gets its nodes
when Google has them; with queued provisioning (``queuedProvisioning.enabled``) only for a ProvisioningRequest, which
Kueue's admission check makes for each team's job, all of a job's nodes at once. The combinations GKE refuses are
refused here, at preview, one line each. The API's words are container v1's (the tests read its discovery
document)."""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from typing import Optional, Sequence

from ..capacity import check_reservation_facts
from ..errors import ConfigError
from . import facts

SPECIFIC, ANY, NONE = "specific", "any", "none"
AFFINITIES = tuple(facts.RESERVATION_AFFINITY)
"""The ``affinity`` values of :class:`ReservationArgs`."""

_FIELD = "node_pool.reservation"
_NAME = re.compile(rf"{facts.RESERVATION_NAME}|{facts.SHARED_RESERVATION}|{facts.RESERVATION_SUB_BLOCK}")
_SUB_BLOCK = re.compile(facts.RESERVATION_SUB_BLOCK)


@dataclass(frozen=True, kw_only=True)
class ReservationArgs:
    """A Compute Engine reservation the GPU pool consumes. The known facts (``machine_type``, ``zone``, ``count``,
    ``start``, ``end``) are optional; given, they are checked at preview against the pool."""

    affinity: str
    """``specific`` (the reservation ``name``: nodes come from it only), ``any`` (any matching reservation, then
    on-demand) or ``none`` (consume no reservation)."""
    name: Optional[str] = None
    """``specific`` only: the reservation's name, or ``projects/PROJECT/reservations/NAME`` for one another project
    shares."""
    only: bool = False
    """Reservations only: no node may come from anywhere else (``specific`` only; the pool is stamped so that plan and
    the policy pack know)."""
    machine_type: Optional[str] = None
    """The reserved machine type, when known: the pool's must be it."""
    zone: Optional[str] = None
    """The reservation's zone, when known: the pool's nodes must be in it (``node_locations``)."""
    count: Optional[int] = None
    """VMs reserved, when known: with ``specific``, the pool's ``max_nodes`` may not exceed it."""
    start: Optional[str] = None
    """When the reservation starts (ISO date or date-time, UTC), when known."""
    end: Optional[str] = None
    """When it ends (ISO date or date-time, UTC), when known: an end in the past is refused."""


@dataclass(frozen=True, kw_only=True)
class FlexStartArgs:
    """Flex-start VMs (Dynamic Workload Scheduler): GPUs obtained when Google has them, for up to seven days, at a
    discount; with ``queued`` (the default) only for a ProvisioningRequest, which Kueue's admission check makes for a
    team's job, so that the job waits in its queue until all its nodes come."""

    queued: bool = True
    """Queued provisioning: the pool's nodes come only for a ProvisioningRequest (needs ``teams``: Kueue makes it).
    False: flex-start VMs the autoscaler asks for like any other node."""
    max_run_duration_seconds: Optional[int] = None
    """How long each node may run before GKE removes it, in seconds (at most seven days, GKE's default)."""


def check_reservation(res: ReservationArgs, *, machine_type: str, node_locations: Sequence[str], location: str,
                      max_nodes: int, spot: bool, now: Optional[datetime.datetime] = None) -> None:
    """Raise :class:`ConfigError` for a reservation the pool cannot consume as said."""
    if res.affinity not in AFFINITIES:
        raise ConfigError(f"{_FIELD}.affinity", res.affinity, "not a reservation affinity",
                          f"use {', '.join(AFFINITIES)}")
    if res.affinity == SPECIFIC and not (isinstance(res.name, str) and _NAME.fullmatch(res.name)):
        raise ConfigError(f"{_FIELD}.name", res.name, "specific consumes the reservation named, by its name",
                          "give the name `gcloud compute reservations list` shows, or projects/PROJECT/reservations/NAME"
                          " (NAME/reservationBlocks/BLOCK/reservationSubBlocks/SUB_BLOCK for one sub-block)")
    if res.affinity != SPECIFIC and res.name is not None:
        raise ConfigError(f"{_FIELD}.name", res.name, f"affinity {res.affinity} names no reservation",
                          "use affinity specific, or drop name")
    if res.only and res.affinity != SPECIFIC:
        raise ConfigError(f"{_FIELD}.only", True, f"affinity {res.affinity} launches on-demand nodes when no "
                          "reservation has room", "use affinity specific with the reservation's name, or drop only")
    if spot and res.affinity != NONE:
        raise ConfigError("node_pool.spot", True, "Spot VMs consume no reservation",
                          "set spot false on a reservation's pool, or use affinity none")
    if res.machine_type is not None and res.machine_type != machine_type:
        raise ConfigError("node_pool.machine_type", machine_type, f"the reservation holds {res.machine_type} VMs",
                          f"use machine_type {res.machine_type}")
    _check_rack(res, machine_type, max_nodes)
    if res.zone is not None:
        _check_zone(res.zone, node_locations, location)
    check_reservation_facts(_FIELD, count=res.count, start=res.start, end=res.end, now=now,
                            bound=("node_pool.max_nodes", max_nodes) if res.affinity == SPECIFIC else None)


def _check_rack(res: ReservationArgs, machine_type: str, max_nodes: int) -> None:
    """An NVL72 machine (:data:`facts.NVL72_FAMILIES`) on a reservation: one sub-block of it (one NVLink domain), no
    more nodes than the domain holds."""
    domain = facts.NVL72_FAMILIES.get(machine_type.split("-")[0])
    if domain is None or res.affinity != SPECIFIC:
        return
    if not _SUB_BLOCK.fullmatch(res.name):
        raise ConfigError(f"{_FIELD}.name", res.name, f"{machine_type} nodes share NVLink only within one sub-block "
                          f"of the reservation (one NVL72 domain of {domain} VMs)",
                          f"name the sub-block: {res.name}/reservationBlocks/BLOCK/reservationSubBlocks/SUB_BLOCK "
                          "(`gcloud compute reservations sub-blocks list`)")
    if max_nodes > domain:
        raise ConfigError("node_pool.max_nodes", max_nodes, f"a sub-block is one NVL72 domain of {domain} "
                          f"{machine_type} VMs", f"set max_nodes to {domain} or less (a pool per sub-block for more)")


def _check_zone(zone: object, node_locations: Sequence[str], location: str) -> None:
    """The reservation's zone a zone, of the cluster's region, and among the pool's zones. Checked by the names (a
    zone is its region's name and a letter): that the reservation is in that zone is read only at ``pulumi up``."""
    home = facts.region(location)
    zones = list(node_locations) or ([location] if facts.is_zone(location) else [])
    if not (isinstance(zone, str) and facts.is_zone(zone)):
        ours = [z for z in zones if facts.region(z) == home]
        raise ConfigError(f"{_FIELD}.zone", zone, "not a zone: a reservation is in one zone (REGION-LETTER)",
                          "give the zone `gcloud compute reservations list` shows for it" +
                          (f", e.g. {ours[0]} of node_locations" if ours else f", a zone of {home}"))
    if facts.region(zone) != home:
        raise ConfigError(f"{_FIELD}.zone", zone, f"in {facts.region(zone)}, and the nodes of a cluster in "
                          f"{location} are only in zones of {home}", f"set `location` to {facts.region(zone)} and "
                          f"node_locations to [{zone}] (the cluster beside the reservation), or name a reservation "
                          f"of {home}")
    if zone not in zones:
        raise ConfigError("node_pool.node_locations", zones, f"the reservation is in {zone}, and nodes elsewhere "
                          "never consume it", f"set node_locations [{zone}]")


def check_flex_start(flex: FlexStartArgs, *, reservation: Optional[ReservationArgs], spot: bool, min_nodes: int,
                     teams: bool) -> None:
    """Raise :class:`ConfigError` for a flex-start pool GKE refuses (GKE docs: flex-start pools take no reservation
    and no Spot, start at 0 nodes with autoscaling; a queued pool's nodes come only for a ProvisioningRequest)."""
    if spot:
        raise ConfigError("node_pool.spot", True, "flex-start is its own provisioning model, not Spot",
                          "set spot false, or drop flex_start")
    if reservation is not None and reservation.affinity != NONE:
        raise ConfigError(f"{_FIELD}.affinity", reservation.affinity, "a flex-start pool consumes no reservation "
                          "(reservation affinity none)", "drop reservation, or drop flex_start")
    if min_nodes != 0:
        raise ConfigError("node_pool.min_nodes", min_nodes, "a flex-start pool starts at 0 nodes and GKE adds "
                          "them when it obtains them", "set min_nodes 0")
    seconds = flex.max_run_duration_seconds
    if seconds is not None and not (isinstance(seconds, int) and 0 < seconds <= facts.MAX_RUN_DURATION_SECONDS):
        raise ConfigError("node_pool.flex_start.max_run_duration_seconds", seconds, "GKE runs a flex-start node "
                          f"1 to {facts.MAX_RUN_DURATION_SECONDS} seconds (seven days)", "use e.g. 86400 (a day)")
    if flex.queued and not teams:
        raise ConfigError("node_pool.flex_start.queued", True, "a queued pool's nodes come only for a "
                          "ProvisioningRequest, and with no teams no Kueue is installed to make one",
                          "add teams (their jobs then wait in Kueue until the nodes come), or set queued false")


def affinity_of(res: Optional[ReservationArgs], flex: Optional[FlexStartArgs]) -> Optional[str]:
    """The pool's ``consumeReservationType``: the reservation's; ``NO_RESERVATION`` on flex-start; ``None`` (GKE's
    default) otherwise."""
    if res is not None:
        return facts.RESERVATION_AFFINITY[res.affinity]
    return facts.RESERVATION_AFFINITY[NONE] if flex is not None else None


def max_run_duration(flex: Optional[FlexStartArgs]) -> Optional[str]:
    """``nodeConfig.maxRunDuration`` as GKE takes it (``86400s``), when given."""
    return f"{flex.max_run_duration_seconds}s" if flex and flex.max_run_duration_seconds else None

