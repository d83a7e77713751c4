"""Rendering reference stacks (optionally broken by a Pulumi stack transformation) and running the rules on them."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, Callable, Optional

import pulumi

from gpuready.plan.render import Rendering, run
from gpuready.policy import PolicyReport
from gpuready.policy import run as run_policies
from gpuready.project import find_project, load_stack_config
from tests.conftest import ROOT


def _step(obj: Any, key: str) -> Any:
    return obj[key] if isinstance(obj, dict) else pulumi.get(obj, key)


def set_prop(props: dict, path: str, value: Any) -> None:
    """Set ``a.b.c`` in a transformation's props (Python names; nested Args objects or dicts; ``[0]`` indexes)."""
    *parents, last = path.split(".")
    obj: Any = props
    for part in parents:
        name, _, index = part.partition("[")
        obj = _step(obj, name)
        if index:
            obj = obj[int(index.rstrip("]"))]
    if isinstance(obj, dict):
        obj[last] = value
    else:
        pulumi.set(obj, last, value)


def break_resource(type_: str, change: Callable[[dict], None], name: Optional[str] = None):
    """A stack transformation applying ``change`` to the props of resources of ``type_`` (and ``name``)."""
    def transformation(args: pulumi.ResourceTransformationArgs):
        if args.type_ == type_ and (name is None or args.name == name):
            change(args.props)
            return pulumi.ResourceTransformationResult(props=args.props, opts=args.opts)
        return None
    return transformation


NARROWED_API_ACCESS = {"gpuready:apiAllowedCidrs": ["81.2.69.0/24"]}
"""The allow-list a deployer sets as the README asks. The shipped stack files allow anywhere (0.0.0.0/0), which the
endpoint rules flag as advisories (tested on their own); the other rules' tests start from a stack with none."""
ENDPOINT_RULES = {"eks": "eks-endpoint-allow-list", "gke": "api-endpoint-allow-list", "aks": "api-endpoint-allow-list"}


def render_stack(stack: str, *transformations, preview: bool = False, shipped: bool = False,
                 **config_changes) -> Rendering:
    """The reference stack ``stack`` rendered offline, with config changes (None removes a key) and transformations
    applied to every resource it declares, as ``pulumi.runtime.register_stack_transformation`` applies them.
    ``preview`` renders it as a first ``pulumi preview`` sees it: the outputs the cloud computes are unknown.
    Kubernetes stacks get :data:`NARROWED_API_ACCESS` unless ``shipped`` (the stack file as it is) or overridden."""
    project = find_project(ROOT)
    config = load_stack_config(project.stack_file(stack), project.name)
    if stack in ENDPOINT_RULES and not shipped:
        config_changes = {**NARROWED_API_ACCESS, **config_changes}
    for key, value in config_changes.items():
        key = key.replace("__", ":")
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value if isinstance(value, str) else json.dumps(value)

    def program():
        for transformation in transformations:
            pulumi.runtime.register_stack_transformation(transformation)
        from gpuready_stacks import main

        main()

    return run(program, project=project.name, stack=stack, config=config, preview=preview)


def violations(rendering: Rendering, config: Optional[dict] = None, tmp: Optional[Path] = None,
               decided: bool = True) -> PolicyReport:
    """The rules' report on ``rendering``; with ``decided``, checks that every rule decided every resource."""
    path = None
    if config is not None:
        path = Path(tmp or tempfile.mkdtemp(prefix="gpuready-policy-")) / "policy-config.json"
        path.write_text(json.dumps(config))
    report = run_policies(rendering, path)
    assert not decided or report.undecided == {}, report.undecided
    return report


def broken(report: PolicyReport) -> set[tuple[str, str, str]]:
    """(rule, level, resource name or 'stack') of every violation."""
    return {(v.policy, v.level, v.resource or "stack") for v in report.violations}


def edited(rendering: Rendering, type_: str, name: Optional[str] = None,
           change: Optional[Callable[[dict], Optional[dict]]] = None) -> Rendering:
    """A copy of ``rendering`` whose resources of ``type_`` (and ``name``) get the inputs ``change(inputs)`` returns
    (a deep copy of theirs is passed), or are dropped when ``change`` is None or returns None: the stack as the engine
    would receive it after that edit, without rendering it again."""
    import copy
    import dataclasses

    resources = []
    for resource in rendering.resources:
        if resource.type == type_ and (name is None or resource.name == name):
            inputs = change(copy.deepcopy(resource.inputs)) if change else None
            if inputs is None:
                continue
            resource = dataclasses.replace(resource, inputs=inputs)
        resources.append(resource)
    return dataclasses.replace(rendering, resources=resources)


def said(report: PolicyReport, rule: str) -> list[tuple[str, str, str]]:
    """(level, resource name or 'stack', whole message) of each violation of ``rule``, in the order reported."""
    return [(v.level, v.resource or "stack", v.message) for v in report.violations if v.policy == rule]
