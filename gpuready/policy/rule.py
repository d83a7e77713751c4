"""Building CrossGuard policies from plain check functions, so that each rule reads as what it checks.

A resource check gets ``(resource_type, name, props, config)`` and yields ``(problem, fix)``; a stack check gets
``(resources, config)`` and yields ``(resource or None, problem, fix)``. Every violation message names the resource,
what is wrong and the fix.

Unknown values (a preview's outputs, see :mod:`.unknown`) are handled here and nowhere else: a check reads only the
values it needs, through :func:`each` (one verdict per item) and :func:`known` (the items whose values are known).
A check may also yield the :class:`UnknownValueError` of an item it cannot decide. Every violation found is
reported; what could not be decided is then raised as one ``UnknownValueError`` naming the resources, which the
engine reports as an advisory "can't run policy during preview" and ``gpuready plan`` as undecided.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, Sequence, TypeVar, Union

from pulumi_policy import (EnforcementLevel, PolicyConfigSchema, PolicyResource, ResourceValidationPolicy,
                           StackValidationPolicy)

from .unknown import UnknownValueError, undecided

T = TypeVar("T")
R = TypeVar("R")

ResourceCheck = Callable[[str, str, Mapping[str, Any], Mapping[str, Any]], Iterable[tuple[str, str]]]
StackCheck = Callable[[Sequence[PolicyResource], Mapping[str, Any]],
                      Iterable[tuple[Optional[PolicyResource], str, str]]]

MANDATORY = EnforcementLevel.MANDATORY
ADVISORY = EnforcementLevel.ADVISORY


def message(resource: str, problem: str, fix: str) -> str:
    return f"{resource}: {problem}. Fix: {fix}"


def _schema(config: Optional[Mapping[str, Mapping[str, Any]]]) -> Optional[PolicyConfigSchema]:
    return PolicyConfigSchema(properties=dict(config)) if config else None


def _naming(item: Any, error: UnknownValueError) -> UnknownValueError:
    """``error`` naming the resource ``item`` (resource checks name their resource in :func:`resource_rule`)."""
    return undecided(error, f"{item.name}: {error.message}") if isinstance(item, PolicyResource) else error


def each(items: Iterable[T], check: Callable[[T], Iterable[Any]]) -> Iterator[Any]:
    """What ``check(item)`` yields for every item; for an item whose needed values are unknown, its
    ``UnknownValueError`` (naming the item), and on to the next item."""
    for item in items:
        try:
            yield from check(item)
        except UnknownValueError as error:
            yield _naming(item, error)


def known(items: Iterable[T], read: Callable[[T], R]) -> tuple[list[R], Optional[UnknownValueError]]:
    """``read(item)`` of every item whose values ``read`` needs are known, and the error of the first that is not."""
    values, unknown = [], None
    for item in items:
        try:
            values.append(read(item))
        except UnknownValueError as error:
            unknown = unknown or _naming(item, error)
    return values, unknown


def _report(found: Iterable[Any], report: Callable[..., None]) -> None:
    """Report every violation in ``found``, then raise what could not be decided as one error."""
    errors: dict[str, UnknownValueError] = {}
    try:
        for item in found:
            if isinstance(item, UnknownValueError):
                errors.setdefault(item.message, item)
            else:
                report(*item)
    except UnknownValueError as error:
        errors.setdefault(error.message, error)
    if errors:
        first, *rest = errors.values()
        raise undecided(first, "; ".join([first.message, *(e.message for e in rest)]))


def resource_rule(name: str, description: str, level: EnforcementLevel,
                  types: Union[Sequence[str], Callable[[], Sequence[str]]], check: ResourceCheck,
                  config: Optional[Mapping[str, Mapping[str, Any]]] = None) -> ResourceValidationPolicy:
    """A policy run on each resource of ``types`` (type tokens, or a function giving them when a resource comes: the
    readers of a kind that every registered platform adds to)."""
    def validate(args, report_violation) -> None:
        if args.resource_type not in (types() if callable(types) else types):
            return
        found = check(args.resource_type, args.name, args.props, args.get_config() or {})
        try:
            _report(found, lambda problem, fix: report_violation(message(args.name, problem, fix), None))
        except UnknownValueError as error:
            raise undecided(error, f"{args.name}: {error.message}") from None

    return ResourceValidationPolicy(name=name, description=description, validate=validate, enforcement_level=level,
                                    config_schema=_schema(config))


def stack_rule(name: str, description: str, level: EnforcementLevel, check: StackCheck,
               config: Optional[Mapping[str, Mapping[str, Any]]] = None) -> StackValidationPolicy:
    """A policy run once on all the stack's resources."""
    def validate(args, report_violation) -> None:
        _report(check(args.resources, args.get_config() or {}),
                lambda resource, problem, fix: report_violation(
                    message(resource.name if resource else "stack", problem, fix), resource.urn if resource else None))

    return StackValidationPolicy(name=name, description=description, validate=validate, enforcement_level=level,
                                 config_schema=_schema(config))


def dependencies(resource: PolicyResource, prop: str, *readers: type) -> list[PolicyResource]:
    """The resources an input of ``resource`` was built from (the engine's property dependencies), those read by
    ``readers`` (:mod:`gpuready.resources`) if any are given."""
    from gpuready.resources import is_a

    found = (resource.property_dependencies or {}).get(prop) or []
    return [r for r in found if not readers or is_a(r.resource_type, *readers)]
