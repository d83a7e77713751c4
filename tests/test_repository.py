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
    renamed = {"components": "gpuready_components", "stacks": "gpuready_stacks", "platforms": "gpuready_platforms"}
    folders = {p.parent.relative_to(ROOT).parts for top in ("gpuready", *renamed)
               for p in (ROOT / top).rglob("__init__.py")}
    assert setuptools["package-dir"] == {name: folder for folder, name in renamed.items()}
    assert set(setuptools["packages"]) == {".".join((renamed.get(top, top), *rest)) for top, *rest in folders}


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


def _requirements() -> list[str]:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return project["dependencies"] + [r for extra in project["optional-dependencies"].values() for r in extra]


def _locked() -> dict[str, str]:
    from packaging.utils import canonicalize_name

    pins = re.findall(r"^([A-Za-z0-9_.-]+)==([^\s;]+)", (ROOT / "requirements" / "lock.txt").read_text(), flags=re.M)
    return {canonicalize_name(name): version for name, version in pins}


def test_the_lock_pins_every_dependency_within_its_range():
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    locked = _locked()
    for text in _requirements():
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in locked, f"{name} is not in requirements/lock.txt: refresh it (docs/getting-started.md, Dependencies)"
        assert requirement.specifier.contains(locked[name], prereleases=True), \
            f"the lock pins {name}=={locked[name]}, outside pyproject's {requirement.specifier}: refresh the lock"


def test_every_dependency_range_stops_before_the_next_major():
    from packaging.requirements import Requirement

    for text in _requirements():
        assert any(s.operator == "<" for s in Requirement(text).specifier), \
            f"{text}: give an upper bound, the next major the suite has not run on"


def test_ci_installs_from_the_lock_and_tests_the_oldest_pulumi():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "-c requirements/lock.txt" in ci and "pulumi==$floor" in ci


def test_ci_installs_the_wheel_as_users_install_tools_and_plans_from_an_empty_directory():
    ci = (ROOT / ".ci" / "run").read_text()
    assert ".venv/bin/python -m build --outdir" in ci  # the sdist, and the wheel built from it
    assert 'uv tool install -q -c "$lock" "gpuready[aws] @ file://$wheel"' in ci
    assert 'mkdir "$alone/empty" && cd "$alone/empty"' in ci and '"$gpuready" plan --stack aws-batch' in ci
    assert '"$gpuready" --version' in ci and 'eval "$command' in ci  # the missing extra's hint, run as it is given


def test_stack_programs_import_no_cli_module():
    """A stack program runs under the Pulumi engine with the components alone: the CLI (gpuready/) sits above it."""
    for path in sorted((ROOT / "stacks").glob("*.py")):
        found = re.findall(r"^\s*(?:from|import) gpuready(?:\.|\s)", path.read_text(), re.M)
        assert not found, f"{path.name} imports the CLI package: {found}"
