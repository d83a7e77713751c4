"""A stand-in for the Node.js SDK ``pulumi package add`` generates from ``provider/schema.json`` (``@pulumi/gpuready``,
in the program's ``sdks/gpuready``), written by the test because the generator is part of the Pulumi CLI.

It is not the generated SDK. What it keeps of Pulumi's Node.js code generation for a component: one class per
resource under its module's namespace (``gpuready.aws.BatchGpuEnvironment``), the constructor
``(name, args, opts)``, a missing required input refused by name, every input passed as given, every output
declared (``resourceInputs[output] = undefined``) so that the runtime resolves it from the engine's answer, the
package's version in the options, and ``super(TOKEN, name, resourceInputs, opts, true /* remote */)``: the engine
then has the provider construct the component. Its type declarations follow the schema (plain inputs take values,
the others ``pulumi.Input``; enums as the union of their values; nested types inline), so that ``ts-node`` type-checks
the program against the schema's names. What differs from the real SDK: the generated type names and files
(``types.input.aws.GpuJobArgs``, the enum objects such as ``BatchCapacity.Spot``), docs, ``isInstance`` and
``getResource``, and the package's own dependencies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from tests.provider import engine

NAME = "@pulumi/gpuready"
"""The package name Pulumi's Node.js host links a package without a ``language.nodejs.packageName`` under."""


def _type(spec: Mapping[str, Any], schema: Mapping[str, Any], *, input_: bool) -> str:
    plain = spec.get("plain", False) or not input_
    if "$ref" in spec:
        ref = spec["$ref"]
        if ref == "pulumi.json#/Any":
            text = "any"
        else:
            declared = schema["types"][ref.removeprefix("#/types/")]
            if "enum" in declared:
                text = " | ".join(json.dumps(e["value"]) for e in declared["enum"])
            else:
                text = _object(declared, schema, input_=input_)
    elif spec["type"] == "array":
        text = f"({_type(spec['items'], schema, input_=input_)})[]"
    elif spec["type"] == "object":
        text = f"{{[key: string]: {_type(spec['additionalProperties'], schema, input_=input_)}}}"
    else:
        text = {"string": "string", "integer": "number", "number": "number", "boolean": "boolean"}[spec["type"]]
    return text if plain else f"pulumi.Input<{text}>"


def _object(declared: Mapping[str, Any], schema: Mapping[str, Any], *, input_: bool) -> str:
    required = set(declared.get("required", ()))
    fields = [f"{key}{'' if key in required else '?'}: {_type(spec, schema, input_=input_)}"
              for key, spec in declared["properties"].items()]
    return "{" + "; ".join(fields) + "}"


def declarations(schema: Mapping[str, Any]) -> str:
    """``index.d.ts``: a namespace per module, an args interface and a class per component."""
    modules: dict[str, list[str]] = {}
    for token, resource in schema["resources"].items():
        _, module, name = token.split(":")
        required = set(resource["requiredInputs"])
        inputs = [f"        {key}{'' if key in required else '?'}: {_type(spec, schema, input_=True)};"
                  for key, spec in resource["inputProperties"].items()]
        outputs = [f"        readonly {key}: pulumi.Output<{_type(spec, schema, input_=False)}>;"
                   for key, spec in resource["properties"].items()]
        modules.setdefault(module, []).extend([
            f"    interface {name}Args {{", *inputs, "    }",
            f"    class {name} extends pulumi.ComponentResource {{", *outputs,
            f"        constructor(name: string, args: {name}Args, opts?: pulumi.ComponentResourceOptions);", "    }"])
    body = [f"export declare namespace {module} {{\n" + "\n".join(lines) + "\n}" for module, lines in modules.items()]
    return 'import * as pulumi from "@pulumi/pulumi";\n\n' + "\n\n".join(body) + "\n"


def module(schema: Mapping[str, Any]) -> str:
    """``index.js``: each component a remote ComponentResource, as the generated class is."""
    classes: dict[str, list[str]] = {}
    for token, resource in schema["resources"].items():
        _, mod, name = token.split(":")
        classes.setdefault(mod, []).append(
            f"    {name}: component({json.dumps(token)}, {json.dumps(resource['requiredInputs'])}, "
            f"{json.dumps(list(resource['inputProperties']))}, {json.dumps(list(resource['properties']))}),")
    exports = "\n".join(f"exports.{mod} = {{\n" + "\n".join(lines) + "\n};" for mod, lines in classes.items())
    return f'''"use strict";
// A stand-in for the SDK `pulumi package add` generates (see tests/examples/standin_sdk.py): not the generated SDK.
const pulumi = require("@pulumi/pulumi");
const version = {json.dumps(schema["version"])};

function component(token, required, inputs, outputs) {{
    return class extends pulumi.ComponentResource {{
        constructor(name, args, opts) {{
            opts = opts || {{}};
            const resourceInputs = {{}};
            for (const key of required) {{
                if ((!args || args[key] === undefined) && !opts.urn) {{
                    throw new Error(`Missing required property '${{key}}'`);
                }}
            }}
            for (const key of inputs) {{
                resourceInputs[key] = args ? args[key] : undefined;
            }}
            for (const key of outputs) {{
                if (!(key in resourceInputs)) {{
                    resourceInputs[key] = undefined; /*out*/
                }}
            }}
            opts = pulumi.mergeOptions({{ version }}, opts);
            super(token, name, resourceInputs, opts, true /*remote*/);
        }}
    }};
}}

{exports}
'''


def manifest(schema: Mapping[str, Any]) -> str:
    """``package.json``: the package the program's ``file:sdks/gpuready`` dependency links."""
    return json.dumps({"name": NAME, "version": schema["version"], "main": "index.js", "types": "index.d.ts",
                       "peerDependencies": {"@pulumi/pulumi": "^3.142.0"}}, indent=4) + "\n"


def write(folder: Path, schema_file: Path = engine.PLUGIN / "schema.json") -> None:
    """Write the stand-in for ``schema_file`` into ``folder`` (a program's ``sdks/gpuready``)."""
    schema = json.loads(schema_file.read_text())
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "package.json").write_text(manifest(schema))
    (folder / "index.js").write_text(module(schema))
    (folder / "index.d.ts").write_text(declarations(schema))
