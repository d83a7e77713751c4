"""What the Pulumi engine sends a policy pack's analyzer, built from gpuready's offline render: the policy config
(``Configure``), each resource (``Analyze``), then all of them with their dependencies (``AnalyzeStack``). Sent to
pulumi_policy's servicer in this process (:func:`in_process`) or to the real pack in its own process over gRPC."""

from __future__ import annotations

from typing import Any, Callable, Optional

from google.protobuf import struct_pb2
from pulumi.output import Unknown
from pulumi.runtime.proto import analyzer_pb2
from pulumi_policy import EnforcementLevel
from pulumi_policy.policy import _PolicyAnalyzerServicer
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

from gpuready.plan.render import Rendering
from gpuready.policy import RULES
from gpuready.policy.config import resolve

LEVELS = {"advisory": analyzer_pb2.ADVISORY, "mandatory": analyzer_pb2.MANDATORY, "disabled": analyzer_pb2.DISABLED}
Call = Callable[[str, Any], Any]
"""``call(method, request)``: one RPC of the Analyzer service, answered by a servicer or a stub."""


def _wire(value: Any) -> Any:
    """A value as the engine marshals it for an analyzer during a preview: an unknown is UNKNOWN_STRING_VALUE."""
    if isinstance(value, Unknown):
        return UNKNOWN_STRING_VALUE
    if isinstance(value, dict):
        return {k: _wire(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_wire(v) for v in value]
    return value


def struct(props: dict) -> struct_pb2.Struct:
    value = struct_pb2.Struct()
    value.update(_wire(props))
    return value


class Resource:
    """A resource as the engine describes it to the analyzer."""

    def __init__(self, type_: str, name: str, props: dict, deps: Optional[dict[str, list[str]]] = None,
                 parent: str = "", urn: str = "") -> None:
        self.type, self.name, self.props, self.parent = type_, name, props, parent
        self.urn = urn or f"urn:pulumi:test::gpuready::{type_}::{name}"
        self.deps = deps or {}


def from_rendering(rendering: Rendering) -> list[Resource]:
    return [Resource(r.type, r.name, r.inputs, {k: list(v) for k, v in r.property_dependencies.items()}, r.parent,
                     r.urn) for r in rendering.resources]


def configure_request(config: Optional[dict] = None) -> analyzer_pb2.ConfigureAnalyzerRequest:
    """``config`` in policy-config.json's format, with the schema defaults the engine adds."""
    return analyzer_pb2.ConfigureAnalyzerRequest(policyConfig={
        name: analyzer_pb2.PolicyConfig(enforcementLevel=LEVELS[level], properties=struct(settings))
        for name, (level, settings) in resolve(RULES, config or {}).items()})


def analyze(call: Call, resources: list[Resource],
            config: Optional[dict] = None) -> list[analyzer_pb2.AnalyzeDiagnostic]:
    """Every diagnostic the analyzer returns for ``resources``: each resource's Analyze call, then AnalyzeStack,
    after a Configure with ``config``."""
    call("Configure", configure_request(config))
    known_urns = {r.urn for r in resources}
    diagnostics = []
    for r in resources:
        options = analyzer_pb2.AnalyzerResourceOptions(parent=r.parent)
        diagnostics += call("Analyze", analyzer_pb2.AnalyzeRequest(
            type=r.type, properties=struct(r.props), urn=r.urn, name=r.name, options=options)).diagnostics
    stack = analyzer_pb2.AnalyzeStackRequest(resources=[analyzer_pb2.AnalyzerResource(
        type=r.type, properties=struct(r.props), urn=r.urn, name=r.name, parent=r.parent,
        options=analyzer_pb2.AnalyzerResourceOptions(parent=r.parent),
        dependencies=sorted({u for urns in r.deps.values() for u in urns if u in known_urns}),
        propertyDependencies={k: analyzer_pb2.AnalyzerPropertyDependencies(urns=v) for k, v in r.deps.items()})
        for r in resources])
    return [*diagnostics, *call("AnalyzeStack", stack).diagnostics]


def in_process() -> Call:
    """pulumi_policy's analyzer servicer over the pack's rules, in this process."""
    server = _PolicyAnalyzerServicer("gpuready", "0.0.1", list(RULES), EnforcementLevel.ADVISORY)
    return lambda method, request: getattr(server, method)(request, None)
