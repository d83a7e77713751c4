"""The generated reference pages (``docs/gen_reference.py``) are what the code gives now."""

from __future__ import annotations

import importlib.util

import pytest

from tests.conftest import ROOT


def _generator():
    spec = importlib.util.spec_from_file_location("gen_reference", ROOT / "docs" / "gen_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GENERATOR = _generator()
PAGES = GENERATOR.pages()


@pytest.mark.parametrize("name", sorted(PAGES))
def test_the_checked_in_page_is_what_the_code_generates(name):
    page = ROOT / "docs" / name
    assert page.is_file() and page.read_text() == PAGES[name], \
        f"docs/{name} is out of date: run {GENERATOR.COMMAND}"


def test_every_platform_setting_policy_rule_command_and_check_is_in_its_page():
    from gpuready.cli import _parser
    from gpuready.policy import RULES
    from gpuready.probe.checks import CHECKS

    for platform, module in GENERATOR.stack_modules().items():
        assert f"## `{platform}`" in PAGES["reference/configuration.md"]
        assert all(f"| `gpuready:{s.key}` |" in PAGES["reference/configuration.md"] for s in module.SETTINGS)
    assert all(f"| `{r.name}` | {r.enforcement_level.value} |" in PAGES["reference/policy-rules.md"] for r in RULES)
    assert f"{len(RULES)} rules" in PAGES["reference/policy-rules.md"]
    commands = next(a for a in _parser()._actions if a.dest == "command").choices
    assert all(f"`gpuready {name}`" in PAGES["reference/cli.md"] for name in commands)
    assert all(f"`{name}`" in PAGES["reference/checks.md"] for row in CHECKS for name in row.names)
