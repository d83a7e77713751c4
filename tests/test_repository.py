"""The README contract: its commands are the ones CI and users run."""

from __future__ import annotations

import re

import yaml

from tests.conftest import ROOT


def _readme_commands() -> list[str]:
    return re.findall(r"```(?:bash|sh)\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)


def test_ci_runs_the_readme_test_command():
    test_command = next(block.strip() for block in _readme_commands() if "pytest" in block)
    assert test_command in (ROOT / ".ci" / "run").read_text()


def test_readme_has_the_plan_command_on_the_reference_stack():
    assert any("gpuready plan --stack aws-batch" in block and "pip install" in block for block in _readme_commands())


def test_pulumi_project_points_at_the_stacks():
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    assert project["name"] == "gpuready" and project["runtime"]["name"] == "python"
    assert project["main"] == "stacks/" and project["stackConfigDir"] == "stacks"
    assert (ROOT / "stacks" / "__main__.py").is_file()
