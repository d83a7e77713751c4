"""Every reference stack: one per platform, each renders offline. Each config key is documented in the generated
configuration reference (tests/docs/test_reference.py)."""

from __future__ import annotations

from gpuready_components import platforms
from tests.conftest import ROOT


PLATFORMS = [p.name for p in platforms.every()]


def test_platforms_have_a_reference_stack_each():
    assert PLATFORMS == ["aks", "aws-batch", "eks", "gke"]  # the entry points, by name
    for platform in PLATFORMS:
        text = (ROOT / "stacks" / f"Pulumi.{platform}.yaml").read_text()
        assert f"gpuready:platform: {platform}" in text


def test_every_platform_names_its_extras():
    readme = (ROOT / "README.md").read_text()
    for platform in platforms.every():
        assert f".[{platform.extra}]" in readme or f"`{platform.extra}`" in readme, platform.name
