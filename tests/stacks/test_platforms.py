"""Every reference stack: one per platform, each renders offline, and each config key is documented."""

from __future__ import annotations

import re

import pytest

from gpuready_components import platforms
from gpuready_stacks.readme import MARKERS, tables
from tests.conftest import ROOT


PLATFORMS = [p.name for p in platforms.every()]


def test_platforms_have_a_reference_stack_each():
    assert PLATFORMS == ["aks", "aws-batch", "eks", "gke"]  # the entry points, by name
    for platform in PLATFORMS:
        text = (ROOT / "stacks" / f"Pulumi.{platform}.yaml").read_text()
        assert f"gpuready:platform: {platform}" in text


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_the_readme_section_of_each_platform_holds_the_settings_table_its_declarations_generate(platform):
    """Regenerate with ``python -m gpuready_stacks.readme`` after changing a setting."""
    readme = (ROOT / "README.md").read_text()
    match = re.search(rf"^### `{re.escape(platform)}`.*?(?=^### |\Z)", readme, re.S | re.M)
    assert match, f"README has no '### `{platform}`' section"
    found = {m.group(2): m.group(3) for m in MARKERS.finditer(match.group(0))}
    assert found == {platform: tables()[platform]}, "README out of date: run python -m gpuready_stacks.readme"
    descriptor = platforms.require(platform)
    settings = descriptor.stack().SETTINGS
    assert all(f"| `gpuready:{s.key}` |" in found[platform] for s in settings)


def test_every_platform_names_its_extras():
    readme = (ROOT / "README.md").read_text()
    for platform in platforms.every():
        assert f".[{platform.extra}]" in readme or f"`{platform.extra}`" in readme, platform.name
