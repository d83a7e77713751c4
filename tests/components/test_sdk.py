"""A missing cloud SDK fails loudly with a command that installs it into the gpuready that runs, from where that
gpuready came (a checkout, a wheel, a pipx or uv tool environment)."""

from __future__ import annotations

import importlib.metadata
import json
import sys
from pathlib import Path

import pytest

from gpuready_components import sdk
from gpuready_components.sdk import MissingExtra, require
from tests.conftest import ROOT

WHEEL = "file:///home/me/dist/gpuready-0.1.0-py3-none-any.whl"
METADATA = """Metadata-Version: 2.4
Name: gpuready
Version: 0.1.0
Requires-Dist: pulumi<4,>=3.260
Provides-Extra: aws
Requires-Dist: pulumi-aws<8,>=7; extra == "aws"
Requires-Dist: boto3<2,>=1.34; extra == "aws"
Provides-Extra: gcp
Requires-Dist: pulumi-gcp-that-is-not-installed<11,>=10; extra == "gcp"
"""
"""gpuready's metadata as a wheel install has it, with an 'aws' extra whose SDKs are installed here and a 'gcp' extra
whose SDK is not."""


def _installed(monkeypatch, tmp_path: Path, direct_url: dict | None, installer: str = "pip", tool: str = "") -> Path:
    """gpuready installed into the environment ``tmp_path/env`` (made by ``tool``: pipx, uv or none) by ``installer``,
    from ``direct_url`` (PEP 610; ``None``: from a package index)."""
    env = tmp_path / "env"
    info = env / "lib" / "site-packages" / "gpuready-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(METADATA)
    (info / "INSTALLER").write_text(installer + "\n")
    if direct_url is not None:
        (info / "direct_url.json").write_text(json.dumps(direct_url))
    if tool == "pipx":
        (env / "pipx_metadata.json").write_text(json.dumps({"main_package": {"package": "gpuready", "suffix": ""}}))
    elif tool == "uv":
        (env / "uv-receipt.toml").write_text('[tool]\nrequirements = [{ name = "gpuready" }]\n')
    monkeypatch.setattr(sdk, "installed", lambda: importlib.metadata.PathDistribution(info))
    monkeypatch.setattr(sys, "prefix", str(env))
    return env


def test_missing_sdk_names_the_install_that_works_from_this_checkout(monkeypatch):
    monkeypatch.setitem(sys.modules, "pulumi_gcp", None)  # as if the gcp extra were not installed
    with pytest.raises(MissingExtra) as missing:
        require("pulumi_gcp")
    assert missing.value.name == "pulumi_gcp"
    # gpuready is not on PyPI; the lock's pins kept, as the README's install keeps them
    assert f"pip install -c {ROOT.resolve() / 'requirements' / 'lock.txt'} -e '{ROOT.resolve()}[" in str(missing.value)


def test_the_checkout_hint_keeps_the_locks_pins_and_every_installed_extra(monkeypatch, tmp_path):
    """Followed, the command may not move a dependency past an installed SDK's bound (python-dateutil past
    botocore's): pip resolves only the extras named, so all installed ones are named, under the checkout's lock."""
    checkout = tmp_path / "my gpuready"
    (checkout / "requirements").mkdir(parents=True)
    (checkout / "requirements" / "lock.txt").write_text((ROOT / "requirements" / "lock.txt").read_text())
    _installed(monkeypatch, tmp_path, {"url": checkout.as_uri(), "dir_info": {"editable": True}})
    assert sdk.install_command("gcp,k8s") == \
        f"pip install -c '{checkout / 'requirements' / 'lock.txt'}' -e '{checkout}[aws,gcp,k8s]'"
    (checkout / "requirements" / "lock.txt").unlink()  # a source tree without the lock: nothing to pin to
    assert sdk.install_command("gcp,k8s") == f"pip install -e '{checkout}[aws,gcp,k8s]'"


def test_the_locks_pins_hold_botocores_own_bound_on_python_dateutil():
    """The pins the hint keeps are ones botocore (as installed) accepts."""
    import re

    from packaging.specifiers import SpecifierSet

    pins = dict(re.findall(r"(?m)^([A-Za-z0-9_.-]+)==([^\s;\\]+)", (ROOT / "requirements" / "lock.txt").read_text()))
    (bound,) = [SpecifierSet(re.sub(r"^python-dateutil\s*|[()]|;.*$", "", r).strip())
                for r in importlib.metadata.requires("botocore") if r.startswith("python-dateutil")]
    assert pins["botocore"] == importlib.metadata.version("botocore")
    assert pins["python-dateutil"] in bound and "4.0.0" not in bound


def test_the_installed_distribution_wins_over_a_source_trees_build_metadata(monkeypatch, tmp_path):
    (tmp_path / "gpuready.egg-info").mkdir()  # what `pip install -e .` or `python -m build` leave in a checkout
    (tmp_path / "gpuready.egg-info" / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: gpuready\nVersion: 9.9\n")
    monkeypatch.syspath_prepend(str(tmp_path))  # as when Python runs from the checkout: found first
    assert [d.version for d in importlib.metadata.distributions(name="gpuready")][0] == "9.9"
    assert sdk.installed().read_text("INSTALLER") and sdk.installed().version != "9.9"


def test_a_wheel_installed_with_pip_is_told_to_install_the_extra_from_that_wheel(monkeypatch, tmp_path):
    _installed(monkeypatch, tmp_path, {"url": WHEEL, "archive_info": {"hashes": {"sha256": "00"}}})
    # aws's SDKs are installed: named too, so that pip resolves their bounds with gcp's and k8s's
    assert sdk.install_command("gcp,k8s") == f"pip install 'gpuready[aws,gcp,k8s] @ {WHEEL}'"


def test_an_environment_uv_pip_made_is_told_uv_pip_install(monkeypatch, tmp_path):
    _installed(monkeypatch, tmp_path, {"url": WHEEL, "archive_info": {}}, installer="uv")
    assert sdk.install_command("gcp") == f"uv pip install 'gpuready[aws,gcp] @ {WHEEL}'"


@pytest.mark.parametrize("tool, command", [("pipx", "pipx install --force"), ("uv", "uv tool install --force")])
def test_a_tool_install_is_reinstalled_by_its_tool_keeping_the_extras_it_has(monkeypatch, tmp_path, tool, command):
    _installed(monkeypatch, tmp_path, {"url": WHEEL, "archive_info": {}}, installer="uv", tool=tool)
    # aws's SDKs are installed, gcp's is not: the reinstall keeps aws and adds what is asked for
    assert sdk.install_command("gcp,k8s") == f"{command} 'gpuready[aws,gcp,k8s] @ {WHEEL}'"


def test_a_pipx_install_with_a_suffix_is_reinstalled_under_it(monkeypatch, tmp_path):
    env = _installed(monkeypatch, tmp_path, {"url": WHEEL, "archive_info": {}}, tool="pipx")
    (env / "pipx_metadata.json").write_text(json.dumps({"main_package": {"suffix": "@next"}}))
    assert sdk.install_command("aws") == f"pipx install --force --suffix=@next 'gpuready[aws] @ {WHEEL}'"


def test_an_editable_tool_install_stays_editable(monkeypatch, tmp_path):
    _installed(monkeypatch, tmp_path, {"url": "file:///src/my%20gpuready", "dir_info": {"editable": True}}, tool="uv")
    assert sdk.install_command("k8s") == "uv tool install --force -e '/src/my gpuready[aws,k8s]'"


def test_a_repository_install_names_the_commit_it_came_from(monkeypatch, tmp_path):
    _installed(monkeypatch, tmp_path, {"url": "https://example.com/gpuready.git", "subdirectory": "py",
                                       "vcs_info": {"vcs": "git", "commit_id": "0123abc", "requested_revision": "v1"}})
    assert sdk.install_command("gcp") == \
        "pip install 'gpuready[aws,gcp] @ git+https://example.com/gpuready.git@0123abc#subdirectory=py'"


def test_a_release_from_an_index_is_told_to_install_the_extra_from_the_index(monkeypatch, tmp_path):
    _installed(monkeypatch, tmp_path, None)
    assert sdk.install_command("k8s") == "pip install 'gpuready[aws,k8s]'"


def test_the_platform_names_one_command_for_all_it_needs(monkeypatch, capsys):
    import dataclasses

    from gpuready.cli import main
    from gpuready_components import platforms

    eks = platforms.require("eks")

    def without_kubernetes():  # the stack module may be imported already
        require("pulumi_kubernetes")
        return eks.stack()

    monkeypatch.setitem(sys.modules, "pulumi_kubernetes", None)  # as if only the aws extra were installed
    platforms.unregister("eks")
    platforms.register(dataclasses.replace(eks, stack=without_kubernetes))
    try:
        assert main(["plan", "--stack", "eks", "--no-policies"]) == 2
    finally:
        platforms.unregister("eks")
        platforms.register(eks)
    err = capsys.readouterr().err
    assert err.startswith("gpuready: plan: pulumi_kubernetes is not installed: the eks platform needs "
                          f"gpuready[aws,k8s]: pip install -c {ROOT.resolve() / 'requirements' / 'lock.txt'} -e "
                          f"'{ROOT.resolve()}[")  # and every extra installed here
    assert err.count("pip install") == 1


def test_present_sdk_is_returned():
    assert require("pulumi_aws").__name__ == "pulumi_aws"
