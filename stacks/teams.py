"""``gpuready:teams`` and ``gpuready:overcommitQuotas``: the teams that share the stack's GPUs, the same keys on every
platform, handed to its component as ``teams`` (:class:`~gpuready_components.teams.TeamArgs`), which checks them
against its GPU pools."""

from __future__ import annotations

from gpuready_components.errors import ConfigError
from gpuready_components.teams import TeamArgs

from .config import NAMESPACE, StackConfig
from .settings import Setting, args_of

KEY = "teams"
REQUIRED = ("name", "gpus")
FIELD = "teams"
SETTING = Setting(
    KEY, list, "the teams sharing the GPUs, each with its own queue: `[{name, gpus, borrow, lend, weight, namespace, "
    "pools}]`: GPUs guaranteed, most it may borrow beyond them (no limit) and lend of them (all), its fair-share "
    "weight (1), its Kubernetes namespace (its name), the GPU pools it may use (all); none: one queue for everyone",
    (FIELD,), default=[], sub=tuple(Setting(key, kind, fields=(f"{FIELD}.{key}",)) for key, kind in (
        ("name", str), ("gpus", int), ("borrow", int), ("lend", int), ("weight", int), ("namespace", str),
        ("pools", list))))
OVERCOMMIT = Setting("overcommitQuotas", bool, "let the teams' quotas add up to more GPUs than the stack reaches at "
                     "full scale (jobs then wait for GPUs their quota allows)", ("overcommit_quotas",), default=False)


def args(config: StackConfig) -> tuple[TeamArgs, ...]:
    """The stack's ``teams`` as the component's ``teams`` (which checks them); a missing key is a
    :class:`ConfigError` naming it."""
    declared = []
    for i, item in enumerate(config.read(KEY)):
        for key in REQUIRED:
            if key not in item:
                raise ConfigError(f"{NAMESPACE}:{KEY}[{i}].{key}", None, "required",
                                  f"give {' and '.join(REQUIRED)} for each team")
        given = args_of(SETTING, item)
        declared.append(TeamArgs(**{**given, "pools": tuple(given.get("pools", ()))}))
    return tuple(declared)
