"""`gpuready plan` runs the policy pack: violations grouped by resource, exit 1 on a mandatory one, JSON and JUnit for
CI, and any Pulumi Python program checked with its own stack config."""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET

from gpuready.cli import main
from tests.conftest import ROOT

PROGRAM = '''
import json
import pulumi
import pulumi_aws as aws

config = pulumi.Config()
role = aws.iam.Role("batch", assume_role_policy="{}")
aws.iam.RolePolicyAttachment("admin", role=role.name, policy_arn=config.get("policyArn"))
aws.ec2.LaunchTemplate("gpu", metadata_options={"http_tokens": config.get("httpTokens")})
'''


def _program(tmp_path, policy_arn: str, http_tokens: str):
    (tmp_path / "Pulumi.yaml").write_text("name: team-gpu\nruntime: python\n")
    (tmp_path / "__main__.py").write_text(textwrap.dedent(PROGRAM))
    (tmp_path / "Pulumi.dev.yaml").write_text(
        f"config:\n  aws:region: us-west-2\n  team-gpu:policyArn: {policy_arn}\n  team-gpu:httpTokens: {http_tokens}\n")
    return tmp_path


def test_own_program_with_violations_exits_1_and_groups_them_by_resource(tmp_path, capsys):
    program = _program(tmp_path, "arn:aws:iam::aws:policy/AdministratorAccess", "optional")
    assert main(["plan", "--program", str(program), "--stack", "dev"]) == 1
    out = capsys.readouterr().out
    assert "Policies: 19 rules, 2 mandatory and 0 advisory violations:" in out
    assert "  aws:iam/rolePolicyAttachment:RolePolicyAttachment admin\n    [mandatory] iam-no-administrator: admin: " \
           "AdministratorAccess attached. Fix: " in out
    assert "[mandatory] launch-template-imdsv2: gpu: instances accept IMDSv1" in out


def test_compliant_program_exits_0(tmp_path, capsys):
    program = _program(tmp_path, "arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess", "required")
    assert main(["plan", "--program", str(program), "--stack", "dev"]) == 0
    assert "Policies: 19 rules, no violations" in capsys.readouterr().out


def test_json_and_junit_for_ci(tmp_path, capsys):
    (tmp_path / "p").mkdir()
    program = _program(tmp_path / "p", "arn:aws:iam::aws:policy/AdministratorAccess", "required")
    junit = tmp_path / "policies.xml"
    assert main(["plan", "--program", str(program), "--stack", "dev", "--json", "--junit", str(junit)]) == 1
    plan = json.loads(capsys.readouterr().out)
    (violation,) = plan["policy"]["violations"]
    assert (violation["policy"], violation["level"], violation["resource"]) == ("iam-no-administrator", "mandatory",
                                                                               "admin")
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("tests") == "19" and suite.get("failures") == "1"
    failed = [c.get("name") for c in suite.iter("testcase") if c.find("failure") is not None]
    assert failed == ["iam-no-administrator"]


def test_policy_config_can_downgrade_a_rule_and_caps_fail_a_reference_stack(tmp_path, capsys):
    config = tmp_path / "policy.json"
    config.write_text(json.dumps({"gpu-capacity-caps": {"maxGpus": 8}}))
    assert main(["plan", "--stack", "aws-batch", "--policy-config", str(config)]) == 1
    assert "[mandatory] gpu-capacity-caps: stack: can run 16 GPUs at once" in capsys.readouterr().out
    config.write_text(json.dumps({"gpu-capacity-caps": {"enforcementLevel": "advisory", "maxGpus": 8}}))
    assert main(["plan", "--stack", "aws-batch", "--policy-config", str(config)]) == 0


def test_bad_policy_config_is_a_user_mistake(tmp_path, capsys):
    config = tmp_path / "policy.json"
    config.write_text(json.dumps({"gpu-caps": {}}))
    assert main(["plan", "--stack", "aws-batch", "--policy-config", str(config)]) == 2
    assert "no rule 'gpu-caps'" in capsys.readouterr().err


def test_no_policies_renders_only(capsys):
    assert main(["plan", "--stack", "aws-batch", "--no-policies"]) == 0
    assert "Policies:" not in capsys.readouterr().out
    assert (ROOT / "policies" / "policy-config.json").is_file()
