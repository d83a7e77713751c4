"""Run the policy pack on a rendered stack, as ``pulumi preview --policy-pack`` runs it, without the engine."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

from pulumi.runtime.sync_await import _sync_await
from pulumi_policy import (PolicyCustomTimeouts, PolicyResource, PolicyResourceOptions, ResourceValidationArgs,
                           ResourceValidationPolicy, StackValidationArgs)

from ..rendering import Rendering
from . import config as policy_config
from .rules import RULES
from .unknown import UnknownValueError, as_engine_sends


@dataclass(frozen=True)
class Violation:
    policy: str
    level: str
    """``mandatory`` fails the plan; ``advisory`` is reported only."""
    message: str
    urn: str = ""
    """The resource's URN; '' for a violation of the stack as a whole."""
    resource: str = ""
    type: str = ""


@dataclass
class PolicyReport:
    policies: dict[str, str] = field(default_factory=dict)
    """Every rule that ran -> its enforcement level."""
    violations: list[Violation] = field(default_factory=list)
    undecided: dict[str, str] = field(default_factory=dict)
    """Rule -> what it could not decide because a value it needs is unknown (only in a preview render)."""
    settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Every rule that ran -> the settings it ran with (the policy config's over the rule's defaults)."""

    @property
    def mandatory(self) -> list[Violation]:
        return [v for v in self.violations if v.level == "mandatory"]


def _options(parent: str) -> PolicyResourceOptions:
    return PolicyResourceOptions(protect=False, ignore_changes=[], delete_before_replace=None, aliases=[],
                                 custom_timeouts=PolicyCustomTimeouts(0, 0, 0), additional_secret_outputs=[],
                                 parent=parent or None)


def _policy_resources(rendering: Rendering) -> list[PolicyResource]:
    by_urn = {}
    for r in rendering.resources:
        by_urn[r.urn] = PolicyResource(resource_type=r.type, props=as_engine_sends(r.inputs), urn=r.urn, name=r.name,
                                       opts=_options(r.parent), provider=None, parent=None, dependencies=[],
                                       property_dependencies={})
    for r in rendering.resources:
        resource = by_urn[r.urn]
        resource.parent = by_urn.get(r.parent)
        resource.property_dependencies = {k: [by_urn[u] for u in urns if u in by_urn]
                                          for k, urns in r.property_dependencies.items()}
        resource.dependencies = sorted({d for ds in resource.property_dependencies.values() for d in ds},
                                       key=lambda d: d.urn)
    return [by_urn[r.urn] for r in rendering.resources]


def _call(validate: Any, args: Any, report: Any) -> Optional[str]:
    """Run a policy's validation; what it could not decide, as the engine would report it (None: all decided)."""
    try:
        for fn in validate if isinstance(validate, list) else [validate]:
            result = fn(args, report)
            if inspect.isawaitable(result):
                _sync_await(result)
    except UnknownValueError as error:
        return error.message
    return None


def _undecided(report: PolicyReport, policy: str, message: Optional[str]) -> None:
    if message:
        report.undecided[policy] = "; ".join(filter(None, [report.undecided.get(policy), message]))


def run(rendering: Rendering, config_file: Optional[Path] = None, policies: Sequence[Any] = RULES) -> PolicyReport:
    """Every rule on every resource of ``rendering`` (and once on the stack), with ``config_file``'s settings."""
    resolved = policy_config.resolve(policies, policy_config.load(config_file))
    resources = _policy_resources(rendering)
    report = PolicyReport()
    for policy in policies:
        level, settings = resolved[policy.name]
        if level == "disabled":
            continue
        report.policies[policy.name] = level
        report.settings[policy.name] = dict(settings)
        if isinstance(policy, ResourceValidationPolicy):
            for resource in resources:
                def violation(message: str, urn: Optional[str] = None, _r=resource) -> None:
                    report.violations.append(Violation(policy.name, level, message, urn or _r.urn, _r.name,
                                                       _r.resource_type))
                args = ResourceValidationArgs(resource.resource_type, resource.props, resource.urn, resource.name,
                                              resource.opts, None, settings)
                _undecided(report, policy.name, _call(policy.validate, args, violation))
        else:
            by_urn = {r.urn: r for r in resources}

            def violation(message: str, urn: Optional[str] = None) -> None:
                r = by_urn.get(urn or "")
                report.violations.append(Violation(policy.name, level, message, urn or "", r.name if r else "",
                                                   r.resource_type if r else ""))
            _undecided(report, policy.name, _call(policy.validate, StackValidationArgs(resources, settings), violation))
    return report
