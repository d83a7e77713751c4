"""What the component package (``provider/``) serves of a platform: the component, its args, its type token, its
output contract and its enums. Plain data: a platform's descriptor carries these, :mod:`.package` reads them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Mapping


@dataclass(frozen=True)
class Choice:
    """A field whose value is one of a fixed set: a schema enum named ``name``, its values read from the table the
    component's validation checks against."""

    name: str
    values: Callable[[], Mapping[Any, str]]
    """Value -> description ('' when the table has none)."""


def plain(table: Any) -> Mapping[Any, str]:
    """A table's values with no descriptions, for a :class:`Choice`."""
    return {value: "" for value in table}


@dataclass(frozen=True)
class Served:
    """One component the package serves."""

    component: Callable[[], type]
    """The ComponentResource class, imported when called (it needs its cloud's SDK)."""
    args: type
    """Its args dataclass."""
    token: str
    """Its type token: the component's own, never the host's ``index`` one. Fixed: renaming it replaces resources."""
    outputs: Any
    """Its output contract (:class:`~gpuready_components.outputs.Contract`)."""
    choices: Mapping[tuple[type, str], Choice] = field(default_factory=lambda: MappingProxyType({}))
    """(args dataclass, field) -> its enum, for the fields with a fixed set of values (a list field's items take it)."""

    @property
    def module(self) -> str:
        """The schema module of its types (``aws`` of ``gpuready:aws:BatchGpuEnvironment``)."""
        return self.token.split(":")[1]
