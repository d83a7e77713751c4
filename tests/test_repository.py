"""The README contract: its commands are the ones CI and users run."""

from __future__ import annotations

import re

import pytest
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


def test_every_package_folder_is_installed_under_its_import_name():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {str(p.parent.relative_to(ROOT)).replace("/", ".") for top in ("gpuready", "components")
               for p in (ROOT / top).rglob("__init__.py")}
    assert setuptools["package-dir"] == {"gpuready_components": "components"}
    assert set(setuptools["packages"]) == {f.replace("components", "gpuready_components", 1)
                                           if f.startswith("components") else f for f in folders}


def test_a_users_own_components_package_neither_shadows_nor_is_shadowed(tmp_path):
    import subprocess
    import sys

    (tmp_path / "components").mkdir()
    (tmp_path / "components" / "__init__.py").write_text("")
    (tmp_path / "components" / "network.py").write_text("VPC = 'mine'\n")
    program = ("from components.network import VPC\n"
               "from gpuready_components.batch_gpu import BatchGpuEnvironment\n"
               "print(VPC, BatchGpuEnvironment.__module__)\n")
    done = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["mine", "gpuready_components.batch_gpu.component"]
