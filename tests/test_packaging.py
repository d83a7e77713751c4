"""gpuready as users install it: ``python -m build`` makes an sdist and, from it, a wheel that carries the packages,
the reference stacks' program and stack files and a project file that makes them gpuready's own project wherever it
is installed. (.ci/run installs that wheel with ``uv tool install`` into a clean environment and plans from it: that
needs the package index, which this suite does without.)"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
import yaml

from gpuready.cli import main
from gpuready.project import SHIPPED_FILE, find_project
from tests.conftest import ROOT
from tests.stacks.test_golden_plans import STACKS as REFERENCE_STACKS


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


def _version() -> str:
    return re.search(r'^version = "(.+)"$', (ROOT / "pyproject.toml").read_text(), re.M).group(1)


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """The sdist and the wheel built from it, as ``python -m build`` makes them (offline: this environment's
    setuptools)."""
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def test_the_wheel_holds_the_packages_and_the_reference_stacks(dist):
    wheel = dist / f"gpuready-{_version()}-py3-none-any.whl"
    names = set(zipfile.ZipFile(wheel).namelist())
    info = f"gpuready-{_version()}.dist-info"
    renamed = {"gpuready": "gpuready", "components": "gpuready_components", "stacks": "gpuready_stacks",
               "platforms": "gpuready_platforms"}
    sources = {f"{renamed[p.relative_to(ROOT).parts[0]]}/{'/'.join(p.relative_to(ROOT).parts[1:])}"
               for top in renamed for p in (ROOT / top).rglob("*") if p.suffix in (".py", ".csv", ".json")}
    stack_files = {f"gpuready_stacks/Pulumi.{stack}.yaml" for stack in REFERENCE_STACKS}
    assert names - {n for n in names if n.startswith(info + "/")} == \
        sources | stack_files | {"gpuready_stacks/pulumi-project.yaml"}  # no tests, nothing else
    assert "gpuready = gpuready.cli:main" in zipfile.ZipFile(wheel).read(f"{info}/entry_points.txt").decode()


def test_the_sdist_carries_what_builds_the_wheel_and_no_tests(dist):
    with tarfile.open(dist / f"gpuready-{_version()}.tar.gz") as sdist:
        names = {n.split("/", 1)[1] for n in sdist.getnames() if "/" in n}
    assert {"pyproject.toml", "MANIFEST.in", "README.md", "CHANGELOG.md", "Pulumi.yaml", "requirements/lock.txt",
            "stacks/pulumi-project.yaml", "stacks/Pulumi.aws-batch.yaml", "components/catalog/gpu_instances.csv",
            "gpuready/cli.py"} <= names
    assert not [n for n in names if n.startswith(("tests/", "policies/", "bench/", ".ci/"))]


def test_the_stack_files_shipped_are_the_reference_stacks_by_name():
    """MANIFEST.in names the stack files the sdist and so the wheel carry, after excluding every other: the list is
    the reference stacks the golden tests plan, each a file of the checkout."""
    lines = [line.split() for line in (ROOT / "MANIFEST.in").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    named = [path for command, *paths in lines if command == "include" for path in paths
             if path.startswith("stacks/Pulumi.")]
    assert sorted(named) == sorted(f"stacks/Pulumi.{stack}.yaml" for stack in REFERENCE_STACKS)
    assert all((ROOT / path).is_file() for path in named)
    assert lines.index(["exclude", "stacks/Pulumi.*"]) < min(i for i, line in enumerate(lines) if line[0] == "include"
                                                             and line[1].startswith("stacks/Pulumi."))
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert setuptools["package-data"]["gpuready_stacks"] == ["pulumi-project.yaml"]  # no glob that packs more
    assert setuptools["include-package-data"] is True  # what brings the files MANIFEST.in names into the wheel


def test_a_users_own_stack_file_stays_out_of_the_sdist_and_the_wheel(tmp_path):
    """A copy of the source with a user's own ``stacks/Pulumi.private.yaml`` beside the reference stacks, and one
    that an earlier build's ``gpuready.egg-info/SOURCES.txt`` still names (setuptools reads that list again): the sdist
    and the wheel built from it carry the reference stack files and neither of the user's."""
    pytest.importorskip("build", reason="the build frontend (the test extra's `build`) is not installed")
    pytest.importorskip("setuptools", reason="the build backend, setuptools, is not installed")
    tree, out = tmp_path / "gpuready", tmp_path / "dist"
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "dist")
    for top in ("gpuready", "components", "stacks", "platforms", "requirements"):
        shutil.copytree(ROOT / top, tree / top, ignore=skip)
    for name in ("pyproject.toml", "MANIFEST.in", "README.md", "CHANGELOG.md", "Pulumi.yaml"):
        shutil.copy(ROOT / name, tree / name)
    private = "config:\n  aws:region: us-east-1\n  gpuready:adminCidr: 203.0.113.7/32\n  gpuready:token:\n" \
              "    secure: v1:abcdef\n"
    for name in ("private", "earlier"):
        (tree / "stacks" / f"Pulumi.{name}.yaml").write_text(private)
    (tree / "gpuready.egg-info").mkdir()
    (tree / "gpuready.egg-info" / "SOURCES.txt").write_text("pyproject.toml\nstacks/Pulumi.earlier.yaml\n")
    done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(tree)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with tarfile.open(out / f"gpuready-{_version()}.tar.gz") as sdist:
        in_sdist = {n.split("/", 1)[1] for n in sdist.getnames() if n.count("/") == 2 and "/stacks/Pulumi." in n}
    in_wheel = {n for n in zipfile.ZipFile(out / f"gpuready-{_version()}-py3-none-any.whl").namelist()
                if n.startswith("gpuready_stacks/Pulumi.")}
    assert in_sdist == {f"stacks/Pulumi.{stack}.yaml" for stack in REFERENCE_STACKS}
    assert in_wheel == {f"gpuready_stacks/Pulumi.{stack}.yaml" for stack in REFERENCE_STACKS}


def test_the_unpacked_wheel_alone_plans_aws_batch_outside_any_project(dist, tmp_path):
    """gpuready and its stacks from the wheel only (its dependencies from this environment), in a directory with no
    Pulumi.yaml: the program, the stack file and the catalog all come from the wheel."""
    site, empty = tmp_path / "site", tmp_path / "empty"
    zipfile.ZipFile(dist / f"gpuready-{_version()}-py3-none-any.whl").extractall(site)
    empty.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site)}  # before the editable install's finder, which runs after sys.path
    done = subprocess.run([sys.executable, "-m", "gpuready", "plan", "--stack", "aws-batch", "--json"], cwd=empty,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    plan = json.loads(done.stdout)
    assert plan["stack_file"] == str(site / "gpuready_stacks" / "Pulumi.aws-batch.yaml")
    assert plan["capacity"]["max_gpus"] == 16 and plan["policy"]["violations"] == []
