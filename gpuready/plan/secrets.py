"""Pulumi secrets in what ``gpuready plan`` prints and writes: each one shown as ``[secret]``, never its value.

Structured values are masked where the secret is (:func:`mask`); text built from them (facts, policy messages) is
redacted by value (:func:`redact`), a secret replaced wherever it stands as a whole word.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from pulumi.runtime import rpc

SECRET = "[secret]"
"""What a secret value prints as, as the Pulumi CLI shows it."""


def mask(value: Any, found: set[str]) -> Any:
    """``value`` (deserialized resource properties) with each secret replaced, whole, by :data:`SECRET`; the
    secrets' text values are added to ``found``."""
    if rpc.is_rpc_secret(value):
        found.update(texts(rpc.unwrap_rpc_secret(value)))
        return SECRET
    if isinstance(value, dict):
        return {k: mask(v, found) for k, v in value.items()}
    if isinstance(value, list):
        return [mask(v, found) for v in value]
    return value


def texts(value: Any) -> Iterable[str]:
    """Every string in ``value`` (a secret's plain value, possibly a map or list), found nested."""
    if rpc.is_rpc_secret(value):
        yield from texts(rpc.unwrap_rpc_secret(value))
    elif isinstance(value, str):
        if value and value != SECRET:
            yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from texts(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from texts(item)


def _pattern(secrets: Iterable[str]) -> re.Pattern | None:
    words = sorted(set(secrets), key=len, reverse=True)
    if not words:
        return None
    return re.compile("|".join(rf"(?<![A-Za-z0-9]){re.escape(w)}(?![A-Za-z0-9])" for w in words))


def redact(value: Any, secrets: Iterable[str]) -> Any:
    """``value`` (text, or JSON-like data) with every occurrence of each of ``secrets`` replaced by :data:`SECRET`;
    map keys too."""
    pattern = _pattern(secrets)
    return value if pattern is None else _redact(value, pattern)


def _redact(value: Any, pattern: re.Pattern) -> Any:
    if isinstance(value, str):
        return pattern.sub(SECRET, value)
    if isinstance(value, dict):
        return {_redact(k, pattern): _redact(v, pattern) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_redact(v, pattern) for v in value]
    return value
