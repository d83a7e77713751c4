"""Building CrossGuard policies from plain check functions, so that each rule reads as what it checks.

A resource check gets ``(resource_type, name, props, config)`` and yields ``(problem, fix)``; a stack check gets
``(resources, config)`` and yields ``(resource or None, problem, fix)``. Every violation message names the resource,
what is wrong and the fix.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

from pulumi_policy import (EnforcementLevel, PolicyConfigSchema, PolicyResource, ResourceValidationPolicy,
                           StackValidationPolicy)

ResourceCheck = Callable[[str, str, Mapping[str, Any], Mapping[str, Any]], Iterable[tuple[str, str]]]
StackCheck = Callable[[Sequence[PolicyResource], Mapping[str, Any]],
                      Iterable[tuple[Optional[PolicyResource], str, str]]]

MANDATORY = EnforcementLevel.MANDATORY
ADVISORY = EnforcementLevel.ADVISORY


def message(resource: str, problem: str, fix: str) -> str:
    return f"{resource}: {problem}. Fix: {fix}"


def _schema(config: Optional[Mapping[str, Mapping[str, Any]]]) -> Optional[PolicyConfigSchema]:
    return PolicyConfigSchema(properties=dict(config)) if config else None


def resource_rule(name: str, description: str, level: EnforcementLevel, types: Sequence[str], check: ResourceCheck,
                  config: Optional[Mapping[str, Mapping[str, Any]]] = None) -> ResourceValidationPolicy:
    """A policy run on each resource of ``types``."""
    def validate(args, report_violation) -> None:
        if args.resource_type in types:
            for problem, fix in check(args.resource_type, args.name, args.props, args.get_config() or {}):
                report_violation(message(args.name, problem, fix), None)

    return ResourceValidationPolicy(name=name, description=description, validate=validate, enforcement_level=level,
                                    config_schema=_schema(config))


def stack_rule(name: str, description: str, level: EnforcementLevel, check: StackCheck,
               config: Optional[Mapping[str, Mapping[str, Any]]] = None) -> StackValidationPolicy:
    """A policy run once on all the stack's resources."""
    def validate(args, report_violation) -> None:
        for resource, problem, fix in check(args.resources, args.get_config() or {}):
            report_violation(message(resource.name if resource else "stack", problem, fix),
                             resource.urn if resource else None)

    return StackValidationPolicy(name=name, description=description, validate=validate, enforcement_level=level,
                                 config_schema=_schema(config))


def of_type(resources: Sequence[PolicyResource], *types: str) -> list[PolicyResource]:
    return [r for r in resources if r.resource_type in types]


def dependencies(resource: PolicyResource, prop: str, *types: str) -> list[PolicyResource]:
    """The resources an input of ``resource`` was built from (the engine's property dependencies)."""
    found = (resource.property_dependencies or {}).get(prop) or []
    return [r for r in found if not types or r.resource_type in types]
