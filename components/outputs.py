"""The typed output contract of each platform: what its component registers, its stack exports and ``gpuready smoke``
reads, declared once per platform in ``components/<platform>/outputs.py``.

SDK-free: the smoke SDK imports this to read a deployed stack's outputs without loading any cloud SDK.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

from . import platforms


@dataclass(frozen=True)
class Kind:
    """A JSON shape an output's value has once deployed (``pulumi stack output --json``)."""

    name: str
    """As a message names it: "a string"."""
    fits: Callable[[Any], bool]


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) or isinstance(value, str) and value.isdigit()


def _taint(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(value.get(k), str) for k in ("key", "effect"))


STRING = Kind("a string", lambda v: isinstance(v, str))
WHOLE = Kind("a whole number", _whole)
NUMBER = Kind("a number", lambda v: isinstance(v, (int, float)) and not isinstance(v, bool))
STRINGS = Kind("a list of strings", lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v))
TAINT = Kind("a taint ({key, value, effect})", _taint)
TAINTS = Kind("a list of taints ({key, value, effect})", lambda v: isinstance(v, list) and all(map(_taint, v)))
STRING_MAP = Kind("a map of string to string", lambda v: isinstance(v, dict)
                  and all(isinstance(k, str) and isinstance(x, str) for k, x in v.items()))
TEAMS = Kind("a list of teams ({name, ...})", lambda v: isinstance(v, list)
             and all(isinstance(t, dict) and isinstance(t.get("name"), str) for t in v))
QUEUE = Kind("a queue ({namespace, localQueue, clusterQueue, priorityClass})", lambda v: isinstance(v, dict)
              and all(isinstance(v.get(k), str) for k in ("namespace", "localQueue", "clusterQueue", "priorityClass")))
RESERVATIONS = Kind("a list of reservations ({pool, kind, target, ...})", lambda v: isinstance(v, list) and all(
    isinstance(r, dict) and all(isinstance(r.get(k), str) for k in ("pool", "kind", "target")) for r in v))
LABELS = Kind("a map of label to string", lambda v: isinstance(v, dict)
              and all(isinstance(k, str) and isinstance(x, str) for k, x in v.items()))


@dataclass(frozen=True)
class Output:
    """One stack output."""

    key: str
    kind: Kind
    meaning: str
    smoke: bool = False
    """``gpuready smoke`` reads it: every stack of the platform must export it, unless it has a ``when``."""
    when: Optional[str] = None
    """The condition under which the output exists (e.g. "with cpuQueue"); None: always."""
    secret: bool = False


@dataclass(frozen=True)
class Contract:
    """The outputs of one platform, in the order they are registered."""

    platform: str
    outputs: tuple[Output, ...]

    def __post_init__(self) -> None:
        keys = [o.key for o in self.outputs]
        assert len(keys) == len(set(keys)), f"{self.platform}: an output declared twice"

    def __contains__(self, key: object) -> bool:
        return any(o.key == key for o in self.outputs)

    def __getitem__(self, key: str) -> Output:
        for output in self.outputs:
            if output.key == key:
                return output
        raise KeyError(f"{key!r} is not an output of the {self.platform} contract")

    def values(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """``given`` (output key -> value) in contract order, checked to name exactly the contract's outputs; an
        output with a ``when`` condition may be None, and is then left out."""
        declared = {o.key for o in self.outputs}
        if set(given) != declared:
            raise ValueError(f"{self.platform} outputs: missing {sorted(declared - set(given))}, "
                             f"undeclared {sorted(set(given) - declared)}")
        out = {}
        for output in self.outputs:
            value = given[output.key]
            if value is None and output.when is None:
                raise ValueError(f"{self.platform} output {output.key} is None but declared always present")
            if value is not None:
                out[output.key] = value
        return out


def contract(platform: str) -> Optional[Contract]:
    """The contract of ``platform`` (its descriptor's ``contract``), or None for a platform gpuready does not know."""
    found = platforms.get(platform)
    return found.contract if found else None
