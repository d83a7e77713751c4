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
