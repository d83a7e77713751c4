"""The teams that share a stack's GPUs, declared once for every platform: each team's GPU quota, what it may borrow
from the others and lend them, its fair-share weight, its Kubernetes namespace and the GPU pools it may use.

Each platform turns them into its own queueing: Kueue ClusterQueues in one cohort and LocalQueues on EKS, GKE and
AKS; a fair-share scheduling policy on AWS Batch. What this module holds is what every platform checks the same way,
at construction (so at ``pulumi preview``): names, duplicates, quotas, pools, and the sum of quotas against what the
stack can reach.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Sequence

from .errors import ConfigError

NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
"""A DNS-1123 label (Kubernetes namespaces, queue names): lowercase letters, digits and '-', at most 63 characters."""
NAME_MOST = 63


@dataclass(frozen=True)
class TeamArgs:
    """One team sharing the stack's GPUs."""

    name: str
    """The team's name, a DNS-1123 label (``ml-research``): its queue's name, and its namespace's unless ``namespace``
    says otherwise."""
    gpus: int
    """GPUs the team is guaranteed (its nominal quota): what it gets whenever it asks, lent to others while idle."""
    borrow: Optional[int] = None
    """Most GPUs beyond ``gpus`` it may borrow while idle: the other teams' lent quota and, on Kubernetes, the
    Cohort's own (``None``: as many as are idle; 0: none). Kubernetes refuses more than it can ever borrow."""
    lend: Optional[int] = None
    """Most of its ``gpus`` the other teams may borrow while it does not use them (``None``: all of it)."""
    weight: int = 1
    """Its share when teams compete for the idle GPUs (fair sharing): a team of weight 2 gets twice the GPUs of a team
    of weight 1."""
    namespace: str = ""
    """Kubernetes platforms: the namespace its jobs run in ('' : the team's name). Ignored by AWS Batch."""
    pools: Sequence[str] = ()
    """The GPU pools its jobs may run on, by the platform's pool names (empty: every GPU pool of the stack)."""

    @property
    def home(self) -> str:
        """The namespace its jobs run in."""
        return self.namespace or self.name


@dataclass(frozen=True)
class Pool:
    """One GPU pool a team may be given: its name as the stack names it, and the most GPUs it reaches at full
    scale."""

    name: str
    gpus: int


def check(teams: Sequence[TeamArgs], pools: Sequence[Pool], overcommit: bool = False,
          field_name: str = "teams", reserved: Sequence[str] = ()) -> None:
    """Raise :class:`ConfigError` for the first team that cannot work on ``pools``: a name that is not a DNS-1123
    label, a team or namespace named twice, a namespace (or a name, without one) in ``reserved`` (a Kubernetes
    platform's: Kubernetes' own and those the stack installs into; the namespace is not checked where none is
    given), a quota, borrowing or lending limit that is not a whole number of 0 or more, a weight below 1, a pool the
    stack does not make, a team whose quota exceeds what its pools reach at full scale, and quotas whose sum exceeds
    the stack's GPUs unless ``overcommit`` says it is meant."""
    known = {p.name: p.gpus for p in pools}
    seen: dict[str, int] = {}
    homes: dict[str, int] = {}
    for i, team in enumerate(teams):
        where = f"{field_name}[{i}]"
        name = team.name
        if not isinstance(name, str) or not NAME.fullmatch(name) or len(name) > NAME_MOST:
            raise ConfigError(f"{where}.name", name, "not a DNS-1123 label",
                              "use lowercase letters, digits and '-', starting and ending with a letter or digit, "
                              f"at most {NAME_MOST} characters (ml-research)")
        if name in seen:
            raise ConfigError(f"{where}.name", name, f"named twice (also {field_name}[{seen[name]}])",
                              "give each team one entry")
        seen[name] = i
        for key, value, least in (("gpus", team.gpus, 0), ("borrow", team.borrow, 0), ("lend", team.lend, 0),
                                  ("weight", team.weight, 1)):
            if value is None and key in ("borrow", "lend"):
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ConfigError(f"{where}.{key}", value, f"not a whole number of {least} or more",
                                  "give GPUs as a whole number" if key != "weight" else "give a weight of 1 or more")
        if team.lend is not None and team.lend > team.gpus:
            raise ConfigError(f"{where}.lend", team.lend, f"more than the team's own {team.gpus} GPUs",
                              f"lend at most {team.gpus}")
        if team.namespace and (not NAME.fullmatch(team.namespace) or len(team.namespace) > NAME_MOST):
            raise ConfigError(f"{where}.namespace", team.namespace, "not a DNS-1123 label",
                              "use lowercase letters, digits and '-' (a Kubernetes namespace)")
        if team.home in reserved:
            key = "namespace" if team.namespace else "name"
            raise ConfigError(f"{where}.{key}", team.home, "a namespace of Kubernetes or of what the stack installs "
                              f"({', '.join(dict.fromkeys(reserved))}), not one for a team",
                              f"give the team a namespace of its own ({where}.namespace: {name}-jobs)")
        if team.home in homes:
            raise ConfigError(f"{where}.namespace", team.home, f"also the namespace of {field_name}[{homes[team.home]}]",
                              "give each team a namespace of its own: its LocalQueue is named after the team")
        homes[team.home] = i
        for pool in team.pools:
            if pool not in known:
                raise ConfigError(f"{where}.pools", pool, "no GPU pool of the stack has this name",
                                  f"use one of {', '.join(known) or '(none: the stack makes no GPU pool)'}")
        reach = sum(known[p] for p in (team.pools or known))
        if team.gpus > reach:
            raise ConfigError(f"{where}.gpus", team.gpus,
                              f"more GPUs than its pools reach at full scale ({reach})",
                              "lower the quota, or raise the pools' maximum size")
    total, most = sum(t.gpus for t in teams), sum(known.values())
    if total > most and not overcommit:
        raise ConfigError(field_name, total, f"the teams' quotas add up to more GPUs than the stack reaches at full "
                          f"scale ({most})", "lower the quotas, raise the pools' maximum size, or set "
                          "overcommit_quotas: true if quotas above capacity are meant (jobs then wait for GPUs their quota allows)")


def reachable(team: TeamArgs, pools: Sequence[Pool]) -> tuple[Pool, ...]:
    """The pools ``team`` may use."""
    return tuple(p for p in pools if not team.pools or p.name in team.pools)
