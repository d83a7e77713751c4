"""Reserved GPU capacity rules: a reservation paid for but left idle, and a pool said to run on reservations only that
would still launch on-demand or Spot nodes."""

from __future__ import annotations

import datetime
from typing import Optional

from gpuready.resources import capacity_readers, gpu_pools
from gpuready.resources.base import RESERVED, Source
from gpuready_components.capacity import parse_time

from ..gpu import facts, of_kind, source
from ..rule import ADVISORY, each, stack_rule


def reserved_first(found: Source) -> bool:
    """Its nodes come from a prepaid reservation first (what it reserves is paid whether used or not)."""
    return found.kinds[:1] == (RESERVED,) and (found.reservation is None or found.reservation.prepaid)


def active(found: Source, now: Optional[datetime.datetime] = None) -> bool:
    """Its reservation has started and not ended, as far as the stack knows (an unknown window counts as active)."""
    res = found.reservation
    now = now or datetime.datetime.now(datetime.timezone.utc)
    return res is None or ((res.start is None or parse_time(res.start) <= now) and
                           (res.end is None or parse_time(res.end) > now))


def _check_idle(resources, config):
    def check(resource):
        pool = facts(resource)
        if not pool.is_gpu or resource.name in (config.get("allow") or []):
            return
        found = source(resource, resources)
        minimum, field = pool.minimum
        if not reserved_first(found) or minimum > 0 or not active(found):
            return
        res = found.reservation
        count = pool.minimum_for(res.count if res is not None else None)
        key = f" ({pool.MINIMUM_KEY} in the reference stacks)" if pool.MINIMUM_KEY else ""
        said = f" ({res})" if res is not None else ""
        yield resource, (f"scales to zero ({field} {minimum}) on a prepaid reservation{said}: the reserved GPUs are paid "
                         "for every hour whether a node runs on them or not, and a job waits for a node to boot"), \
            f"set {field} to {count}{key} while the reservation is active, or add the name to this rule's allow list"
    yield from each(of_kind(resources, *gpu_pools()), check)


gpu_reservation_idle = stack_rule(
    "gpu-reservation-idle",
    "A GPU pool on a prepaid reservation (a Capacity Block, an ODCR, a GKE reservation, an Azure capacity reservation "
    "group) keeps its reserved nodes while the reservation is active rather than scaling to zero.",
    ADVISORY, _check_idle, {"allow": {"type": "array", "items": {"type": "string"}, "default": []}})


def _check_fallback(resources, config):
    def check(resource):
        reader = facts(resource)
        if not callable(getattr(reader, "source", None)) or not reader.gpu_rows:
            return
        found = source(resource, resources)
        if found.only and found.falls_back:
            others = [k for k in found.kinds if k != RESERVED]
            past = f"past {found.reservation}" if found.reservation else "with no reservation named"
            yield resource, (f"the stack said reservations only, but it launches {' and '.join(others)} nodes {past} "
                             "(billed at their own rates, and jobs run where the reservation's network and placement "
                             "were not bought)"), \
                f"{reader.RESERVED_ONLY_FIX}, or drop reservations-only"
    yield from each(of_kind(resources, *capacity_readers()), check)


gpu_reservation_fallback = stack_rule(
    "gpu-reservation-fallback",
    "A GPU pool the stack said runs on reserved capacity only launches no on-demand or Spot nodes when its reservation "
    "is full, ended or missing.",
    ADVISORY, _check_fallback)


RULES = [gpu_reservation_idle, gpu_reservation_fallback]
