"""The one error type components raise for a configuration that cannot work."""

from __future__ import annotations

from typing import Any


class ConfigError(ValueError):
    """An input that cannot work, found before any cloud call.

    The message names the field, the value and the fix, so that ``pulumi preview`` and ``gpuready plan`` can show it
    as it is, without a traceback.
    """

    def __init__(self, field: str, value: Any, problem: str, fix: str) -> None:
        self.field = field
        self.value = value
        self.problem = problem
        self.fix = fix
        super().__init__(f"{field} = {value!r}: {problem}. Fix: {fix}")


def printable(value: Any, limit: int = 200) -> str:
    """``value`` (its ``repr`` unless a string) safe to print: control and other non-printable characters escaped as
    ``\\xNN``/``\\uNNNN`` (an ANSI escape in a key cannot rewrite the terminal), cut to ``limit`` characters."""
    text = value if isinstance(value, str) else repr(value)
    safe = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
    return safe if len(safe) <= limit else safe[:limit - 3] + "..."
