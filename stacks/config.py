"""Typed reads of the ``gpuready:`` stack config; a bad value is a :class:`ConfigError` naming its key."""

from __future__ import annotations

import difflib
import json
from types import MappingProxyType
from typing import Any, Iterable, Mapping, Optional

import pulumi

from components.errors import ConfigError

NAMESPACE = "gpuready"


class StackConfig:
    """The ``gpuready:`` keys of the running stack, read with their types checked."""

    def __init__(self) -> None:
        self._config = pulumi.Config(NAMESPACE)

    def _raw(self, key: str) -> Optional[str]:
        return self._config.get(key)

    def _parse(self, key: str, kind: str) -> Any:
        raw = self._raw(key)
        if raw is None:
            return None
        if kind == "str":
            return raw
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            raise ConfigError(f"{NAMESPACE}:{key}", raw, f"not a valid {kind}",
                              f"set it with `pulumi config set {'--path ' if kind == 'object' else ''}"
                              f"{NAMESPACE}:{key} ...`") from None

    def require_str(self, key: str) -> str:
        value = self._raw(key)
        if not value:
            raise ConfigError(f"{NAMESPACE}:{key}", value, "required", f"pulumi config set {NAMESPACE}:{key} VALUE")
        return value

    def get_str(self, key: str, default: Optional[str] = None) -> Optional[str]:
        value = self._raw(key)
        return default if value is None else value

    def get_int(self, key: str, default: Optional[int]) -> Optional[int]:
        value = self._parse(key, "integer")
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
            raise ConfigError(f"{NAMESPACE}:{key}", value, "not a whole number", "use a number such as 64")
        return int(value)

    def get_secret(self, key: str) -> Optional[pulumi.Output[str]]:
        """A value set with ``pulumi config set --secret``; it stays a secret in every output it reaches."""
        return self._config.get_secret(key)

    def get_bool(self, key: str, default: Optional[bool]) -> Optional[bool]:
        value = self._parse(key, "boolean")
        if value is None:
            return default
        if not isinstance(value, bool):
            raise ConfigError(f"{NAMESPACE}:{key}", value, "not true or false", "use true or false")
        return value

    def get_list(self, key: str, default: Optional[list[str]] = None) -> Optional[list[str]]:
        value = self._parse(key, "list")
        if value is None:
            return default
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{NAMESPACE}:{key}", value, "not a list of strings",
                              f"write it as a YAML list under {NAMESPACE}:{key}")
        return value

    def get_object(self, key: str, allowed: Optional[Mapping[str, type]],
                   default: Optional[dict] = None) -> Optional[dict]:
        """An object whose keys must be among ``allowed`` (key -> expected type); ``None``: any keys, string values."""
        value = self._parse(key, "object")
        if value is None:
            return default
        if not isinstance(value, dict):
            raise ConfigError(f"{NAMESPACE}:{key}", value, "not an object", f"write {NAMESPACE}:{key} as a YAML map")
        if allowed is None:
            allowed = {sub: str for sub in value}
        for sub, sub_value in value.items():
            if sub not in allowed:
                close = difflib.get_close_matches(sub, list(allowed), n=1)
                raise ConfigError(f"{NAMESPACE}:{key}.{sub}", sub_value, "unknown key",
                                  f"use {close[0]}" if close else f"use one of {', '.join(allowed)}")
            expected = allowed[sub]
            ok = isinstance(sub_value, expected) and not (expected is int and isinstance(sub_value, bool))
            if expected is int and isinstance(sub_value, float) and sub_value == int(sub_value):
                value[sub], ok = int(sub_value), True
            if not ok:
                raise ConfigError(f"{NAMESPACE}:{key}.{sub}", sub_value, f"must be a {expected.__name__}",
                                  f"give {NAMESPACE}:{key}.{sub} a {expected.__name__}")
        return value

    def reject_unknown(self, known: Iterable[str], renamed: Mapping[str, str] = MappingProxyType({})) -> None:
        """Raise for a ``gpuready:`` key the platform does not read: Pulumi would ignore a misspelled key.

        ``renamed``: old key -> the key that replaced it, named in the error.
        """
        known = set(known)
        from pulumi.runtime import config as runtime_config

        present = set(runtime_config.CONFIG.get()) | set(runtime_config.get_config_env())
        for full_key in sorted(present):
            namespace, _, key = full_key.partition(":")
            if namespace == NAMESPACE and key in renamed:
                raise ConfigError(full_key, self._raw(key), f"renamed to {NAMESPACE}:{renamed[key]}",
                                  f"rename the key to {NAMESPACE}:{renamed[key]} in the stack file (same value)")
            if namespace == NAMESPACE and key not in known:
                close = difflib.get_close_matches(key, sorted(known), n=1)
                raise ConfigError(full_key, self._raw(key), "not a key this platform reads",
                                  f"did you mean {NAMESPACE}:{close[0]}?" if close else
                                  f"remove it; known keys: {', '.join(sorted(known))}")
