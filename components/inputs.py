"""Inputs that may be another resource's output: checked when the component is constructed if their value is known
then, and when the value resolves if it is not.

A subnet id typed in a stack file is checked at ``pulumi preview``; ``vpc.private_subnet_ids`` from a VPC created in
the same program is unknown at a first preview and is checked during ``pulumi up``, the moment its value resolves,
before any resource built from it is sent to the cloud: the component passes on the *checked* output, so every
resource that takes the value waits for the check, and a failed check fails the deployment with the same
:class:`~gpuready_components.errors.ConfigError` message a typed value gets at preview.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any, Callable, Optional, Sequence

import pulumi

from .errors import ConfigError

Check = Callable[[str, Any], None]
"""``check(field, value)``: raises :class:`ConfigError` naming ``field`` when ``value`` cannot work."""


_NOT_YET = object()


def settled(value: Any) -> Any:
    """The plain value of ``value`` when it is already there: a plain value itself, or an Output whose value has
    resolved and is known and not secret (as the inputs of a component package's Construct are, under ``pulumi up``:
    the engine sends their values with the resources they come from). ``_NOT_YET`` otherwise."""
    if isinstance(value, (list, tuple)):
        items = [settled(v) for v in value]
        return _NOT_YET if any(i is _NOT_YET for i in items) else items
    if not isinstance(value, pulumi.Output):
        return _NOT_YET if hasattr(value, "__await__") else value
    data = getattr(value, "_data", None)  # pulumi >= 3.260 (the floor): one future with value, known, secret
    if not isinstance(data, asyncio.Future) or not data.done() or data.cancelled() or data.exception() is not None:
        return _NOT_YET
    data = data.result()
    return settled(data.value) if data.is_known and not data.is_secret else _NOT_YET


def _passed(check: Check, field: str, value: Any, secret: bool = False) -> Any:
    """``value`` once ``check`` passes it; a secret's error shows ``[secret]``, never the value."""
    try:
        check(field, value)
        return value
    except ConfigError as e:
        if not secret:
            raise
        hidden = ConfigError(e.field, SECRET, e.problem, e.fix)
    raise hidden  # outside the handler: no context holding the value either


class _Secret:
    def __repr__(self) -> str:
        return "[secret]"


SECRET = _Secret()
"""What a secret value prints as in an error (as the Pulumi CLI shows one)."""


def checked(value: Any, field: str, check: Check) -> Any:
    """``value`` after ``check``: run now when the value is known (the error raised at construction), else an Output
    that runs it when the value resolves (the error raised then, failing whatever takes the output). ``None`` is
    passed on unchecked: the field was not given."""
    if value is None:
        return None
    now = settled(value)
    if now is not _NOT_YET:
        check(field, now)
        return value  # as given: an Output keeps the resources it comes from
    output = pulumi.Output.from_input(value)
    secret = pulumi.Output.from_input(output.is_secret())
    return pulumi.Output.all(output, secret).apply(lambda given: _passed(check, field, *given))


def checked_list(value: Any, field: str, item: Check, whole: Optional[Check] = None) -> Any:
    """A list input (``subnet_ids``), each item checked by ``item`` (its field ``field[i]``) and the list by
    ``whole``. A literal list with some outputs in it has its known items and its length checked now, the rest when
    they resolve; a list that is itself an output is checked when it resolves."""
    if value is None:
        return None
    if isinstance(value, str):
        raise ConfigError(field, value, "must be a list", f"use [{value!r}]")

    def check(name: str, values: Any) -> None:
        if isinstance(values, str) or not isinstance(values, Sequence):
            raise ConfigError(name, values, "must be a list", "give a list of ids")
        for i, v in enumerate(values):
            item(f"{name}[{i}]", v)
        if whole is not None:
            whole(name, list(values))

    if settled(value) is not _NOT_YET or not isinstance(value, (list, tuple)):
        return checked(value, field, check)
    if whole is not None:
        whole(field, [now if (now := settled(v)) is not _NOT_YET else _Pending() for v in value])
    return [checked(v, f"{field}[{i}]", item) for i, v in enumerate(value)]


class _Pending:
    """An item of a list whose value is not known yet, as a list-wide check sees it (it counts, and equals only
    itself)."""

    def __repr__(self) -> str:
        return "<unknown until deployed>"


def pending(value: Any) -> bool:
    """True for a list item whose value a list-wide check cannot see yet."""
    return isinstance(value, _Pending)


def pattern(regex: str, what: str, fix: str) -> Check:
    """A check that a string matches ``regex`` whole; its error says the value is not ``what``."""
    compiled = re.compile(regex)

    def check(field: str, value: Any) -> None:
        if not isinstance(value, str) or not compiled.fullmatch(value):
            raise ConfigError(field, value, f"not {what}", fix)
    return check


def distinct(field: str, values: list) -> None:
    """A list-wide check: no value twice (an unknown item differs from every other)."""
    seen = [v for v in values if not pending(v)]
    twice = sorted({v for v in seen if seen.count(v) > 1}, key=str)
    if twice:
        raise ConfigError(field, values, f"{twice[0]!r} is given twice", "list each once")


def at_least(count: int, why: str, fix: str) -> Check:
    """A list-wide check: at least ``count`` items (unknown ones count)."""
    def check(field: str, values: list) -> None:
        if len(values) < count:
            raise ConfigError(field, values, f"{why}: at least {count}, {len(values)} given", fix)
        distinct(field, values)
    return check


def exactly(count: int, why: str, fix: str) -> Check:
    """A list-wide check: exactly ``count`` items (unknown ones count)."""
    def check(field: str, values: list) -> None:
        if len(values) != count:
            raise ConfigError(field, values, f"{why}: {count} exactly, {len(values)} given", fix)
    return check
