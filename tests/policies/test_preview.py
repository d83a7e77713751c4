"""The pack under a first ``pulumi preview``: pulumi_policy's own analyzer server, fed the protobuf requests the engine
sends, where every output the cloud has not computed yet (ids, ARNs, and every input built from one) is the engine's
unknown sentinel. The rules must reach the verdicts they reach on known values: no violation claimed from an unknown,
no rule skipped because of an unknown it does not need, and what truly cannot be known reported as undecided.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Optional

import pytest
from pulumi.output import Unknown
from pulumi.runtime.proto import analyzer_pb2
from pulumi_policy import EnforcementLevel
from pulumi_policy.policy import _PolicyAnalyzerServicer

from tests.conftest import ROOT
from tests.gpuready.policy.helpers import break_resource, render_stack, set_prop
from tests.policies import engine
from tests.policies.engine import Resource
from tests.stacks.test_extra_types import FOUR_GPU_TEAMS, G9

SHIPPED = json.loads((ROOT / "policies" / "policy-config.json").read_text())
CANT_RUN = "during preview"
"""In the message the server gives a rule that raised UnknownValueError ("can't run policy ... during preview")."""


def analyze(resources: list[Resource], config: Optional[dict] = None) -> list[analyzer_pb2.AnalyzeDiagnostic]:
    """Every diagnostic pulumi_policy's own server returns for ``resources`` (:func:`engine.analyze`)."""
    return engine.analyze(engine.in_process(), resources, config)


def _violations(diagnostics) -> set[tuple[str, int, str]]:
    """(rule, level, urn or message's resource) of every violation; a rule the server could not run is no
    violation."""
    return {(d.policyName, d.enforcementLevel, d.urn or d.message.split("\n")[-1].split(":")[0])
            for d in diagnostics if CANT_RUN not in d.message}


def _undecided(diagnostics) -> list[str]:
    return [d.message for d in diagnostics if CANT_RUN in d.message]


def _unknown_paths(value: Any, path: str = "") -> list[str]:
    if isinstance(value, Unknown):
        return [path]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _unknown_paths(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _unknown_paths(v, f"{path}[{i}]")]
    return []


def _append_cpu_type(props):
    import pulumi

    resources = props["compute_resources"]
    set_prop(props, "compute_resources.instance_types", [*pulumi.get(resources, "instance_types"), "m6i.large"])


DECLARED = {"gpuready:instanceTypes": ["g9.xlarge"], "gpuready:extraInstanceTypes": [G9]}
"""A type newer than the catalog, declared by the stack: its facts are stamped on the pools, known in a preview."""
CASES = {
    "aws-batch": ("aws-batch", (), {}),
    "eks": ("eks", (), {}),
    "gke": ("gke", (), {}),
    "aks": ("aks", (), {}),
    "batch-cpu-in-gpu-queue": ("aws-batch", (break_resource("aws:batch/computeEnvironment:ComputeEnvironment",
                                                            _append_cpu_type),), {}),
    "batch-over-caps": ("aws-batch", (), {"gpu-capacity-caps": {"maxGpus": 8, "maxUsdPerHour": 10}}),
    "eks-untainted": ("eks", (break_resource("aws:eks/nodeGroup:NodeGroup", lambda p: set_prop(p, "taints", []),
                                             name="eks-gpu"),), {}),
    "eks-warm-and-small-disk": ("eks", (), {"gpuready:minSize": 1, "gpuready:rootVolumeGiB": 50}),
    "eks-over-caps": ("eks", (), {"gpu-capacity-caps": {"maxGpus": 1}}),
    "batch-declared-type-warm": ("aws-batch", (), {**DECLARED, "gpuready:minVcpus": 4}),
    "eks-declared-type-over-caps": ("eks", (), {**DECLARED, **FOUR_GPU_TEAMS, "gpu-capacity-caps": {"maxGpus": 1}}),
}


@pytest.mark.parametrize("case", CASES)
def test_a_preview_reaches_the_verdicts_of_known_values(case):
    stack, transformations, changes = CASES[case]
    policy = {**SHIPPED, **{k: v for k, v in changes.items() if not k.startswith("gpuready:")}}
    config = {k: v for k, v in changes.items() if k.startswith("gpuready:")}
    known = render_stack(stack, *transformations, **config)
    preview = render_stack(stack, *transformations, preview=True, **config)
    assert any(_unknown_paths(r.inputs) for r in preview.resources)  # the engine's unknowns are there
    expected = analyze(engine.from_rendering(known), policy)
    found = analyze(engine.from_rendering(preview), policy)
    assert _undecided(expected) == _undecided(found) == []
    assert _violations(found) == _violations(expected)
    assert (_violations(found) == set()) == (case in ("aws-batch", "eks", "gke", "aks"))
    assert sorted(d.message for d in found) == sorted(d.message for d in expected)


def test_the_values_rules_do_not_need_are_unknown_in_a_preview():
    """Inputs built from other resources' outputs that the rules step over: if these were known the preview test
    above would prove nothing."""
    batch = render_stack("aws-batch", preview=True)
    unknown = {(r.name, p) for r in batch.resources for p in _unknown_paths(r.inputs)}
    assert ("gpu-gpu", ".computeEnvironmentOrders[0].computeEnvironment") in unknown
    assert ("gpu-gpu-on-demand", ".computeResources.instanceRole") in unknown
    assert not {p for n, p in unknown if n == "gpu-gpu-smoke"}  # the job role's ARN is built from its known name
    assert ("gpu-gpu-on-demand", ".computeResources.launchTemplate.launchTemplateId") in unknown
    eks = render_stack("eks", preview=True)
    unknown = {(r.name, p) for r in eks.resources for p in _unknown_paths(r.inputs)}
    assert {("eks-gpu", ".launchTemplate.id"), ("eks-gpu", ".nodeRoleArn"), ("eks", ".roleArn")} <= unknown


CE = "aws:batch/computeEnvironment:ComputeEnvironment"
JOB = "aws:batch/jobDefinition:JobDefinition"
U = Unknown()


def _only(rule: str, **settings) -> dict:
    """A policy config that runs ``rule`` alone, mandatory."""
    return {"all": "disabled", rule: {"enforcementLevel": "mandatory", **settings}}


def _environment(name: str, types, max_vcpus=64) -> Resource:
    return Resource(CE, name, {"serviceRole": U, "computeResources": {
        "instanceTypes": types, "maxVcpus": max_vcpus, "minVcpus": 0, "subnets": [U], "instanceRole": U,
        "ec2Configurations": [{"imageType": "ECS_AL2_NVIDIA"}]}})


def _job(name: str, gpus: int) -> Resource:
    return Resource(JOB, name, {"type": "container", "containerProperties": json.dumps({"resourceRequirements": [
        {"type": "GPU", "value": str(gpus)}, {"type": "VCPU", "value": "4"}, {"type": "MEMORY", "value": "8192"}]})})


def test_a_value_a_rule_needs_unknown_is_undecided_never_a_violation():
    jobs = [_job("fits", 1), _job("too-big", 8), Resource(JOB, "computed", {"containerProperties": U})]
    diagnostics = analyze([_environment("known", ["g6.xlarge"]), *jobs], _only("gpu-job-fits"))
    assert _violations(diagnostics) == {("gpu-job-fits", analyzer_pb2.MANDATORY, "urn:pulumi:test::gpuready::"
                                                                                 f"{JOB}::too-big")}
    (undecided,) = _undecided(diagnostics)
    assert "can't run policy 'gpu-job-fits'" in undecided and "computed: string value at .containerProperties" \
        in undecided
    # An environment whose instance types are unknown may hold the job: undecided, not a violation.
    diagnostics = analyze([_environment("known", ["g6.xlarge"]), _environment("computed", U), _job("too-big", 8)],
                          _only("gpu-job-fits"))
    assert _violations(diagnostics) == set()
    (undecided,) = _undecided(diagnostics)
    assert "too-big: computed: string value at .computeResources.instanceTypes" in undecided


def test_caps_decide_from_the_known_capacity_when_some_is_unknown():
    pools = [_environment("known", ["g6.12xlarge"], max_vcpus=96), _environment("computed", ["g6.xlarge"], U)]
    (over,) = analyze(pools, _only("gpu-capacity-caps", maxGpus=4))
    assert over.enforcementLevel == analyzer_pb2.MANDATORY
    assert "stack: can run at least 8 GPUs at once, more than the cap of 4." in over.message
    under = analyze(pools, _only("gpu-capacity-caps", maxGpus=16))
    assert _violations(under) == set()
    (undecided,) = _undecided(under)
    assert "computed: string value at .computeResources.maxVcpus can't be known during preview" in undecided


def test_iam_rules_with_unknown_arns_and_documents():
    role = "aws:iam/role:Role"
    attachment = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
    everything = json.dumps({"Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]})
    resources = [
        Resource(attachment, "custom", {"role": U, "policyArn": U}),
        Resource(role, "admin", {"name": U, "managedPolicyArns": [U, "arn:aws:iam::aws:policy/AdministratorAccess"],
                                 "inlinePolicies": [{"name": "computed", "policy": U},
                                                    {"name": "all", "policy": everything}]}),
        Resource(attachment, "read-only", {"role": U, "policyArn": "arn:aws:iam::aws:policy/ReadOnlyAccess"}),
        Resource("gcp:projects/iAMMember:IAMMember", "member", {"member": U, "role": "roles/viewer", "project": "p"}),
    ]
    diagnostics = analyze(resources, {"all": "disabled", "iam-no-administrator": "mandatory",
                                      "iam-no-wildcard-actions": "mandatory"})
    assert {(rule, name.rsplit("::", 1)[-1]) for rule, _, name in _violations(diagnostics)} == {
        ("iam-no-administrator", "admin"), ("iam-no-wildcard-actions", "admin")}
    undecided = _undecided(diagnostics)
    assert any("'iam-no-administrator'" in m and "custom: string value at .policyArn" in m for m in undecided)
    assert any("'iam-no-wildcard-actions'" in m and "admin: string value at .inlinePolicies.0.policy" in m
               for m in undecided)
    assert not [m for m in undecided if "read-only" in m or "member" in m]


@pytest.mark.parametrize("stack", ["aws-batch", "eks"])
def test_gpuready_plan_hands_the_rules_what_the_engine_does(stack):
    """``gpuready plan`` runs the rules offline on props made by :func:`as_engine_sends`: the same values, unknowns
    and number types as the analyzer server hands a rule."""
    from pulumi_policy import ResourceValidationPolicy
    from pulumi_policy.deserialize import serialize_properties

    from gpuready.policy.unknown import UnknownValueError, as_engine_sends

    seen = {}
    server = _PolicyAnalyzerServicer("capture", "0.0.1", [ResourceValidationPolicy(
        "capture", "Keeps the properties it is given.",
        lambda args, report: seen.__setitem__(args.urn, (type(args.props), serialize_properties(args.props))))],
        EnforcementLevel.ADVISORY)
    rendering = render_stack(stack, preview=True)
    for r in rendering.resources:
        server.Analyze(analyzer_pb2.AnalyzeRequest(type=r.type, properties=engine.struct(r.inputs), urn=r.urn,
                                                   name=r.name), None)
        offline = as_engine_sends(r.inputs)
        assert (type(offline), serialize_properties(offline)) == seen[r.urn], r.name
    (pool,) = [r for r in rendering.resources if r.name in ("gpu-gpu", "eks-gpu")
               and r.type in ("aws:batch/jobQueue:JobQueue", "aws:eks/nodeGroup:NodeGroup")]
    with pytest.raises(UnknownValueError) as raised:  # reading every value, as the caps rule's dict(props) did
        json.dumps(as_engine_sends(pool.inputs), default=lambda o: dict(o) if isinstance(o, Mapping) else list(o))
    assert raised.value.message.endswith("can't be known during preview")
