"""How much a pool of instances can hold at most, for capacity summaries and cost caps."""

from __future__ import annotations

import datetime
from typing import Any, Mapping, Optional, Sequence

from .errors import ConfigError


def best_fill(budget: int, items: Sequence[tuple[int, float]]) -> float:
    """The largest total value of instances whose costs fit in ``budget``, any mix and any number of each.

    ``items`` are ``(cost, value)`` pairs, for example ``(vcpus, gpus)`` of each instance type of a Batch compute
    environment whose ``max_vcpus`` is ``budget``. Unbounded knapsack; budgets are vCPU counts, so this stays small.
    """
    best = [0.0] * (budget + 1)
    for spent in range(1, budget + 1):
        for cost, value in items:
            if 0 < cost <= spent:
                best[spent] = max(best[spent], best[spent - cost] + value)
    return best[budget]


RESERVATIONS_ONLY = "reservations-only.gpuready.io"
"""The tag (GCP: label; Kubernetes: annotation) a component puts on a GPU pool whose stack said its nodes come from
reserved capacity only (``reservation.only``), value ``"true"``: the policy pack then flags the pool if its settings
would still launch on-demand or Spot nodes when the reservation is full (``gpu-reservation-fallback``). A tag key
every cloud accepts (AWS tags; GCP and Kubernetes label keys may not hold ``/`` twice, nor capitals)."""
RESERVATION_START = "reservation-start.gpuready.io"
RESERVATION_END = "reservation-end.gpuready.io"
RESERVATION_COUNT = "reservation-count.gpuready.io"
"""Tags (labels, annotations) with a reservation's facts the stack was given, put on the pool beside
:data:`RESERVATIONS_ONLY`, so that ``gpuready plan`` shows the window and the policy pack knows whether it is active:
times as :func:`stamp_time` writes them, the count as digits."""
_STAMP_TIME = "%Y%m%dt%H%M%Sz"


def parse_time(value: str) -> datetime.datetime:
    """An ISO 8601 date or date-time (``2026-12-31``, ``2026-12-31T11:30:00Z``), or one :func:`stamp_time` wrote, in
    UTC (a time with no zone is read as UTC). Raises ``ValueError`` for anything else."""
    try:
        return datetime.datetime.strptime(value, _STAMP_TIME).replace(tzinfo=datetime.timezone.utc)
    except ValueError:
        pass
    when = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    return when.astimezone(datetime.timezone.utc) if when.tzinfo else when.replace(tzinfo=datetime.timezone.utc)


def stamp_time(value: str) -> str:
    """``2026-12-31T11:30:00Z`` as ``20261231t113000z`` (ISO 8601's basic format, lower case): a value every cloud's
    tags and labels and Kubernetes' label values accept (GCP labels take no ``:`` and no capitals)."""
    return parse_time(value).strftime(_STAMP_TIME)


def reservation_stamps(*, only: bool = False, start: Optional[str] = None, end: Optional[str] = None,
                       count: Optional[int] = None) -> dict[str, str]:
    """The stamps of a pool on a reservation, those known only."""
    return {**({RESERVATIONS_ONLY: "true"} if only else {}),
            **({RESERVATION_START: stamp_time(start)} if start else {}),
            **({RESERVATION_END: stamp_time(end)} if end else {}),
            **({RESERVATION_COUNT: str(int(count))} if count is not None else {})}


def read_reservation_stamps(stamps: Any) -> dict[str, Any]:
    """The facts :func:`reservation_stamps` wrote: ``start`` / ``end`` (ISO 8601, UTC), ``count``; those present and
    readable only (an unknown value of a preview is skipped)."""
    if not isinstance(stamps, Mapping):
        return {}
    out: dict[str, Any] = {}
    for key, name in ((RESERVATION_START, "start"), (RESERVATION_END, "end")):
        try:
            out[name] = parse_time(stamps[key]).strftime("%Y-%m-%dT%H:%M:%SZ") if key in stamps else None
        except (TypeError, ValueError):
            pass
    if str(stamps.get(RESERVATION_COUNT, "")).isdigit():
        out["count"] = int(stamps[RESERVATION_COUNT])
    return {k: v for k, v in out.items() if v is not None}


def check_reservation_facts(field: str, *, count: Optional[int], start: Optional[str], end: Optional[str],
                            bound: Optional[tuple[str, int]] = None, unit: str = "VM",
                            now: Optional[datetime.datetime] = None) -> None:
    """Raise :class:`~gpuready_components.errors.ConfigError` for the known facts of a reservation at ``field``
    (``node_pool.reservation``) that cannot hold: a ``count`` below 1, a pool whose most nodes (``bound``: its key and
    value) exceed a count that bounds them, a ``start`` or ``end`` that is not ISO 8601, an end past ``now``, a start
    after the end."""
    if count is not None and count < 1:
        raise ConfigError(f"{field}.count", count, f"a reservation holds 1 {unit} or more",
                          f"set the reserved {unit} count, or leave it out")
    if count is not None and bound is not None and bound[1] > count:
        raise ConfigError(bound[0], bound[1], f"the reservation holds {count} {unit}(s), so the nodes past them are "
                          "never created", f"set {bound[0].rsplit('.', 1)[-1]} to {count} or less")
    times = {}
    for key, value in (("start", start), ("end", end)):
        try:
            times[key] = parse_time(value) if value is not None else None
        except (TypeError, ValueError):
            raise ConfigError(f"{field}.{key}", value, "not an ISO date",
                              "write it like 2026-12-31 or 2026-12-31T11:30:00Z") from None
    if times["end"] is not None and times["end"] <= (now or datetime.datetime.now(datetime.timezone.utc)):
        raise ConfigError(f"{field}.end", end, "the reservation has ended",
                          f"name a current reservation, or remove {field}")
    if times["start"] is not None and times["end"] is not None and times["start"] >= times["end"]:
        raise ConfigError(f"{field}.start", start, f"it is not before the end {end}",
                          "copy start and end from the reservation as the cloud describes it")


def reservation_entry(*, pool: Optional[str] = None, kind: str, target: str, only: bool, start: Optional[str] = None,
                      end: Optional[str] = None, count: Optional[int] = None, zone: Optional[str] = None,
                      subnet_zones: Optional[Sequence[str]] = None,
                      facts_read: Optional[bool] = None) -> dict[str, Any]:
    """One item of a stack's ``gpuReservations`` output: ``pool`` (when given), ``kind``, ``target`` (an id, a group,
    ``tags k=v,...``, ``open``), ``only``, and those known of ``start``, ``end``, ``count``, ``zone``, ``subnetZones``
    (the zones of the pool's subnets, read at preview when the reservation's zone is known) and ``factsRead``
    (whether the reservation's facts were read from the cloud at preview, where the platform reads them: false
    offline), which ``gpuready smoke`` and ``gpuready plan`` read."""
    known = {"start": start, "end": end, "count": count, "zone": zone,
             "subnetZones": list(subnet_zones) if subnet_zones is not None else None, "factsRead": facts_read}
    return {**({"pool": pool} if pool is not None else {}), "kind": kind, "target": target, "only": only,
            **{k: v for k, v in known.items() if v is not None}}
