"""gpuready as users install it: the reference stacks ship as package data, with a project file that makes them
gpuready's own project wherever it is installed."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from gpuready.cli import main
from gpuready.project import SHIPPED_FILE, find_project
from tests.conftest import ROOT


def test_the_shipped_project_is_the_checkouts_seen_from_stacks():
    checkout = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    shipped = yaml.safe_load((ROOT / "stacks" / SHIPPED_FILE).read_text())
    assert (shipped["name"], shipped["description"]) == (checkout["name"], checkout["description"])
    assert shipped["runtime"] == checkout["runtime"]["name"]
    assert shipped["main"] == shipped["stackConfigDir"] == "."  # the program and the stack files are beside it


def test_plan_outside_any_project_plans_the_shipped_stacks(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    project = find_project()
    assert project.name == "gpuready" and project.main == project.stack_config_dir == (ROOT / "stacks").resolve()
    assert main(["plan", "--stack", "aws-batch", "--json", "--no-policies"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["stack_file"] == str((ROOT / "stacks" / "Pulumi.aws-batch.yaml").resolve())
    assert plan["capacity"]["max_gpus"] == 16


def test_without_the_shipped_stacks_plan_asks_for_a_project(tmp_path, monkeypatch, capsys):
    from gpuready import project

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(project, "SHIPPED_PACKAGE", "gpuready_stacks_not_installed")
    assert main(["plan", "--stack", "aws-batch"]) == 2
    assert "no Pulumi.yaml here or above: run from a Pulumi project, or give --program DIR" in capsys.readouterr().err


def test_version_is_pyprojects_from_the_installed_metadata(capsys):
    version = re.search(r'^version = "(.+)"$', (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out == f"gpuready {version}\n"
