"""Every reference stack: one per platform, each renders offline, and each config key is documented."""

from __future__ import annotations

import importlib
import re

import pytest

from stacks import PLATFORMS
from tests.conftest import ROOT


def test_platforms_have_a_reference_stack_each():
    assert set(PLATFORMS) == {"aws-batch", "eks", "gke", "aks"}
    for platform in PLATFORMS:
        text = (ROOT / "stacks" / f"Pulumi.{platform}.yaml").read_text()
        assert f"gpuready:platform: {platform}" in text


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_every_config_key_is_documented_in_the_readme_section_of_its_platform(platform):
    readme = (ROOT / "README.md").read_text()
    match = re.search(rf"^### `{re.escape(platform)}`.*?(?=^### |\Z)", readme, re.S | re.M)
    assert match, f"README has no '### `{platform}`' section"
    for key in importlib.import_module(PLATFORMS[platform]).KEYS:
        assert f"`gpuready:{key}`" in match.group(0), key


def test_every_platform_names_its_extras():
    from stacks import EXTRAS

    assert set(EXTRAS) == set(PLATFORMS)
    readme = (ROOT / "README.md").read_text()
    for platform, extras in EXTRAS.items():
        assert f".[{extras}]" in readme or f"`{extras}`" in readme, platform
