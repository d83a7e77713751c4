"""The teams of an AWS Batch stack as fair-share shares: each team's share identifier and weight factor, and the
checks of what Batch's fair share can and cannot express, at construction.

AWS Batch fair share (a ``SchedulingPolicy`` on a job queue) orders the queue's jobs by share: under contention a
share gets the queue's capacity in proportion to ``1 / weightFactor``, and a share with no job lends all of it. It
has no hard per-share GPU quota, no per-share borrowing or lending limit and no per-share compute environment. So on
Batch a team's ``gpus`` sets its share: ``weightFactor`` is proportional to ``1 / (gpus x weight)``, so that with
every weight 1 and the quotas adding up to the capacity, each team gets its quota's GPUs whenever all teams are
busy, and idle GPUs go to the teams that have jobs. A team with 0 GPUs gets Batch's least share (999.9999).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from .. import teams as shared
from ..errors import ConfigError
from . import facts

ALPHANUMERIC = re.compile(r"[A-Za-z0-9]+")
"""What a share identifier is: "limited to 255 alphanumeric characters" (ShareAttributes, SubmitJob)."""


@dataclass(frozen=True)
class Share:
    """One team's share of the fair-share queues."""

    team: shared.TeamArgs
    identifier: str
    """Its ``shareIdentifier``: the team's name without '-' (a DNS-1123 label is otherwise alphanumeric)."""
    weight_factor: float
    """Its ``weightFactor``: the largest team 1.0, the others ``largest / (gpus x weight)``, 4 decimals."""


def identifier(name: str) -> str:
    """The share identifier of team ``name``: the name without its '-' (``ml-research`` -> ``mlresearch``)."""
    return name.replace("-", "")


def shares(teams: Sequence[shared.TeamArgs], pools: Sequence[shared.Pool], overcommit: bool,
           field_name: str = "teams") -> tuple[Share, ...]:
    """``teams`` as shares, after :func:`~gpuready_components.teams.check` against ``pools``; raise
    :class:`ConfigError` for a team Batch's fair share cannot express: a ``borrow`` or ``lend`` limit, ``pools`` other
    than all of them, two teams whose share identifiers are the same, or a share more than 999.9999 times smaller
    than the largest."""
    shared.check(teams, pools, overcommit, field_name)
    every = {p.name for p in pools}
    taken: dict[str, int] = {}
    for i, team in enumerate(teams):
        where = f"{field_name}[{i}]"
        for key in ("borrow", "lend"):
            if getattr(team, key) is not None:
                raise ConfigError(f"{where}.{key}", getattr(team, key), "AWS Batch fair share has no per-team "
                                  "borrowing or lending limit: idle GPUs go to the teams with jobs, by share",
                                  f"leave {key} unset on aws-batch (fairShareComputeReservation holds GPUs back "
                                  "for idle teams)")
        if team.pools and set(team.pools) != every:
            raise ConfigError(f"{where}.pools", list(team.pools), "AWS Batch fair share cannot keep a team off a "
                              "compute environment: every team's jobs may run on every GPU compute environment of "
                              "its queue", "leave pools unset on aws-batch")
        name = identifier(team.name)
        if not ALPHANUMERIC.fullmatch(name) or len(name) > facts.SHARE_IDENTIFIER_MOST:
            raise ConfigError(f"{where}.name", team.name, "no share identifier (alphanumeric) can be made of it",
                              "use letters and digits")
        if name in taken:
            raise ConfigError(f"{where}.name", team.name, f"its share identifier {name} is also that of "
                              f"{field_name}[{taken[name]}] ({teams[taken[name]].name}): Batch identifiers drop '-'",
                              "give the teams names that differ in more than '-'")
        taken[name] = i
    sizes = [t.gpus * t.weight for t in teams]
    largest = max(sizes, default=0)
    low, high = facts.SHARE_WEIGHT_RANGE
    out = []
    for i, (team, size) in enumerate(zip(teams, sizes)):
        factor = 1.0 if not largest else high if not size else round(largest / size, facts.SHARE_WEIGHT_DIGITS)
        if size and factor > high:
            raise ConfigError(f"{field_name}[{i}].gpus", team.gpus, f"its share (gpus x weight {size}) is over "
                              f"{high:g} times smaller than the largest ({largest}), past Batch's largest weight factor",
                              "raise its gpus or weight, or set gpus to 0 for Batch's least share")
        out.append(Share(team, identifier(team.name), max(factor, low)))
    return tuple(out)


def check_policy(compute_reservation: int, decay_seconds: int) -> None:
    """Raise :class:`ConfigError` for a ``computeReservation`` or ``shareDecaySeconds`` Batch refuses."""
    for field, value, (low, high) in (
            ("fair_share_compute_reservation", compute_reservation, facts.COMPUTE_RESERVATION_RANGE),
            ("fair_share_decay_seconds", decay_seconds, facts.SHARE_DECAY_SECONDS_RANGE)):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ConfigError(field, value, f"Batch accepts a whole number from {low} to {high}",
                              f"use a value between {low} and {high}")
