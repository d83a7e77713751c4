"""The policy config file, as ``pulumi preview --policy-pack-config FILE`` reads it, read the same way offline.

The file is JSON: ``{"all": LEVEL, "RULE": LEVEL or {"enforcementLevel": LEVEL, PROPERTY: VALUE...}}``. A rule's
level comes from its own entry, else ``all``, else the rule's default; its properties from its entry over the
defaults of its config schema.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from ..errors import UserError
from ..files import read_map

LEVELS = ("advisory", "mandatory", "remediate", "disabled")
_TYPES = {"integer": int, "number": (int, float), "string": str, "array": list, "boolean": bool, "object": dict}


def load(path: Optional[Path]) -> dict[str, Any]:
    """The file's contents ({} for no file); a missing or malformed file is a :class:`UserError`."""
    return {} if path is None else read_map(path, "policy config")


def _level(value: Any, where: str) -> str:
    if value not in LEVELS:
        raise UserError(f"policy config: {where} = {value!r} is not an enforcement level; use one of "
                        f"{', '.join(LEVELS)}")
    return value


def resolve(policies: Sequence[Any], data: Mapping[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    """Rule name -> (enforcement level, config) for every policy, with unknown names and bad values refused."""
    names = {p.name for p in policies}
    for key in data:
        if key != "all" and key not in names:
            close = difflib.get_close_matches(key, sorted(names), n=1)
            raise UserError(f"policy config: no rule {key!r}" + (f"; did you mean {close[0]!r}?" if close else
                                                                 f"; rules: {', '.join(sorted(names))}"))
    default_all = _level(data["all"], "all") if "all" in data else None
    resolved = {}
    for policy in policies:
        entry = data.get(policy.name, {})
        if isinstance(entry, str):
            entry = {"enforcementLevel": entry}
        level = entry.get("enforcementLevel") or default_all or policy.enforcement_level.value
        properties = (policy.config_schema.properties if policy.config_schema else {}) or {}
        config = {k: spec["default"] for k, spec in properties.items() if "default" in spec}
        for key, value in entry.items():
            if key == "enforcementLevel":
                continue
            spec = properties.get(key)
            if spec is None:
                raise UserError(f"policy config: {policy.name}.{key} is not a setting of this rule"
                                + (f"; settings: {', '.join(properties)}" if properties else "; it has none"))
            expected = _TYPES.get(spec.get("type"), object)
            if not isinstance(value, expected) or (isinstance(value, bool) and spec.get("type") != "boolean"):
                raise UserError(f"policy config: {policy.name}.{key} = {value!r} must be of JSON type {spec.get('type')}")
            config[key] = value
        resolved[policy.name] = (_level(level, f"{policy.name}.enforcementLevel"), config)
    return resolved
