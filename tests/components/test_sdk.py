"""A missing cloud SDK fails loudly with the pip install that fixes it."""

from __future__ import annotations

import sys

import pytest

from gpuready_components.sdk import MissingExtra, require


def test_missing_sdk_names_its_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pulumi_gcp", None)  # as if the gcp extra were not installed
    with pytest.raises(MissingExtra, match=r"pip install 'gpuready\[gcp\]'"):
        require("pulumi_gcp")


def test_present_sdk_is_returned():
    assert require("pulumi_aws").__name__ == "pulumi_aws"
