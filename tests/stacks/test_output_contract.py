"""Each platform's output contract (components/<platform>/outputs.py) against what its stacks export and what the
smoke SDK reads: every key the smoke SDK reads is exported by every stack of its platform, with the declared type."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from gpuready_components import platforms
from gpuready_components.outputs import contract
from gpuready import smoke
from gpuready.cli import main
from gpuready.plan.render import render
from gpuready.project import find_project, load_stack_config
from tests.conftest import ROOT


def _plan_outputs(stack: str, capsys) -> dict:
    assert main(["plan", "--stack", stack, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["outputs"]


def _variant(stack: str, **config: str) -> dict:
    project = find_project(ROOT)
    settings = {**load_stack_config(project.stack_file(stack), project.name), **config}
    return render(project.main, project.name, stack, settings).outputs


def _assert_keeps(platform: str, outputs: dict) -> None:
    declared = contract(platform)
    assert outputs["platform"] == platform
    assert set(outputs) <= {o.key for o in declared.outputs}, "an output its contract does not declare"
    for output in declared.outputs:
        if output.when is None:
            assert output.key in outputs, f"{platform} does not export {output.key}"
        if output.key in outputs:
            assert output.kind.fits(outputs[output.key]), f"{output.key} is not {output.kind.name}"


@pytest.mark.parametrize("stack", sorted(p.name for p in platforms.every()))
def test_every_reference_stack_exports_its_contract_with_the_declared_types(stack, capsys):
    _assert_keeps(stack, _plan_outputs(stack, capsys))


@pytest.mark.parametrize("stack, config, present, absent", [
    ("aws-batch", {"gpuready:multiNode": '{"nodes": 2}', "gpuready:cpuQueue": '{"maxVcpus": 16}'},
     {"multiNodeJobDefinitionArn", "cpuJobQueueArn"}, set()),
    ("aws-batch", {"gpuready:job": '{"vcpus": 8, "memoryMiB": 30000}'}, set(), {"multiNodeJobDefinitionArn"}),
    ("eks", {"gpuready:autoscaler": "karpenter"}, {"oidcProviderArn"}, set()),
    ("gke", {"gpuready:install": "gpu-operator"}, {"gpuNamespace"}, set()),
])
def test_stacks_with_other_settings_keep_the_contract(stack, config, present, absent):
    outputs = _variant(stack, **config)
    _assert_keeps(stack, outputs)
    assert present <= set(outputs) and not absent & set(outputs)


def test_the_batch_jobs_size_is_the_job_definitions():
    outputs = _variant("aws-batch", **{"gpuready:job": '{"vcpus": 8, "memoryMiB": 30000}'})
    assert (outputs["jobVcpus"], outputs["jobMemoryMib"]) == (8, 30000)


def _keys_read(module: Path) -> tuple[set[str], set[str]]:
    """The output keys a smoke target reads through its ``stack`` (``stack[KEY]``, ``stack.get(KEY)``), and those it
    reads only where the contract declares them (``KEY in stack.contract``)."""
    read, guarded = set(), set()
    for node in ast.walk(ast.parse(module.read_text())):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "stack":
            read.add(node.slice.value)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "stack":
            read.add(node.args[0].value)
        if isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In) \
                and ast.unparse(node.comparators[0]) == "stack.contract":
            guarded.add(node.left.value)
    return read, guarded


@pytest.mark.parametrize("target, platforms", [("batch.py", ("aws-batch",)), ("kubernetes.py", ("eks", "gke", "aks"))])
def test_every_key_a_smoke_target_reads_is_a_smoke_output_of_each_of_its_platforms(target, platforms):
    module = Path(smoke.__file__).parent / target
    read, guarded = _keys_read(module)
    assert read and "outputs.get(" not in module.read_text(), "a target reads outputs around the contract"
    for platform in platforms:
        declared = contract(platform)
        for key in read - guarded:
            assert key in declared and declared[key].smoke, f"{target} reads {key}, not a {platform} smoke output"
        for key in guarded & set(o.key for o in declared.outputs):
            assert declared[key].smoke
