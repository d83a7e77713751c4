"""The CrossGuard pack in policies/: a Python policy pack whose entry point only builds the pack from the rules."""

from __future__ import annotations

import ast
import re

import yaml
from pulumi_policy import ResourceValidationPolicy, StackValidationPolicy

from gpuready.policy import RULES
from tests.conftest import ROOT

PACK = ROOT / "policies"


def test_pack_is_a_python_policy_pack_with_its_requirements():
    manifest = yaml.safe_load((PACK / "PulumiPolicy.yaml").read_text())
    assert manifest["runtime"]["name"] == "python" and manifest["description"]
    requirements = (PACK / "requirements.txt").read_text()
    assert "pulumi-policy" in requirements and "-e .." in requirements


def test_entry_point_only_builds_the_pack_from_the_rule_collection():
    tree = ast.parse((PACK / "__main__.py").read_text())
    statements = [n for n in tree.body if not isinstance(n, ast.Expr) or not isinstance(n.value, ast.Constant)]
    imports = [n for n in statements if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert {(n.module, tuple(a.name for a in n.names)) for n in imports} == {
        ("pulumi_policy", ("PolicyPack",)), ("gpuready.policy", ("RULES",))}
    (call,) = [n for n in statements if not isinstance(n, (ast.Import, ast.ImportFrom))]
    assert isinstance(call.value, ast.Call) and call.value.func.id == "PolicyPack"
    assert {k.arg: getattr(k.value, "id", getattr(k.value, "value", None)) for k in call.value.keywords} == {
        "name": "gpuready", "policies": "RULES"}


def test_rules_have_unique_kebab_names_descriptions_and_levels():
    names = [r.name for r in RULES]
    assert len(names) == len(set(names)) == len(RULES)
    for rule in RULES:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rule.name)
        assert isinstance(rule, (ResourceValidationPolicy, StackValidationPolicy))
        assert len(rule.description) > 30 and rule.enforcement_level.value in ("mandatory", "advisory")


def test_the_policy_rule_reference_documents_every_rule_with_its_level():
    readme = (ROOT / "docs" / "reference" / "policy-rules.md").read_text()
    for rule in RULES:
        assert f"| `{rule.name}` | {rule.enforcement_level.value} |" in readme, rule.name


def test_the_rules_import_no_cloud_sdk():
    """The pack's venv installs gpuready's core only (requirements.txt): the rules must not need the clouds' SDKs."""
    import subprocess
    import sys

    code = ("import sys\nfrom gpuready.policy import RULES\n"
            "print(sorted(m for m in ('pulumi_aws', 'pulumi_gcp', 'pulumi_azure_native', 'pulumi_kubernetes', "
            "'boto3', 'botocore') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
