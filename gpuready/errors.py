"""Errors the CLI reports as one paragraph, with the exit code CI can trust."""

from __future__ import annotations

from typing import Any


class UserError(Exception):
    """A mistake the user can fix (a missing stack file, a bad config value); exit code 2, no traceback."""

    exit_code = 2


def printable(value: Any, limit: int = 200) -> str:
    """``value`` (its ``repr`` unless a string) safe to print: control and other non-printable characters escaped as
    ``\\xNN``/``\\uNNNN`` (an ANSI escape in a key cannot rewrite the terminal), cut to ``limit`` characters."""
    text = value if isinstance(value, str) else repr(value)
    safe = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
    return safe if len(safe) <= limit else safe[:limit - 3] + "..."
