"""The components as one Pulumi component package (``provider/`` serves it): a schema derived from the args
dataclasses, and a provider that constructs each component from the inputs the engine sends.

One source of truth per input: the schema is read from each component's args dataclass (its fields, types, defaults,
attribute docstrings), the enums from the tables validation checks against (``facts``), the outputs from the output
contracts. The type tokens are the components' own (``gpuready:aws:BatchGpuEnvironment``...), so a program moving
from the Python classes to a generated SDK keeps its resources. Pulumi's ``component_provider_host`` cannot do this:
it names every type ``<package>:index:<ClassName>``, refuses dataclasses whose annotations are strings, and rejects
two classes of one name (the three ``ClusterArgs``).
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.metadata
import inspect
import json
import re
import types
import typing
from collections import abc
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

import pulumi
from pulumi.errors import InputPropertiesError
from pulumi.provider import ConstructResult, Provider

from . import outputs as contracts
from . import platforms
from .errors import ConfigError
from .inputs import NOT_YET, alongside, settled
from .served import Choice, Served, plain

PACKAGE = "gpuready"


def _k8s_component() -> type:
    from .k8s_gpu.component import K8sGpuSoftware

    return K8sGpuSoftware


def _k8s_choices() -> Mapping[tuple[type, str], Choice]:
    from .k8s_gpu import args, facts

    return {
        (args.GpuSoftwareOptions, "install"): Choice("InstallMode", lambda: plain(facts.INSTALL_MODES)),
        (args.MigArgs, "strategy"): Choice("MigStrategy", lambda: plain(facts.MIG_STRATEGIES)),
        (args.BurnInArgs, "dcgm_level"): Choice("DcgmDiagLevel", lambda: plain(facts.DCGM_DIAG_LEVELS)),
        (args.K8sGpuSoftwareArgs, "platform"):
            Choice("Platform", lambda: plain(p.name for p in platforms.every(kubernetes=True))),
        (args.K8sGpuSoftwareArgs, "node_image"):
            Choice("NodeImage", lambda: plain(k for p in platforms.every(kubernetes=True) for k in p.node_images)),
    }


def _software() -> Served:
    """The NVIDIA layer every Kubernetes platform shares, served on its own."""
    from .k8s_gpu.args import K8sGpuSoftwareArgs
    from .k8s_gpu.facts import TYPE_TOKEN
    from .k8s_gpu.outputs import SOFTWARE_OUTPUTS

    return Served(_k8s_component, K8sGpuSoftwareArgs, TYPE_TOKEN, SOFTWARE_OUTPUTS, _k8s_choices())


def served() -> tuple[Served, ...]:
    """Every component the package serves: each registered platform's (its descriptor's ``served``), then the NVIDIA
    layer the Kubernetes platforms share."""
    return (*(s for p in platforms.every() for s in p.served), _software())


def choices() -> dict[tuple[type, str], Choice]:
    """(args dataclass, field) -> its enum, over every served component. Validation still checks these fields: a
    value outside the enum from a language whose SDK does not hold it back gets the component's own message."""
    return {key: choice for s in served() for key, choice in s.choices.items()}


KINDS: Mapping[str, dict[str, Any]] = {
    contracts.STRING.name: {"type": "string"},
    contracts.WHOLE.name: {"type": "integer"},
    contracts.NUMBER.name: {"type": "number"},
    contracts.STRINGS.name: {"type": "array", "items": {"type": "string"}},
    contracts.STRING_MAP.name: {"type": "object", "additionalProperties": {"type": "string"}},
    contracts.LABELS.name: {"type": "object", "additionalProperties": {"type": "string"}},
    contracts.TAINT.name: {"$ref": "#/types/gpuready:k8s:Taint"},
    contracts.TAINTS.name: {"type": "array", "items": {"$ref": "#/types/gpuready:k8s:Taint"}},
    contracts.TEAMS.name: {"type": "array",
                           "items": {"type": "object", "additionalProperties": {"$ref": "pulumi.json#/Any"}}},
    contracts.QUEUE.name: {"type": "object", "additionalProperties": {"type": "string"}},
    contracts.RESERVATIONS.name: {"type": "array",
                                  "items": {"type": "object", "additionalProperties": {"$ref": "pulumi.json#/Any"}}},
}
"""An output contract's kinds as schema types (a taint: the ``Taint`` type the args use too)."""


def camel(name: str) -> str:
    """``max_vcpus`` -> ``maxVcpus``: a Python field's name in the schema."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _hints(cls: type) -> dict[str, Any]:
    """The resolved annotations of ``cls`` (``pulumi.Input`` holds a forward reference to ``Output[T]``)."""
    return typing.get_type_hints(cls, localns={"Output": pulumi.Output, "T": typing.TypeVar("T")})


def _path(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _field_docs(cls: type) -> dict[str, str]:
    """The attribute docstrings of ``cls`` (the string right after each annotated field)."""
    body = ast.parse(inspect.getsource(cls)).body[0]
    docs, previous = {}, None
    for node in body.body:  # type: ignore[attr-defined]
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str) \
                and previous is not None:
            docs[previous] = inspect.cleandoc(node.value.value)
        previous = node.target.id if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) else None
    return docs


def _is_input_part(hint: Any) -> bool:
    """An ``Awaitable[T]`` or ``Output[T]`` member of a ``pulumi.Input[T]`` union."""
    origin = typing.get_origin(hint)
    return origin is abc.Awaitable or getattr(origin, "__name__", None) == "Output" or \
        isinstance(hint, typing.ForwardRef) and hint.__forward_arg__.startswith("Output")


@dataclass(frozen=True)
class Hint:
    """A field's annotation, unwrapped: the value's type, whether it may be None, whether it may be an Output."""

    type: Any
    optional: bool
    input: bool


def unwrap(hint: Any) -> Hint:
    """``Optional[pulumi.Input[X]]`` -> ``Hint(X, optional=True, input=True)``."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        members = typing.get_args(hint)
        rest = [m for m in members if m is not type(None) and not _is_input_part(m)]
        if len(rest) != 1:
            raise TypeError(f"no schema type for the union {hint}")
        return Hint(rest[0], type(None) in members, any(_is_input_part(m) for m in members))
    return Hint(hint, False, False)


def _sequence(hint: Any) -> Optional[Any]:
    """The item type of ``Sequence[X]``, ``list[X]`` or ``tuple[X, ...]``; None for anything else."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (abc.Sequence, list) and len(args) == 1:
        return args[0]
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return args[0]
    return None


def _fixed_tuple(hint: Any) -> bool:
    args = typing.get_args(hint)
    return typing.get_origin(hint) is tuple and bool(args) and Ellipsis not in args


def _mapping(hint: Any) -> Optional[Any]:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (abc.Mapping, dict) and len(args) == 2 and args[0] is str:
        return args[1]
    return None


PRIMITIVES = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _module(cls: type, modules: Mapping[str, str]) -> str:
    """The schema module of a type: that of the component whose folder defines it (``k8s_gpu`` -> ``k8s``); ``index``
    for a type every platform shares, defined beside none (``components/teams.py``: ``gpuready:index:Team``)."""
    folder = cls.__module__.split(".")[1]
    return modules.get(folder, "index")


def _enum_name(value: Any, enum: str) -> str:
    if isinstance(value, str) and value.isidentifier() and not value.islower():
        return value  # ON_DEMAND, AL2023_x86_64_NVIDIA, User: as the cloud spells it
    name = "".join(part[:1].upper() + part[1:] for part in re.split(r"[^A-Za-z0-9_]+", str(value)) if part)
    return name if name[:1].isalpha() else f"{enum}{name}"


class _Builder:
    """Walks the args dataclasses from each served component, collecting the object and enum types they use."""

    def __init__(self, served: tuple[Served, ...]) -> None:
        self.modules = {s.args.__module__.split(".")[1]: s.module for s in served}
        self.choices = {key: (choice, s.module) for s in served for key, choice in s.choices.items()}
        self.types: dict[str, dict[str, Any]] = {}
        self.owners: dict[str, str] = {}

    def token(self, cls: type) -> str:
        name = cls.__name__.removesuffix("Args") if cls.__name__ != "Args" else cls.__name__
        token = f"{PACKAGE}:{_module(cls, self.modules)}:{name}"
        if self.owners.setdefault(token, _path(cls)) != _path(cls):
            raise TypeError(f"{_path(cls)} and {self.owners[token]} would both be {token}")
        return token

    def properties(self, cls: type) -> tuple[dict[str, Any], list[str]]:
        """The schema properties of dataclass ``cls`` and the names of the required ones."""
        hints, docs = _hints(cls), _field_docs(cls)
        props, required = {}, []
        for f in dataclasses.fields(cls):
            hint = unwrap(hints[f.name])
            choice, module = self.choices.get((cls, f.name), (None, ""))
            prop = self.property(hint.type, plain=not hint.input, choice=choice and (choice, module))
            if f.name in docs:
                prop["description"] = docs[f.name]
            props[camel(f.name)] = prop
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING and not hint.optional:
                required.append(camel(f.name))
        return props, required

    def property(self, hint: Any, *, plain: bool, choice: Optional[tuple[Choice, str]] = None) -> dict[str, Any]:
        inner = unwrap(hint)
        hint, plain = inner.type, plain and not inner.input
        prop: dict[str, Any]
        if (item := _sequence(hint)) is not None:
            prop = {"type": "array", "items": self.property(item, plain=plain, choice=choice)}
        elif (value := _mapping(hint)) is not None:
            prop = {"type": "object", "additionalProperties": self.property(value, plain=plain)}
        elif _fixed_tuple(hint):
            prop = {"type": "array", "items": {"$ref": "pulumi.json#/Any"}}
        elif choice is not None:
            prop = {"$ref": f"#/types/{self.enum(*choice)}"}
        elif hint in PRIMITIVES:
            prop = {"type": PRIMITIVES[hint]}
        elif dataclasses.is_dataclass(hint):
            prop = {"$ref": f"#/types/{self.object(hint)}"}
        else:
            raise TypeError(f"no schema type for {hint}")
        if plain:
            prop["plain"] = True
        return prop

    def object(self, cls: type) -> str:
        token = self.token(cls)
        if token not in self.types:
            self.types[token] = {}  # reserved before the walk: a type may refer to itself
            props, required = self.properties(cls)
            self.types[token] = {"type": "object", "description": inspect.cleandoc(cls.__doc__ or ""),
                                 "properties": props, **({"required": required} if required else {})}
        return token

    def enum(self, choice: Choice, module: str) -> str:
        values = choice.values()
        kind = PRIMITIVES[type(next(iter(values)))]
        token = f"{PACKAGE}:{module}:{choice.name}"
        self.types[token] = {"type": kind, "enum": [
            {"name": _enum_name(v, choice.name), "value": v, **({"description": d} if d else {})}
            for v, d in values.items()]}
        return token


def _outputs(contract: contracts.Contract) -> tuple[dict[str, Any], list[str]]:
    props = {}
    for output in contract.outputs:
        prop = dict(KINDS[output.kind.name])
        prop["description"] = output.meaning[:1].upper() + output.meaning[1:] + \
            (f" (only {output.when})" if output.when else "") + "."
        if output.secret:
            prop["secret"] = True
        props[output.key] = prop
    return props, [o.key for o in contract.outputs if o.when is None]


def version() -> str:
    return importlib.metadata.version("gpuready")


def schema() -> dict[str, Any]:
    """The package's Pulumi schema, generated from the served components' args and output contracts."""
    every = served()
    builder = _Builder(every)
    resources = {}
    for one in every:
        inputs, required = builder.properties(one.args)
        props, present = _outputs(one.outputs)
        component_doc = inspect.cleandoc(one.component().__doc__ or "")
        resources[one.token] = {
            "isComponent": True, "description": component_doc, "inputProperties": inputs,
            "requiredInputs": required, "properties": props, "required": present}
    from .k8s_gpu.facts import Taint

    builder.object(Taint)  # the type of the taint outputs
    return {
        "name": PACKAGE,
        "displayName": "gpuready",
        "description": "GPU compute on AWS Batch, EKS, GKE and AKS, with the NVIDIA software, checked before any "
                       "cloud call.",
        "version": version(),
        "meta": {"moduleFormat": "(.*)"},
        "language": {"python": {"respectSchemaVersion": True}},
        "resources": dict(sorted(resources.items())),
        "types": dict(sorted(builder.types.items())),
    }


def schema_text() -> str:
    """The schema as ``provider/schema.json`` holds it."""
    return json.dumps(schema(), indent=2, sort_keys=False) + "\n"


# --- construct: the engine's inputs back into the args dataclasses ---------------------------------------------


class InputError(ValueError):
    """An input the engine sent that no args field takes, or a required one missing."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(reason)
        self.path = path
        self.reason = reason


def to_args(cls: type, inputs: Mapping[str, Any], path: str = "") -> Any:
    """An instance of dataclass ``cls`` from the schema-named ``inputs`` (nested types, lists and numbers as the
    annotations say: the wire carries every number as a float, and lists for tuples)."""
    if not isinstance(inputs, Mapping):
        where = path.removesuffix(".")  # a nested object's path ends in the dot its fields' names follow
        raise InputError(where, f"{where or 'args'} must be an object, not {inputs!r}")
    hints = _hints(cls)
    by_name = {camel(f.name): f for f in dataclasses.fields(cls)}
    unknown = sorted(set(inputs) - set(by_name))
    if unknown:
        raise InputError(f"{path}{unknown[0]}", f"{path}{unknown[0]} is not an input of {cls.__name__}")
    kwargs = {}
    for key, f in by_name.items():
        if inputs.get(key) is not None:
            kwargs[f.name] = _value(unwrap(hints[f.name]).type, inputs[key], f"{path}{key}")
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING and \
                not unwrap(hints[f.name]).optional:
            raise InputError(f"{path}{key}", f"Missing required input '{path}{key}' on '{cls.__name__}'")
    return cls(**kwargs)


def _value(hint: Any, value: Any, path: str) -> Any:
    hint = unwrap(hint).type
    if _is_output(value):
        return _object_from_output(hint, value, path) if dataclasses.is_dataclass(hint) else value
    if dataclasses.is_dataclass(hint):
        return to_args(hint, value, f"{path}.")  # type: ignore[arg-type]
    if (item := _sequence(hint)) is not None and isinstance(value, list):
        items = [_value(item, v, f"{path}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if typing.get_origin(hint) is tuple else items
    if _fixed_tuple(hint) and isinstance(value, list):
        return tuple(_value(h, v, f"{path}[{i}]") for i, (h, v) in enumerate(zip(typing.get_args(hint), value)))
    if (inner := _mapping(hint)) is not None and isinstance(value, Mapping):
        return {k: _value(inner, v, f"{path}.{k}") for k, v in value.items()}
    if hint is int and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _object_from_output(cls: type, value: Any, path: str) -> Any:
    """An args object the engine sent as one output: a plain property (``existingCluster``) whose value came with the
    resources it was built from (an engine or SDK that sends no output values wraps the whole property). Its value
    must be known (the component checks it at construction); each of its input fields then carries those resources,
    so that what the component builds from them still waits for them."""
    now = settled(value)
    if now is NOT_YET:
        raise InputError(path, f"{path} must be known when the component is constructed: give its fields as values "
                               "or outputs, not the whole object as the output of an unknown value")
    return _carrying(to_args(cls, now, f"{path}."), value)  # type: ignore[arg-type]


def _carrying(args: Any, output: Any) -> Any:
    """``args`` with each input field's value (nested args objects too) an output of the same value that depends on
    what ``output`` depends on."""
    hints, changes = _hints(type(args)), {}
    for f in dataclasses.fields(args):
        given, hint = getattr(args, f.name), unwrap(hints[f.name])
        if given is None:
            continue
        if dataclasses.is_dataclass(given):
            changes[f.name] = _carrying(given, output)
        elif hint.input:
            changes[f.name] = alongside(output, given)
    return dataclasses.replace(args, **changes)


def _is_output(value: Any) -> bool:
    return type(value).__name__ == "Output" and type(value).__module__.startswith("pulumi")


def property_path(error: ConfigError) -> str:
    """The schema path of the field a ConfigError names (``node_group.capacity_type (stack: ...)`` ->
    ``nodeGroup.capacityType``)."""
    field = error.field.split(" ")[0]
    return ".".join(camel(part) for part in field.split("."))


class GpureadyProvider(Provider):
    """The package's provider: GetSchema answers :func:`schema`; Construct builds the component the token names,
    under the engine's resource monitor. A ConfigError comes back as the engine's input error, with the message a
    Python program gets from the same args."""

    def __init__(self) -> None:
        super().__init__(version(), json.dumps(schema()))

    def construct(self, name: str, resource_type: str, inputs: pulumi.Inputs,
                  options: Optional[pulumi.ResourceOptions] = None) -> ConstructResult:
        found = next((s for s in served() if s.token == resource_type), None)
        if found is None:
            raise ValueError(f"{resource_type} is not a component of the {PACKAGE} package")
        try:
            args = to_args(found.args, inputs)
        except InputError as e:
            raise InputPropertiesError(e.reason, [{"property_path": e.path, "reason": e.reason}]) from e
        try:
            component = found.component()(name, args, options)
        except ConfigError as e:
            raise InputPropertiesError(str(e), [{"property_path": property_path(e), "reason": str(e)}]) from e
        return ConstructResult(component.urn, component.outputs)


if __name__ == "__main__":  # python -m gpuready_components.package > provider/schema.json
    print(schema_text(), end="")
