"""Stack settings (``gpuready:`` keys) declared once: key, type, default, description and bound of each, beside the
component argument it feeds. Config validation, the component-field-to-key names in error messages and the docs'
configuration reference are all derived from these declarations (``python docs/gen_reference.py`` rewrites it).
"""

from __future__ import annotations

import copy
import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Optional

from gpuready_components.errors import ConfigError

_UNSET: Any = object()


@dataclass(frozen=True)
class Setting:
    """One ``gpuready:`` key, or one key of an object-valued setting (``sub``)."""

    key: str
    kind: type
    """``str``, ``int``, ``bool``, ``list`` (of strings) or ``dict`` (an object)."""
    description: str = ""
    fields: tuple[str, ...] = ()
    """The component argument(s) it feeds, as a component's ``ConfigError`` names them (``node_group.max_size``)."""
    feeds: Optional[type] = None
    """The args dataclass holding the first of ``fields``: the default comes from its field."""
    default: Any = _UNSET
    """Only where no args field gives it (or the stack's default differs); otherwise taken from ``feeds``."""
    required: bool = False
    most: Optional[int] = None
    """The largest value accepted unless ``gpuready:allowLargeCapacity`` is true, from the cloud's documented quota:
    a typo (an extra 0, 10**12) would otherwise reach the cloud as a bill or a quota error."""
    sub: tuple["Setting", ...] = ()
    """An object's keys; empty for an object of any string keys and values (tags, labels)."""
    secret: bool = False
    shown: str = ""
    """How the README shows the default when its value alone says too little (``minSize``)."""

    @property
    def value(self) -> Any:
        """The default: given, or the ``feeds`` field's (a sequence as a list, as a stack file gives it)."""
        if self.default is not _UNSET:
            return copy.deepcopy(self.default)
        if self.feeds is None:
            return None
        found = {f.name: f for f in dataclasses.fields(self.feeds)}[self.fields[0].rsplit(".", 1)[-1]]
        value = found.default_factory() if found.default is dataclasses.MISSING else found.default
        return list(value) if isinstance(value, tuple) else value

    @property
    def shape(self) -> dict[str, type]:
        return {s.key: s.kind for s in self.sub}


class Settings(tuple):
    """A platform's settings, looked up by key (``settings["maxVcpus"]``, ``settings["cpuQueue.maxVcpus"]``)."""

    def __new__(cls, *settings: Setting) -> "Settings":
        keys = [s.key for s in settings]
        assert len(keys) == len(set(keys)), "a setting declared twice"
        return super().__new__(cls, settings)

    def get(self, key: str) -> Optional[Setting]:
        head, _, rest = key.partition(".")
        for setting in self:
            if setting.key == head:
                return next((s for s in setting.sub if s.key == rest), None) if rest else setting
        return None

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            found = self.get(key)
            if found is None:
                raise KeyError(key)
            return found
        return super().__getitem__(key)

    @property
    def keys(self) -> set[str]:
        return {s.key for s in self}

    def field_keys(self) -> dict[str, str]:
        """Component field path -> the ``gpuready:`` key (``max_vcpus`` -> ``maxVcpus``, ``job.memory_mib`` ->
        ``job.memoryMiB``)."""
        out: dict[str, str] = {}
        for setting in self:
            for path in setting.fields:
                out.setdefault(path, setting.key)
            for sub in setting.sub:
                for path in sub.fields:
                    out.setdefault(path, f"{setting.key}.{sub.key}")
        return out


def args_of(setting: Setting, value: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of the args dataclass that the object ``setting`` (valued ``value``) feeds: each key
    given, under the name of the field it feeds; keys not given keep the dataclass's defaults."""
    return {sub.fields[0].rsplit(".", 1)[-1]: value[sub.key] for sub in setting.sub if sub.key in value}


def object_of(setting: Setting, value: Any, feeds: type, required: str, fix: str) -> Any:
    """The object setting ``setting`` (valued ``value``) as its args dataclass ``feeds``; ``None`` when absent or
    empty. Its key ``required`` must be given (``ConfigError`` naming it, with ``fix``, otherwise)."""
    if not value:
        return None
    if required not in value:
        raise ConfigError(f"gpuready:{setting.key}.{required}", None, f"the {setting.key}'s {required} is required",
                          fix)
    return feeds(**args_of(setting, value))


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, list):
        return f"`[{', '.join(value)}]`"
    if isinstance(value, str):
        return f"`{value}`"
    return f"{value:,}" if isinstance(value, int) else str(value)


def readme_row(setting: Setting) -> str:
    """The README row of ``setting``: its key, its description, then (required / default; bound)."""
    notes = ["required"] if setting.required else []
    default = setting.shown or (None if setting.value in (None, [], {}) else _shown(setting.value))
    notes += [default] if default else []
    notes += [f"at most {setting.most:,} without `allowLargeCapacity`"] if setting.most else []
    text = setting.description.replace("|", "\\|") + (f" ({'; '.join(notes)})" if notes else "")
    return f"| `gpuready:{setting.key}` | {text} |"


def readme_table(platform: str, settings: Settings, cloud: dict[str, str]) -> str:
    """The README's settings table of ``platform``: its cloud provider's keys, ``gpuready:platform``, then
    ``settings`` in declaration order."""
    rows = ["| key | meaning (default) |", "|---|---|"]
    rows += [f"| `{key}` | {text} |" for key, text in cloud.items()]
    rows.append(f"| `gpuready:platform` | which platform the stack builds: `{platform}` |")
    rows += [readme_row(s) for s in settings]
    return "\n".join(rows)
