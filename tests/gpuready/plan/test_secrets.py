"""Pulumi secrets stay ``[secret]`` in everything ``gpuready plan`` prints or writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from gpuready.cli import main
from gpuready.plan.secrets import redact
from tests.conftest import ROOT

KUBE_TOKEN = "TOPSECRET-kube-token-1234"
CIPHERTEXT = "v1:CIPHERTEXTtag=="


def _outputs(tmp_path: Path, capsys, stack_file: Path, *extra: str) -> tuple[str, str, str]:
    """(human output, --json output, --junit file) of one stack file."""
    assert main(["plan", "--stack-file", str(stack_file), *extra]) == 0
    human = capsys.readouterr().out
    junit = tmp_path / "plan.xml"
    assert main(["plan", "--stack-file", str(stack_file), "--json", "--junit", str(junit), *extra]) == 0
    return human, capsys.readouterr().out, junit.read_text()


@pytest.fixture
def existing_eks(tmp_path: Path) -> Path:
    """The EKS reference stack on an existing cluster: its kubeconfig given in clear (offline, as a user may), one
    tag set with ``pulumi config set --secret --path`` (ciphertext in the file)."""
    data = yaml.safe_load((ROOT / "stacks" / "Pulumi.eks.yaml").read_text())
    config = data["config"]
    del config["gpuready:apiAllowedCidrs"]
    config["gpuready:existingCluster"] = "prod"
    config["gpuready:kubeconfig"] = f"apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    token: {KUBE_TOKEN}\n"
    config["gpuready:tags"]["team"] = {"secure": CIPHERTEXT}
    path = tmp_path / "Pulumi.existing.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_secret_kubeconfig_and_tag_never_printed(tmp_path, capsys, existing_eks):
    human, machine, junit = _outputs(tmp_path, capsys, existing_eks)
    for text in (human, machine, junit):
        assert KUBE_TOKEN not in text and "CIPHERTEXT" not in text
    assert "Secrets (shown as [secret]): output kubeconfig, tags.team of 14 resources, " in human
    assert ", kubeconfig of eks-k8s\n" in human
    plan = json.loads(machine)
    assert plan["outputs"]["kubeconfig"] == "[secret]"
    (provider,) = [r for r in plan["resources"] if r["type"] == "pulumi:providers:kubernetes"]
    assert provider["inputs"]["kubeconfig"] == "[secret]"
    for group in [r for r in plan["resources"] if r["type"] == "aws:eks/nodeGroup:NodeGroup"]:
        assert group["inputs"]["tags"]["team"] == "[secret]" and group["inputs"]["tags"]["cost-center"] == "gpu"


def _demo_project(tmp_path: Path, program: str, config: str) -> Path:
    """A Pulumi project ``demo`` running ``program``; its stack file holds ``config`` (YAML lines)."""
    (tmp_path / "Pulumi.yaml").write_text("name: demo\nruntime: python\n")
    (tmp_path / "__main__.py").write_text(program)
    stack = tmp_path / "Pulumi.dev.yaml"
    stack.write_text(f"config:\n  {config}\n")
    return stack


PROGRAM = '''
import pulumi
import pulumi_aws as aws

owner = pulumi.Config("demo").require_secret("owner")
aws.ec2.Vpc("net", cidr_block="10.0.0.0/16", tags={"owner": owner, "team": "ml"})
pulumi.export("owner", owner)
pulumi.export("region", "us-east-1")
'''


def test_secret_nested_in_a_map_is_masked_alone(tmp_path, capsys):
    stack = _demo_project(tmp_path, PROGRAM, "demo:owner: alice-owner-42")
    human, machine, junit = _outputs(tmp_path, capsys, stack, "--program", str(tmp_path))
    for text in (human, machine, junit):
        assert "alice-owner-42" not in text
    plan = json.loads(machine)
    (vpc,) = [r for r in plan["resources"] if r["type"] == "aws:ec2/vpc:Vpc"]
    assert vpc["inputs"]["tags"] == "[secret]"  # as the engine receives it: the map holding a secret is one
    assert plan["outputs"] == {"owner": "[secret]", "region": "us-east-1"}
    assert "Secrets (shown as [secret]): output owner, tags of net" in human


def test_redaction_replaces_whole_words_only():
    message = "net: tag owner is 'alice' (owners: alice, malice)"
    assert redact(message, {"alice"}) == "net: tag owner is '[secret]' (owners: [secret], malice)"
    assert redact({"k": ["x alice"], "alice": 1}, {"alice"}) == {"k": ["x [secret]"], "[secret]": 1}
    assert redact("nothing", set()) == "nothing"


def test_policy_message_quoting_a_secret_shows_it_as_secret(tmp_path, capsys):
    program = ("import pulumi\nimport pulumi_aws as aws\n\n"
               "device = pulumi.Config('demo').require_secret('device')\n"
               "aws.ec2.LaunchTemplate('lt', metadata_options={'http_tokens': 'required'},\n"
               "                       block_device_mappings=[{'device_name': device, 'ebs': {'volume_size': 10}}])\n")
    stack = _demo_project(tmp_path, program, "demo:device: /dev/xvd-hidden-7")
    junit = tmp_path / "plan.xml"
    assert main(["plan", "--stack-file", str(stack), "--program", str(tmp_path), "--junit", str(junit)]) == 1
    human = capsys.readouterr().out
    assert "[mandatory] launch-template-encrypted: lt: volumes [secret] are not encrypted" in human
    assert main(["plan", "--stack-file", str(stack), "--program", str(tmp_path), "--json"]) == 1
    machine = capsys.readouterr().out
    for text in (human, machine, junit.read_text()):
        assert "xvd-hidden-7" not in text and "volumes [secret] are not encrypted" in text


def test_encrypted_kubeconfig_plans_without_its_ciphertext(tmp_path, capsys, existing_eks):
    data = yaml.safe_load(existing_eks.read_text())
    data["config"]["gpuready:kubeconfig"] = {"secure": "v1:CIPHERTEXTkube=="}
    existing_eks.write_text(yaml.safe_dump(data))
    human, machine, junit = _outputs(tmp_path, capsys, existing_eks)
    for text in (human, machine, junit):
        assert "CIPHERTEXT" not in text
    assert json.loads(machine)["outputs"]["kubeconfig"] == "[secret]"
