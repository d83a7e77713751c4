"""The documentation site builds with no broken link, and the README's links reach files that exist."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.conftest import ROOT


def test_mkdocs_builds_the_site_strictly(tmp_path):
    """``mkdocs build --strict``: every page in the nav, every link to a page and an anchor that exist."""
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "reference" / "checks" / "index.html").is_file()
    assert not list((tmp_path / "site").rglob("*.py")), "a generator script was published: exclude_docs"


def test_the_readmes_links_reach_files_of_the_checkout():
    readme = (ROOT / "README.md").read_text()
    links = [link for link in re.findall(r"\]\(([^)\s]+)\)", readme) if "://" not in link]
    assert any(link.startswith("docs/") for link in links)
    missing = [link for link in links if not (ROOT / link.split("#")[0]).exists()]
    assert not missing, f"README links to files that do not exist: {missing}"


def _pages(entry):
    """The pages of an mkdocs nav entry."""
    if isinstance(entry, str):
        yield entry
    elif isinstance(entry, dict):
        for value in entry.values():
            yield from _pages(value)
    else:
        for item in entry:
            yield from _pages(item)


def _nav() -> set[str]:
    import yaml

    return set(_pages(yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]))


def test_every_docs_page_is_in_the_readmes_table():
    """The README is the front door: each page of the site (the home page aside, which the README is) is linked."""
    linked = {link.split("#")[0].removeprefix("docs/")
              for link in re.findall(r"\]\((docs/[^)\s]+)\)", (ROOT / "README.md").read_text())}
    assert sorted(_nav() - linked - {"index.md"}) == []


def test_every_docs_page_is_in_the_nav():
    nav = _nav()
    found = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    assert found == nav, f"pages not in mkdocs.yml's nav: {sorted(found - nav)}; in the nav, missing: {sorted(nav - found)}"


def test_the_plan_excerpts_are_what_gpuready_plan_prints_now():
    """The README's and the plan page's excerpts of ``gpuready plan --stack aws-batch``: every line is in its output
    (``...`` marks lines left out), so the resource facts, prices and the rule count cannot go stale."""
    done = subprocess.run([sys.executable, "-m", "gpuready", "plan", "--stack", "aws-batch"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    printed = done.stdout.splitlines()
    for page in (ROOT / "README.md", ROOT / "docs" / "plan.md"):
        block = re.search(r"```\n(gpuready:aws:BatchGpuEnvironment .*?)```", page.read_text(), re.S)
        assert block, f"{page.name} has no plan excerpt"
        lines = [line for line in block.group(1).splitlines() if line not in ("", "...")]
        assert [line for line in lines if line not in printed] == [], \
            f"{page.name}'s plan excerpt is stale: paste an excerpt of `gpuready plan --stack aws-batch` again"
        assert any(line.startswith("Policies: ") for line in lines)
