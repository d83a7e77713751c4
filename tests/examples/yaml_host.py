"""What the Pulumi YAML language host does with ``examples/yaml``, done by the test (no ``pulumi-language-yaml`` can
be installed here): read the program and its stack file, check each gpuready resource's properties against the
package's schema, and run it against a resource monitor over gRPC: the stack resource first, then each variable and
resource in the order their references ask, every ``${...}`` replaced by the config value or the output it names
(unknown under preview while the cloud has not computed it), each resource registered with its property
dependencies; a gpuready type is registered ``remote``, as the host registers a component of a package, so that the
engine (here :func:`tests.provider.engine.constructs`) has the provider Construct it.

Only the YAML the example uses is understood: project config with defaults, ``variables`` with ``fn::invoke``
(``function``, ``arguments``, ``return``), ``resources`` with ``type`` and ``properties``, ``outputs``, and
expressions ``${name}``, ``${name.property}``, ``${name[index]}`` and strings around them. The short type tokens
(``aws:ec2:Vpc``) are made whole (``aws:ec2/vpc:Vpc``) by the rule Pulumi's AWS schema follows, not read from a
schema: the real host resolves them from the package's schema."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional

import grpc
import yaml
from google.protobuf import json_format, struct_pb2
from pulumi.runtime import rpc
from pulumi.runtime.proto import resource_pb2, resource_pb2_grpc

UNKNOWN = rpc.UNKNOWN
"""The wire's unknown value: what an output the cloud has not computed is under preview."""
EXPRESSION = re.compile(r"\$\{([^}]+)\}")
ACCESS = re.compile(r"\.([A-Za-z_][\w-]*)|\[(\d+)\]")


@dataclass(frozen=True)
class Program:
    """A Pulumi YAML project and one of its stacks."""

    folder: Path
    project: dict[str, Any]
    """``Pulumi.yaml``, parsed."""
    stack: str
    stack_config: dict[str, str]
    """The stack file's ``config``: every key namespaced (``aws:region``, ``<project>:adminCidr``), values as text."""

    @property
    def name(self) -> str:
        return self.project["name"]

    @property
    def resources(self) -> dict[str, dict[str, Any]]:
        return self.project.get("resources") or {}

    def config(self) -> dict[str, Any]:
        """The program's config values by their bare names (the stack file's, else the default), typed as
        declared; a declared key with neither is an error, as it is for ``pulumi up``."""
        values = {}
        for key, spec in (self.project.get("config") or {}).items():
            given = self.stack_config.get(f"{self.name}:{key}")
            if given is None:
                if "default" not in spec:
                    raise ValueError(f"Missing required configuration variable '{self.name}:{key}'")
                values[key] = spec["default"]
            else:
                values[key] = {"integer": int, "boolean": lambda v: v == "true"}.get(spec.get("type"), str)(given)
        return values


def load(folder: Path, stack: str) -> Program:
    """The program in ``folder`` (``Pulumi.yaml``) with its stack file ``Pulumi.<stack>.yaml``."""
    project = yaml.safe_load((folder / "Pulumi.yaml").read_text())
    stack_file = yaml.safe_load((folder / f"Pulumi.{stack}.yaml").read_text()) or {}
    return Program(folder, project, stack, {k: str(v) for k, v in (stack_file.get("config") or {}).items()})


def whole_token(token: str) -> str:
    """``aws:ec2:Vpc`` -> ``aws:ec2/vpc:Vpc``, ``aws:getAvailabilityZones`` ->
    ``aws:index/getAvailabilityZones:getAvailabilityZones`` (a token already whole, or a component's, unchanged)."""
    parts = token.split(":")
    if len(parts) == 2:
        parts = [parts[0], "index", parts[1]]
    package, module, name = parts
    if package == "gpuready" or "/" in module:
        return token
    return f"{package}:{module}/{name[:1].lower()}{name[1:]}:{name}"


# --- the schema check --------------------------------------------------------------------------------------------


def references(value: Any) -> set[str]:
    """The names (config, variable or resource) the expressions in ``value`` refer to."""
    if isinstance(value, str):
        return {ACCESS.split(expr.strip())[0] for expr in EXPRESSION.findall(value)}
    if isinstance(value, dict):
        return set().union(*(references(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(references(v) for v in value)) if value else set()
    return set()


def schema_errors(program: Program, schema: Mapping[str, Any]) -> list[str]:
    """What the package's schema refuses in each of the program's resources of the package: an unknown or missing
    required property, a value of the wrong type or outside its enum, a resource output given to a ``plain``
    property (a generated SDK takes no output there, and under preview it would be unknown). A config reference is
    taken for a value of the declared type."""
    errors = []
    config_types = {k: (v or {}).get("type", "string") for k, v in (program.project.get("config") or {}).items()}
    for name, resource in program.resources.items():
        declared = schema["resources"].get(resource["type"])
        if declared is None:
            if resource["type"].startswith("gpuready:"):
                errors.append(f"{name}: the package has no resource {resource['type']}")
            continue
        properties = resource.get("properties") or {}
        errors += [f"{name}: missing required property {key}" for key in declared["requiredInputs"]
                   if key not in properties]
        errors += _object_errors(f"{name}", properties, declared["inputProperties"], schema, config_types)
    return errors


def _object_errors(path: str, value: Any, properties: Mapping[str, Any], schema: Mapping[str, Any],
                   config_types: Mapping[str, str]) -> list[str]:
    if not isinstance(value, dict):
        return [f"{path}: {value!r} is not an object"]
    errors = [f"{path}.{key}: not a property of the schema" for key in value if key not in properties]
    for key, item in value.items():
        if key in properties:
            errors += _value_errors(f"{path}.{key}", item, properties[key], schema, config_types)
    return errors


def _value_errors(path: str, value: Any, spec: Mapping[str, Any], schema: Mapping[str, Any],
                  config_types: Mapping[str, str]) -> list[str]:
    if isinstance(value, str) and EXPRESSION.fullmatch(value.strip()):
        name = ACCESS.split(EXPRESSION.fullmatch(value.strip()).group(1))[0]
        if name in config_types:
            kind = {"integer": "integer", "boolean": "boolean", "number": "number"}.get(config_types[name], "string")
            return _value_errors(path, {"integer": 1, "boolean": True, "number": 1.0}.get(kind, "text"), spec, schema,
                                 config_types)
        return [f"{path}: a plain property takes no resource output ({value})"] if spec.get("plain") else []
    if "$ref" in spec:
        declared = schema["types"][spec["$ref"].removeprefix("#/types/")]
        if "enum" in declared:
            allowed = [e["value"] for e in declared["enum"]]
            return [] if value in allowed else [f"{path}: {value!r} is not one of {allowed}"]
        errors = [f"{path}: missing required property {k}" for k in declared.get("required", [])
                  if not isinstance(value, dict) or k not in value]
        return errors + _object_errors(path, value, declared["properties"], schema, config_types)
    kind = spec.get("type")
    if kind == "array":
        if not isinstance(value, list):
            return [f"{path}: {value!r} is not a list"]
        return [e for i, v in enumerate(value) for e in _value_errors(f"{path}[{i}]", v, spec["items"], schema,
                                                                      config_types)]
    if kind == "object":
        if not isinstance(value, dict):
            return [f"{path}: {value!r} is not an object"]
        return [e for k, v in value.items() for e in _value_errors(f"{path}.{k}", v, spec["additionalProperties"],
                                                                   schema, config_types)]
    python = {"string": str, "integer": int, "number": (int, float), "boolean": bool}[kind]
    if not isinstance(value, python) or (kind in ("integer", "number") and isinstance(value, bool)):
        return [f"{path}: {value!r} is not a {kind}"]
    return []


# --- running the program -----------------------------------------------------------------------------------------


@dataclass
class _Registered:
    urn: str
    id: str
    outputs: dict[str, Any]


@dataclass
class Run:
    """One run of a program against a resource monitor: what it registered and its stack outputs (as the wire
    carries them: unknowns and secrets in their wire form)."""

    stack_urn: str
    resources: dict[str, _Registered] = field(default_factory=dict)
    outputs: dict[str, Any] = field(default_factory=dict)


class _Unresolvable(Exception):
    pass


class Host:
    """Runs ``program`` against the resource monitor at ``monitor_address``; ``preview`` as ``pulumi preview``."""

    def __init__(self, program: Program, monitor_address: str, preview: bool) -> None:
        self.program, self.preview = program, preview
        self.channel = grpc.insecure_channel(monitor_address)
        self.monitor = resource_pb2_grpc.ResourceMonitorStub(self.channel)
        self.config = program.config()
        self.variables: dict[str, Any] = {}
        self.run: Optional[Run] = None

    def execute(self) -> Run:
        """Register the stack, every resource and the stack's outputs; returns the run."""
        try:
            stack = self.monitor.RegisterResource(resource_pb2.RegisterResourceRequest(
                type="pulumi:pulumi:Stack", name=f"{self.program.name}-{self.program.stack}"), timeout=60)
            self.run = Run(stack.urn)
            for name in self.program.resources:
                self._resource(name)
            self.run.outputs = {key: self._evaluate(value)
                                for key, value in (self.program.project.get("outputs") or {}).items()}
            struct = struct_pb2.Struct()
            struct.update(self.run.outputs)
            self.monitor.RegisterResourceOutputs(resource_pb2.RegisterResourceOutputsRequest(
                urn=stack.urn, outputs=struct), timeout=60)
            return self.run
        finally:
            self.channel.close()

    def _resource(self, name: str) -> _Registered:
        assert self.run is not None
        if name in self.run.resources:
            return self.run.resources[name]
        spec = self.program.resources[name]
        properties = spec.get("properties") or {}
        dependencies = {}
        for key, value in properties.items():
            urns = sorted(self._resource(ref).urn for ref in references(value) if ref in self.program.resources)
            if urns:
                dependencies[key] = resource_pb2.RegisterResourceRequest.PropertyDependencies(urns=urns)
        inputs = {key: self._evaluate(value) for key, value in properties.items()}
        struct = struct_pb2.Struct()
        struct.update(inputs)
        token = whole_token(spec["type"])
        component = token.startswith("gpuready:")
        response = self.monitor.RegisterResource(resource_pb2.RegisterResourceRequest(
            type=token, name=name, parent=self.run.stack_urn, custom=not component, remote=component, object=struct,
            propertyDependencies=dependencies, dependencies=sorted({u for d in dependencies.values() for u in d.urns}),
            acceptSecrets=True, acceptResources=True, supportsPartialValues=True), timeout=600)
        registered = _Registered(response.urn, response.id, json_format.MessageToDict(response.object))
        self.run.resources[name] = registered
        return registered

    def _variable(self, name: str) -> Any:
        if name not in self.variables:
            spec = self.program.project["variables"][name]
            invoke = spec["fn::invoke"]
            struct = struct_pb2.Struct()
            struct.update(self._evaluate(invoke.get("arguments") or {}))
            answer = self.monitor.Invoke(resource_pb2.ResourceInvokeRequest(
                tok=whole_token(invoke["function"]), args=struct, acceptResources=True), timeout=60)
            if answer.failures:
                raise ValueError(f"{invoke['function']}: {answer.failures}")
            result = json_format.MessageToDict(answer.__getattribute__("return"))
            self.variables[name] = result[invoke["return"]] if "return" in invoke else result
        return self.variables[name]

    def _evaluate(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: self._evaluate(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._evaluate(v) for v in value]
        if not isinstance(value, str) or "${" not in value:
            return value
        whole = EXPRESSION.fullmatch(value.strip())
        if whole:
            return self._lookup(whole.group(1).strip())
        parts = [self._lookup(expr.strip()) for expr in EXPRESSION.findall(value)]
        if any(p == UNKNOWN for p in parts):
            return UNKNOWN
        texts = iter(str(p) for p in parts)
        return EXPRESSION.sub(lambda _: next(texts), value)

    def _lookup(self, expression: str) -> Any:
        name, *accesses = ACCESS.split(expression)
        steps = [(prop, index) for prop, index in zip(accesses[0::3], accesses[1::3])]
        if name in self.config:
            current = self.config[name]
        elif name in (self.program.project.get("variables") or {}):
            current = self._variable(name)
        elif name in self.program.resources:
            registered = self._resource(name)
            prop, _ = steps.pop(0) if steps else (None, None)
            if prop == "id":
                current = registered.id or UNKNOWN
            elif prop == "urn":
                current = registered.urn
            elif prop in registered.outputs:
                current = registered.outputs[prop]
            elif self.preview:
                current = UNKNOWN  # an output the cloud computes: unknown until it has
            else:
                raise _Unresolvable(f"{name} has no output {prop}")
        else:
            raise _Unresolvable(f"{expression}: no config, variable or resource {name}")
        for prop, index in steps:
            if current == UNKNOWN:
                return UNKNOWN
            current = current[int(index)] if index else current[prop]
        return current


def execute(program: Program, monitor_address: str, preview: bool) -> Run:
    """Run ``program`` as the YAML language host does under ``pulumi preview`` (``preview``) or ``pulumi up``."""
    return Host(program, monitor_address, preview).execute()
