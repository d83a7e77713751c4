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


NOT_YET = object()
"""What :func:`settled` answers for a value that is not there yet."""


def _peek(value: Any) -> tuple[Any, bool]:
    """(the plain value of ``value`` or ``NOT_YET``, whether it is secret): a plain value is there; an Output is when
    its value has resolved and is known (as the inputs of a component package's Construct are under ``pulumi up``:
    the engine sends their values with the resources they come from)."""
    if isinstance(value, (list, tuple)):
        items = [_peek(v) for v in value]
        if any(v is NOT_YET for v, _ in items):
            return NOT_YET, False
        return [v for v, _ in items], any(secret for _, secret in items)
    if not isinstance(value, pulumi.Output):
        return (NOT_YET if hasattr(value, "__await__") else value), False
    data = getattr(value, "_data", None)  # pulumi >= 3.260 (the floor): one future with value, known, secret
    if not isinstance(data, asyncio.Future) or not data.done() or data.cancelled() or data.exception() is not None:
        return NOT_YET, False
    data = data.result()
    if not data.is_known:
        return NOT_YET, False
    inner, secret = _peek(data.value)
    return inner, secret or data.is_secret


def alongside(output: pulumi.Output, value: Any) -> pulumi.Output:
    """An Output of ``value``, already resolved, that depends on what the resolved, known ``output`` depends on (and
    is secret when it is): a part of a value the engine sent whole, as Pulumi's provider server makes one of each
    input (so that :func:`settled` sees it at once)."""
    from pulumi.output import _OutputData

    data = output._data.result()
    future: asyncio.Future = asyncio.get_event_loop().create_future()
    future.set_result(_OutputData(resources=data.resources, value=value, is_known=True, is_secret=data.is_secret))
    return pulumi.Output._from_data(future)


def settled(value: Any) -> Any:
    """The plain value of ``value`` when it is already there (see :func:`_peek`), else ``NOT_YET``."""
    return _peek(value)[0]


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
    passed on unchecked: the field was not given. The checks' messages name no value but the one they refuse, which
    a secret's error shows as ``[secret]``."""
    if value is None:
        return None
    now, secret = _peek(value)
    if now is not NOT_YET:
        _passed(check, field, now, secret)
        return value  # as given: an Output keeps the resources it comes from
    return _when_resolved(value, field, check)


def _when_resolved(value: Any, field: str, check: Check) -> pulumi.Output:
    """An Output of ``value`` that runs ``check`` when the value resolves (a secret's error hiding the value)."""
    output = pulumi.Output.from_input(value)
    is_secret = pulumi.Output.from_input(output.is_secret())
    return pulumi.Output.all(output, is_secret).apply(lambda given: _passed(check, field, *given))


def checked_list(value: Any, field: str, item: Check, whole: Optional[Check] = None) -> Any:
    """A list input (``subnet_ids``), each item checked by ``item`` (its field ``field[i]``), then the list by
    ``whole``. A literal list with some outputs in it has its known items and its length checked now, and each item
    and the whole list again when they resolve (every item returned waits for that); a list that is itself an output
    is checked when it resolves."""
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

    if settled(value) is not NOT_YET or not isinstance(value, (list, tuple)):
        return checked(value, field, check)
    items = [checked(v, f"{field}[{i}]", item) for i, v in enumerate(value)]
    if whole is None:
        return items
    whole(field, [now if (now := settled(v)) is not NOT_YET else _Pending() for v in value])
    gate = _when_resolved(items, field, lambda name, resolved: whole(name, list(resolved)))
    return [pulumi.Output.all(i, gate).apply(lambda pair: pair[0]) for i in items]


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
    """A list-wide check: no value twice (an unknown item differs from every other). The message gives the places,
    not the value (which may be a secret)."""
    for j, later in enumerate(values):
        first = next((i for i, v in enumerate(values[:j]) if not pending(v) and not pending(later) and v == later),
                     None)
        if first is not None:
            raise ConfigError(field, values, f"items {first} and {j} are the same", "list each once")


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
