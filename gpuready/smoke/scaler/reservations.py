"""Why a GPU pod waits on a reservation: what the stack says of the reservations its pools launch into (output
``gpuReservations``), against the clock and the GPU nodes already running. Pure functions to findings."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Mapping, Optional

from gpuready_components import platforms
from gpuready_components.capacity import parse_time
from gpuready_components.k8s_gpu.facts import capacity_of

from .base import Context, Finding

NOT_ACTIVE = "reservation-not-active"
ENDED = "reservation-ended"
FULL = "reservation-full"
WRONG_ZONE = "reservation-wrong-zone"
KINDS = (NOT_ACTIVE, ENDED, FULL, WRONG_ZONE)
"""The findings' ``kind`` codes (stable for ``--json``)."""


def _span(seconds: float) -> str:
    hours = seconds / 3600
    return f"{hours / 24:.1f} days" if hours >= 48 else f"{hours:.1f} h" if hours >= 1 else f"{seconds / 60:.0f} min"


def _time(value: Any) -> Optional[datetime]:
    """An ISO date or time of the stack's outputs, in UTC; None when absent or unreadable."""
    try:
        return parse_time(value) if value else None
    except (TypeError, ValueError):
        return None


def _holds(node: Mapping[str, Any], reservation: Mapping[str, Any], platform: Optional[str]) -> bool:
    """Whether ``node`` runs on ``reservation``: its labels name the reservation (Karpenter), or it is a node of the
    reservation's pool whose labels say reserved capacity (an EKS Capacity Block group)."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    try:
        facts = platforms.node_facts(platform).capacity_labels if platform else ()
    except KeyError:
        facts = ()
    said = capacity_of(labels, facts) or ""
    return reservation["target"] in said or (said.startswith("reserved") and reservation["pool"] in labels.values())


def explain(context: Context, nodes: list[Mapping[str, Any]], now: datetime) -> list[Finding]:
    """A finding for each reservation of the stack that keeps new GPU nodes from coming: in a zone none of the pool's
    subnets is in (both known: ``zone``, ``subnetZones``), not started yet, ended, or (its count known) every
    reserved instance already a node. A reservation the pool may fall past (``only`` false, an ODCR group or
    ``open``) is said too: its nodes then launch on demand, if EC2 has any."""
    findings = []
    for res in context.reservations:
        name = f"{res['pool']}'s reservation ({res['kind']} {res['target']})"
        start, end = (_time(res.get(key)) for key in ("start", "end"))
        zone, subnet_zones = res.get("zone"), res.get("subnetZones")
        if zone and isinstance(subnet_zones, list) and subnet_zones and zone not in subnet_zones:
            findings.append(Finding(WRONG_ZONE, "gpuready", f"{name} is in {zone}, and the pool's subnets are in "
                                    f"{', '.join(subnet_zones)}: no instance of the pool launches into it",
                                    fixes=(f"give the pool a subnet in {zone} and run pulumi up",)))
        if start is not None and start > now:
            findings.append(Finding(NOT_ACTIVE, "gpuready", f"{name} starts at {res['start']}, in "
                                    f"{_span((start - now).total_seconds())}: no node launches into it before then",
                                    fixes=("wait for the start (the autoscaler retries), or run the job on capacity "
                                           "you can get now",)))
        elif end is not None and end <= now:
            findings.append(Finding(ENDED, "gpuready", f"{name} ended at {res['end']}: its instances are gone and "
                                    "none launch into it", fixes=("name a current reservation in gpuready:reservation "
                                                                  "and run pulumi up",)))
        elif res.get("count") is not None:
            holding = sorted(n["metadata"]["name"] for n in nodes if _holds(n, res, context.platform))
            if len(holding) >= int(res["count"]):
                findings.append(Finding(FULL, "gpuready", f"every instance of {name} is already a node "
                                        f"({', '.join(holding)}): a new GPU node waits for one of them to free up",
                                        fixes=("wait for a job on those nodes to end", "grow the reservation, or let "
                                               "the pool fall past it (only: false, an ODCR group)")))
    return findings
