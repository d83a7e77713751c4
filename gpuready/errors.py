"""Errors the CLI reports as one paragraph, with the exit code CI can trust."""

from __future__ import annotations

from gpuready_components.errors import printable

__all__ = ["UserError", "printable"]


class UserError(Exception):
    """A mistake the user can fix (a missing stack file, a bad config value); exit code 2, no traceback."""

    exit_code = 2


