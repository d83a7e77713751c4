"""The pack as ``pulumi preview --policy-pack policies`` runs it: in a process of its own, started as the engine starts
a Python pack (``pulumi-analyzer-policy-python``: ``python -u -m pulumi.policy ENGINE .`` in the pack's folder, the
stack's config in ``PULUMI_CONFIG``), the resources sent over gRPC. The GPU facts of a stack's own instance types
(``gpuready:extraInstanceTypes``) are known in the stack program's process only: the pack must find them on the
resources, and reach the verdicts ``gpuready plan --json`` reports on the same stack."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Iterator

import grpc
import pytest
import yaml
from google.protobuf import empty_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

from gpuready.cli import main
from gpuready.plan.render import render
from gpuready.policy import RULES
from gpuready.policy.rules.queues import RULES as QUEUE_RULES
from gpuready.project import load_project, load_stack_config
from tests.conftest import ROOT, plugin_channel
from tests.gpuready.queue_programs import overcommitted
from tests.gpuready.queue_programs import project as queue_project
from tests.policies import engine
from tests.stacks.test_extra_types import FOUR_GPU_TEAMS, G9

PACK = ROOT / "policies"
SHIPPED = json.loads((PACK / "policy-config.json").read_text())
ENGINE = "127.0.0.1:1"
"""The engine's address, the pack's first argument: nothing listens there, and the pack never calls it here."""
TOO_BIG = '''
aws.batch.JobDefinition("too-big", type="container", platform_capabilities=["EC2"],
                        container_properties=json.dumps({"image": "public.ecr.aws/docker/library/python:3.12",
                                                         "resourceRequirements": [
                                                             {"type": "GPU", "value": "2"},
                                                             {"type": "VCPU", "value": "4"},
                                                             {"type": "MEMORY", "value": "8192"}]}))
'''
"""A team's own job definition beside the stack's, asking for more GPUs than the declared type has."""


@contextlib.contextmanager
def pack(project: str, stack: str, config: dict[str, str]) -> Iterator[engine.Call]:
    """The pack's Analyzer in a process of its own, handshaken and stack-configured as the engine does; the process
    is ended however the block ends."""
    env = {**os.environ, "PULUMI_PROJECT": project, "PULUMI_STACK": stack, "PULUMI_DRY_RUN": "true",
           "PULUMI_CONFIG": json.dumps(config)}
    with plugin_channel([sys.executable, "-u", "-m", "pulumi.policy", ENGINE, "."], PACK, "pack", env) as channel:
        stub = analyzer_pb2_grpc.AnalyzerStub(channel)
        with pytest.raises(grpc.RpcError) as refused:  # the engine goes on without a handshake
            stub.Handshake(analyzer_pb2.AnalyzerHandshakeRequest(
                engine_address=ENGINE, root_directory=str(PACK), program_directory=str(PACK)))
        assert refused.value.code() == grpc.StatusCode.UNIMPLEMENTED
        assert stub.GetPluginInfo(empty_pb2.Empty()).version
        info = stub.GetAnalyzerInfo(empty_pb2.Empty())
        assert info.name == "gpuready" and [p.name for p in info.policies] == [r.name for r in RULES]
        stub.ConfigureStack(analyzer_pb2.AnalyzerStackConfigureRequest(
            stack=stack, project=project, dry_run=True, config=config))
        yield lambda method, request: getattr(stub, method)(request, timeout=60)


def _program(tmp_path: Path, stack: str, changes: dict, extra_code: str = "") -> Path:
    """A team's Pulumi project: gpuready's stack program (and ``extra_code``), a stack file of ``stack``'s reference
    config with ``changes``."""
    folder = tmp_path / "team-infra"
    folder.mkdir()
    (folder / "Pulumi.yaml").write_text("name: team-infra\nruntime: python\n")
    (folder / "__main__.py").write_text("import json\nimport sys\n\nimport pulumi_aws as aws\n"
                                        f"from gpuready_stacks import main\n\nmain()\n{extra_code}")
    data = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    data["config"].update(changes)
    (folder / "Pulumi.extra.yaml").write_text(yaml.safe_dump(data))
    return folder


def _verdicts(tmp_path: Path, capsys: pytest.CaptureFixture, folder: Path, policy: dict) -> tuple[int, list, list]:
    """``gpuready plan --json``'s exit code, and (rule, level, message) of every violation: the plan's, and the
    pack's in its own process on the same render."""
    config_file = tmp_path / "policy-config.json"
    config_file.write_text(json.dumps(policy))
    code = main(["plan", "--program", str(folder), "--stack", "extra", "--json", "--policy-config", str(config_file)])
    report = json.loads(capsys.readouterr().out)["policy"]
    assert report["undecided"] == {}
    planned = sorted((v["policy"], v["level"], v["message"]) for v in report["violations"])

    project = load_project(folder)
    config = load_stack_config(project.stack_file("extra"), project.name)
    rendering = render(project.main, project.name, "extra", config)
    with pack(project.name, "extra", config) as call:
        diagnostics = engine.analyze(call, engine.from_rendering(rendering), policy)
    packed = sorted((d.policyName, analyzer_pb2.EnforcementLevel.Name(d.enforcementLevel).lower(),
                     d.message[len(d.description) + 1:]) for d in diagnostics)
    return code, planned, packed


NARROWED = {"gpuready:apiAllowedCidrs": ["81.2.69.0/24"], "gpuready:tags": {"team": "ml-platform"}}
CASES = {
    "aws-batch": ("aws-batch", {"gpuready:minVcpus": 4, "gpuready:tags": {"team": "ml-platform"}}, TOO_BIG,
                  {"gpu-capacity-caps": {"maxGpus": 8}, "gpu-queue-runnable-timeout": {"maxRunnableMinutes": 30}},
                  {("gpu-job-fits", "too-big"), ("gpu-scale-to-zero", "gpu-gpu-on-demand"),
                   ("gpu-capacity-caps", "stack"), ("cost-allocation-tags", "gpu-gpu-on-demand"),
                   ("gpu-queue-runnable-timeout", "gpu-gpu"), ("gpu-queue-runnable-timeout", "gpu-gpu-teams")}),
    "eks": ("eks", {"gpuready:minSize": 1, "gpuready:rootVolumeGiB": 50, **NARROWED, **FOUR_GPU_TEAMS}, "",
            {"gpu-capacity-caps": {"maxGpus": 2}},
            {("gpu-scale-to-zero", "eks-gpu"), ("gpu-capacity-caps", "stack"), ("gpu-root-volume-size", "eks-gpu"),
             ("cost-allocation-tags", "eks-gpu")}),
    "eks-karpenter": ("eks", {"gpuready:autoscaler": "karpenter", **NARROWED, **FOUR_GPU_TEAMS}, "",
                      {"gpu-capacity-caps": {"maxGpus": 2}}, {("gpu-capacity-caps", "stack")}),
}
"""Case -> (stack, config changes besides the declared type, program code beside the stack's, policy settings
over the shipped file, (rule, resource) of every violation expected)."""


@pytest.mark.parametrize("case", CASES)
def test_the_pack_in_its_own_process_reaches_the_verdicts_of_gpuready_plan_on_a_declared_type(tmp_path, capsys,
                                                                                               case):
    stack, changes, code, settings, expected = CASES[case]
    folder = _program(tmp_path, stack, {"gpuready:instanceTypes": ["g9.xlarge"],
                                        "gpuready:extraInstanceTypes": [G9], **changes}, code)
    exit_code, planned, packed = _verdicts(tmp_path, capsys, folder, {**SHIPPED, **settings})
    assert packed == planned
    assert exit_code == 1
    assert {(rule, message.split(":")[0]) for rule, _, message in planned} == expected


QUEUE_CASES = {
    "queues that work": ({}, set()),
    "every queue mistake": ({"gpu_covered": False, "local_queues": {"research": "research", "inference": "gone"}},
                            {("queue-covers-gpu", "research"), ("queue-covers-gpu", "inference"),
                             ("local-queue-target", "inference-queue"), ("gpu-pool-queued", "gpu-l4"),
                             ("gpu-pool-queued", "gpu-l40s")}),
    "quotas above capacity": (overcommitted(extra=2), {("queue-quota-within-capacity", "gpu-l4")}),
}
"""Case -> (changes to the queue program, (rule, resource) of each queue rule's violation expected)."""


@pytest.mark.parametrize("case", QUEUE_CASES)
def test_the_pack_in_its_own_process_reaches_the_queue_verdicts_of_gpuready_plan(tmp_path, capsys, case):
    changes, expected = QUEUE_CASES[case]
    folder = queue_project(tmp_path / "queues", stack="extra", **changes)
    exit_code, planned, packed = _verdicts(tmp_path, capsys, folder, SHIPPED)
    assert packed == planned
    queue_rules = {r.name for r in QUEUE_RULES}
    assert {(rule, message.split(":")[0]) for rule, _, message in planned if rule in queue_rules} == expected
