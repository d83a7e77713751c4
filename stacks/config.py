"""Typed reads of the ``gpuready:`` stack config; a bad value is a :class:`ConfigError` naming its key."""

from __future__ import annotations

import difflib
import json
import re
from types import MappingProxyType
from typing import Any, Iterable, Mapping, Optional

import pulumi

from gpuready_components.errors import ConfigError, printable

from .settings import Settings

NAMESPACE = "gpuready"

ALLOW_LARGE = "allowLargeCapacity"
"""The key that lifts the settings' bounds (``gpuready:allowLargeCapacity: true``); every platform reads it."""


def config_key(settings: Settings, field: str) -> str:
    """The ``gpuready:`` key(s) behind a component field path such as ``node_group.max_size`` or ``min_vcpus/max_vcpus``
    (each part mapped); a field already naming a config key, or one the table lacks, is returned escaped as it is."""
    table = settings.field_keys()

    def one(part: str) -> str:
        if part.startswith(f"{NAMESPACE}:") or ":" in part:
            return part
        for prefix in sorted(table, key=len, reverse=True):  # longest known prefix: node_pool.labels.team
            if part == prefix or part.startswith((prefix + ".", prefix + "[")):  # an item: subnet_ids[0]
                return f"{NAMESPACE}:{table[prefix]}{part[len(prefix):]}"
        parent = re.split(r"[.\[]", part)[0]
        return f"{NAMESPACE}:{table[parent]}" if parent in table else part

    parts = field.split("/")
    parent = parts[0].rpartition(".")[0]  # node_group.min_size/desired_size: later parts share the first's parent
    return printable("/".join(one(f"{parent}.{p}" if parent and "." not in p else p) for p in parts))


def _in_text(settings: Settings, text: str) -> str:
    """``text`` with the component field names it mentions (``max_vcpus``, ``job.memory_mib``) as ``gpuready:`` keys;
    only names with ``_`` or ``.`` are replaced, so prose words such as "capacity" stay, and a top-level one-word
    field in backquotes (`` `location` ``)."""
    names: dict[str, str] = {}
    words: dict[str, str] = {}
    for field, key in settings.field_keys().items():
        for name in (field, field.split(".")[-1]):
            if "_" in name or "." in name:
                names.setdefault(name, f"{NAMESPACE}:{key}")
        if re.fullmatch(r"[a-z]+", field):  # a top-level one-word field (location), not the last word of a path
            words[field] = f"{NAMESPACE}:{key}"
    if words:
        text = re.sub(r"`([a-z]+)`", lambda m: words.get(m.group(1), m.group(0)), text)
    if not names:
        return text
    pattern = re.compile(r"(?<![\w.:])(" + "|".join(map(re.escape, sorted(names, key=len, reverse=True))) + r")(?!\w)")
    return pattern.sub(lambda m: names[m.group(1)], text)


def for_stack(error: ConfigError, settings: Settings) -> ConfigError:
    """``error`` as a stack user reads it: the field named by its ``gpuready:`` key, printed safely."""
    return ConfigError(config_key(settings, error.field), error.value,
                       printable(_in_text(settings, error.problem), 400), printable(_in_text(settings, error.fix), 400))



class _Twice(ValueError):
    """A key given twice in one JSON object (its name in ``args[0]``)."""


def _one_each(pairs: list) -> dict:
    """A JSON object's pairs as a dict, refusing a key given twice (``json.loads`` keeps the last)."""
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise _Twice(key)
        out[key] = value
    return out

class StackConfig:
    """The ``gpuready:`` keys of the running stack, read with their types checked."""

    def __init__(self, settings: Settings = Settings()) -> None:
        self._config = pulumi.Config(NAMESPACE)
        self.settings = settings
        """The platform's settings: what :meth:`read` reads, and the bounds of whole numbers."""

    def read(self, key: str) -> Any:
        """The value of the setting ``key`` (``job``, ``cpuQueue.maxVcpus``...) of the right type, or its default."""
        setting = self.settings[key]
        if setting.secret:
            return self.get_secret(key)
        if setting.kind is str:
            return self.require_str(key) if setting.required else self.get_str(key, setting.value)
        if setting.kind is list and setting.sub:
            return self.get_object_list(key, setting.shape, setting.value)
        reader = {int: self.get_int, bool: self.get_bool, list: self.get_list}.get(setting.kind)
        if reader is not None:
            return reader(key, setting.value)
        return self.get_object(key, setting.shape or None, setting.value)

    def args(self, prefix: str = "", **given: Any) -> dict[str, Any]:
        """Keyword arguments of the args dataclass at the component path ``prefix`` (``node_pool``; ``""``: the
        component's own): each plain setting feeding one of its fields, read, then ``given`` (what the stack
        computes itself, and the object settings' dataclasses) over them."""
        read = {}
        for setting in self.settings:
            parent, _, name = setting.fields[0].rpartition(".") if setting.fields else ("", "", "")
            if name and parent == prefix and not setting.sub:
                read[name] = self.read(setting.key)
        return {**read, **given}

    def _raw(self, key: str) -> Optional[str]:
        return self._config.get(key)

    def _parse(self, key: str, kind: str) -> Any:
        raw = self._raw(key)
        if raw is None:
            return None
        if kind == "str":
            return raw
        try:
            return json.loads(raw, object_pairs_hook=_one_each)
        except json.JSONDecodeError:
            raise ConfigError(f"{NAMESPACE}:{key}", raw, f"not a valid {kind}",
                              f"set it with `pulumi config set {'--path ' if kind == 'object' else ''}"
                              f"{NAMESPACE}:{key} ...`") from None
        except _Twice as twice:
            raise ConfigError(f"{NAMESPACE}:{key}.{twice.args[0]}", raw, "given twice in one map (JSON keeps the "
                              "last, silently)", "keep one of them") from None

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
        return self._bounded(key, int(value))

    def _bounded(self, key: str, value: int) -> int:
        setting = self.settings.get(key)
        most = setting.most if setting else None
        if most is not None and value > most and not self.get_bool(ALLOW_LARGE, False):
            raise ConfigError(f"{NAMESPACE}:{key}", value, f"more than {most:,}, above the cloud's quota for it "
                              "(most likely a typo)", f"use a smaller value, or set {NAMESPACE}:{ALLOW_LARGE}: "
                              "true if you really mean it")
        return value

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
        return self._checked_object(key, key, value, allowed)

    def get_object_list(self, key: str, allowed: Mapping[str, type], default: Optional[list] = None) -> Optional[list]:
        """A list of objects, each checked as :meth:`get_object` checks one (errors name ``key[i].sub``)."""
        value = self._parse(key, "list")
        if value is None:
            return default
        if not isinstance(value, list):
            raise ConfigError(f"{NAMESPACE}:{key}", value, "not a list", f"write {NAMESPACE}:{key} as a YAML list "
                              "of maps")
        return [self._checked_object(f"{key}[{i}]", key, item, allowed) for i, item in enumerate(value)]

    def _checked_object(self, label: str, key: str, value: Any, allowed: Optional[Mapping[str, type]]) -> dict:
        """``value`` (the object at ``label``, read for setting ``key``) with its keys and their types checked."""
        if not isinstance(value, dict):
            raise ConfigError(f"{NAMESPACE}:{label}", value, "not an object", f"write {NAMESPACE}:{label} as a YAML "
                              "map")
        if allowed is None:
            allowed = {sub: str for sub in value}
        for sub, sub_value in value.items():
            if sub not in allowed:
                close = difflib.get_close_matches(sub, list(allowed), n=1)
                raise ConfigError(printable(f"{NAMESPACE}:{label}.{sub}"), sub_value, "unknown key",
                                  f"use {close[0]}" if close else f"use one of {', '.join(allowed)}")
            expected = allowed[sub]
            ok = isinstance(sub_value, expected) and not (expected in (int, float) and isinstance(sub_value, bool))
            if expected is int and isinstance(sub_value, float) and sub_value == int(sub_value):
                value[sub], ok = int(sub_value), True
            if expected is float and isinstance(sub_value, int) and not isinstance(sub_value, bool):
                value[sub], ok = float(sub_value), True
            if ok and expected is int:
                self._bounded(f"{key}.{sub}", value[sub])
            if not ok:
                kind = "number" if expected is float else expected.__name__
                raise ConfigError(f"{NAMESPACE}:{label}.{sub}", sub_value, f"must be a {kind}",
                                  f"give {NAMESPACE}:{label}.{sub} a {kind}")
        return value

    def reject_unknown(self, known: Iterable[str], renamed: Mapping[str, str] = MappingProxyType({}),
                       providers: Optional[Iterable[str]] = None) -> None:
        """Raise for a ``gpuready:`` key the platform does not read, and for a key of a namespace that is neither
        gpuready's nor one of ``providers`` (the config namespaces of the Pulumi providers the stack uses: ``aws``,
        ``kubernetes``...; ``pulumi`` always): Pulumi would ignore a misspelled key or namespace.

        ``renamed``: old key -> the key that replaced it, named in the error. ``providers`` None: other namespaces
        are not checked.
        """
        known = {*known, ALLOW_LARGE}
        from pulumi.runtime import config as runtime_config

        present = set(runtime_config.CONFIG.get()) | set(runtime_config.get_config_env())
        namespaces = None if providers is None else sorted({*providers, "pulumi"})
        for full_key in sorted(present):
            namespace, _, key = full_key.partition(":")
            if namespaces is not None and namespace != NAMESPACE and namespace not in namespaces:
                close = difflib.get_close_matches(key, sorted(known), n=1)
                fix = f"did you mean {NAMESPACE}:{close[0]}?" if close else \
                    f"remove it from the stack file, or use one of the namespaces " \
                    f"{', '.join(f'{n}:' for n in [NAMESPACE, *namespaces])}"
                value = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}.get(full_key)
                raise ConfigError(printable(full_key), value, f"not a key gpuready or this stack's providers "
                                  f"({', '.join(namespaces)}) read", fix)
            if namespace == NAMESPACE and key in renamed:
                raise ConfigError(full_key, self._raw(key), f"renamed to {NAMESPACE}:{renamed[key]}",
                                  f"rename the key to {NAMESPACE}:{renamed[key]} in the stack file (same value)")
            if namespace == NAMESPACE and key not in known:
                close = difflib.get_close_matches(key, sorted(known), n=1)
                raise ConfigError(printable(full_key), self._raw(key), "not a key this platform reads",
                                  f"did you mean {NAMESPACE}:{close[0]}?" if close else
                                  f"remove it; known keys: {', '.join(sorted(known))}")
