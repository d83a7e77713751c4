"""``examples/typescript``: ``examples/yaml``'s program in TypeScript, run with the real ``@pulumi/pulumi`` Node.js
runtime (installed by ``npm ci`` from the checked-in lock) against the test's engine, as ``pulumi-language-nodejs``
runs it (:mod:`tests.examples.node`): ``ts-node`` compiles and type-checks ``index.ts``, the AWS resources are
``@pulumi/aws``'s, and each gpuready component is registered remote and constructed by ``provider/`` in its own
process. Under ``pulumi up`` its plan must be ``examples/expected-plan.txt``, the YAML program's; under ``pulumi
preview`` it must register the same resources.

Skipped only where ``node`` or ``npm`` is missing or the npm registry cannot be reached (its first run installs the
program's dependencies). The SDK it imports is a stand-in (:mod:`tests.examples.standin_sdk`)
written from ``provider/schema.json``, not the SDK ``pulumi package add`` generates, which needs the Pulumi CLI:
so neither the generated names and types (``types.input.aws.GpuJobArgs``, enum objects) nor the generated code
itself is verified, only that a remote component registered as Pulumi's Node.js code generation registers one is
constructed as the YAML program's. Not verified either: the language host's own process (its monitor proxy, the
``--sync`` invoke pipes), the real engine, the AWS provider's checks, a real account."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.examples import node, plan, yaml_host

pytestmark = pytest.mark.skipif(bool(node.missing_tools()), reason=f"needs {', '.join(node.missing_tools())}")


@pytest.fixture(scope="module")
def work() -> Path:
    """The program with its dependencies installed; skipped (with npm's reason) only where the npm registry cannot be
    reached, as on a machine with no network: any other install failure fails."""
    try:
        return node.prepared()
    except node.RegistryUnreachable as e:
        pytest.skip(str(e))


def planned(work: Path, preview: bool, index: str | None = None) -> tuple[plan.Planned, str]:
    """The plan of the program in ``work`` (with ``index`` for its ``index.ts``), and its output; the test fails
    with the program's output when it fails."""
    if index is not None:
        (work / "index.ts").write_text(index)
    config = yaml_host.load(work, plan.STACK).stack_config
    with plan.served("gpu-platform", config, preview) as (address, monitor, served_engine):
        done = node.run(work, address, address, "gpu-platform", plan.STACK, config, preview)
        rendering = plan.rendering(monitor, config)
    output = done.stdout + done.stderr + "\n".join(served_engine.errors)
    return plan.Planned(plan.plan_of(rendering), rendering, done), output


def test_the_programs_differ_only_in_their_language():
    """The TypeScript program's project file is the YAML one's less its resources, with the Node.js runtime."""
    typescript = yaml_host.load(node.PROGRAM, plan.STACK)
    yaml = yaml_host.load(plan.EXAMPLES / "yaml", plan.STACK)
    assert typescript.stack_config == yaml.stack_config
    assert typescript.project["runtime"]["name"] == "nodejs"
    for key in ("name", "description", "packages", "config"):
        assert typescript.project[key] == yaml.project[key], key


def test_up_plans_what_the_yaml_program_does(work):
    result, output = planned(work, preview=False)
    assert result.run.returncode == 0, output
    assert plan.text(result.result) == plan.EXPECTED.read_text()
    assert not result.result.policy.mandatory


def test_preview_registers_the_same_resources_with_the_subnet_ids_unknown(work):
    result, output = planned(work, preview=True)
    assert result.run.returncode == 0, output
    yaml_preview = plan.yaml_plan(preview=True)
    assert [r.urn for r in result.rendering.resources] == [r.urn for r in yaml_preview.rendering.resources]
    environment = next(r for r in result.rendering.resources if r.name == "training-gpu-spot")
    assert "subnets" not in environment.inputs["computeResources"]  # unknown under preview
    assert plan.text(result.result) == plan.text(yaml_preview.result)


def test_ts_node_type_checks_the_program_against_the_schema(work, tmp_path):
    """A property the schema does not have fails the program before any registration (ts-node type-checks it
    against the stand-in's declarations, which follow the schema)."""
    copy = tmp_path / "program"
    shutil.copytree(work, copy, symlinks=True, ignore=shutil.ignore_patterns("node_modules"))
    (copy / "node_modules").symlink_to(work / "node_modules")
    broken = (work / "index.ts").read_text().replace("maxVcpus: maxTrainingVcpus", "maxVcpu: maxTrainingVcpus")
    result, output = planned(copy, preview=True, index=broken)
    assert result.run.returncode != 0
    assert "maxVcpu" in output and "TS2" in output, output
    assert not result.rendering.resources
