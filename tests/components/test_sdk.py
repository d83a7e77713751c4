"""A missing cloud SDK fails loudly with the pip install that fixes it."""

from __future__ import annotations

import sys

import pytest

from gpuready_components import sdk
from gpuready_components.sdk import MissingExtra, require
from tests.conftest import ROOT


def test_missing_sdk_names_the_install_that_works_from_this_checkout(monkeypatch):
    monkeypatch.setitem(sys.modules, "pulumi_gcp", None)  # as if the gcp extra were not installed
    with pytest.raises(MissingExtra) as missing:
        require("pulumi_gcp")
    assert f"pip install -e '{ROOT.resolve()}[gcp]'" in str(missing.value)  # gpuready is not on PyPI


def test_an_installed_release_is_told_to_install_the_extra_from_the_index(monkeypatch, tmp_path):
    monkeypatch.setattr(sdk, "__file__", str(tmp_path / "site-packages" / "gpuready_components" / "sdk.py"))
    assert sdk.install_command("k8s") == "pip install 'gpuready[k8s]'"


def test_present_sdk_is_returned():
    assert require("pulumi_aws").__name__ == "pulumi_aws"
