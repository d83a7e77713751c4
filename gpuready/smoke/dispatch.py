"""Which target runs on a stack: the one the platform registry names for the run's mode
(:attr:`gpuready_components.platforms.Platform.targets`: ``single``, ``gang``, ``sweep``), made as every target is,
``cls(outputs, request)``. No module of gpuready names a target beside this lookup and the registry."""

from __future__ import annotations

from typing import Any

from gpuready_components import platforms

from ..errors import UserError
from .target import SmokeTarget

RUNS = {platforms.SINGLE: "smoke test", platforms.GANG: "smoke test on several nodes (--nodes)",
        platforms.SWEEP: "sweep"}
"""What each mode is, in words (a platform that lacks one says so)."""


def target_class(platform: Any, mode: str) -> type[SmokeTarget]:
    """The class that runs ``mode`` on the platform called ``platform`` (a stack's ``platform`` output); a
    ``UserError`` for outputs that name no platform, a platform gpuready does not know, or one that has no target for
    ``mode``."""
    if platform is None:
        raise UserError("the stack's outputs lack the `platform` output (which gpuready platform the stack runs: "
                        f"{', '.join(platforms.names())}): save the outputs of a deployed gpuready stack with "
                        "`pulumi stack output --json --show-secrets > outputs.json` (no outputs yet: run `pulumi up` "
                        "first)")
    found = platforms.get(platform)
    if found is None:
        raise UserError(f"the stack's outputs name no platform gpuready knows ({platform!r}); is it a gpuready "
                        "stack?")
    target = found.target(mode)
    if target is None:
        why = found.lacks.get(mode)
        raise UserError(f"{platform}: gpuready runs no {RUNS.get(mode, mode)} there" + (f": {why}" if why else ""))
    return target
