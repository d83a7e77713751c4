"""The readiness-check table (:mod:`gpuready.probe.checks`) against the checks the probe's modules really make."""

from __future__ import annotations

import ast
from fnmatch import fnmatch
from pathlib import Path

from gpuready.probe import checks, core

SOURCES = [Path(core.__file__).with_name(f"{m}.py") for m in ("core", "burn", "nccl")]


def _patterns(node: ast.AST) -> set[str]:
    """The names an expression can make, a formatted value as ``*`` (``f"{label}.xid"`` -> ``*.xid``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.JoinedStr):
        return {"".join(v.value if isinstance(v, ast.Constant) else "*" for v in node.values)}
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return {a + b for a in _patterns(node.left) for b in _patterns(node.right)}
    if isinstance(node, ast.IfExp):
        return _patterns(node.body) | _patterns(node.orelse)
    return {"*"}


def _made() -> tuple[set[str], set[str]]:
    """The names the modules pass to ``check``/``_figure``, and every string or f-string they hold."""
    made, texts = set(), set()
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Constant, ast.JoinedStr)):
                texts |= _patterns(node)
            if isinstance(node, ast.Call) and node.args:
                name = getattr(node.func, "id", getattr(node.func, "attr", None))
                if name in ("check", "_figure"):
                    made |= _patterns(node.args[0])
    return made, texts


DOCUMENTED = [name for row in checks.CHECKS for name in row.names]


def test_every_check_the_probe_makes_is_described():
    made, _ = _made()
    specific = {p for p in made if p.strip("*.")}  # a name held in a variable tells nothing
    missing = sorted(p for p in specific if not any(fnmatch(name, p) for name in DOCUMENTED))
    assert not missing, f"checks with no row in gpuready/probe/checks.py: {missing}"


def test_every_described_check_is_still_made():
    made, texts = _made()
    texts = {t.removeprefix("*.") for t in texts if len(t.replace("*", "")) >= 4}  # a per-GPU name's own part

    def found(name: str) -> bool:
        return (any(fnmatch(name, p) for p in made if p.strip("*."))
                or any(fnmatch(name.removeprefix("gpuN."), t) for t in texts))

    gone = sorted(name for name in DOCUMENTED if not found(name))
    assert not gone, f"gpuready/probe/checks.py describes checks the probe no longer makes: {gone}"


def test_each_check_is_described_once_in_a_known_tier():
    assert len(DOCUMENTED) == len(set(DOCUMENTED))
    assert {row.tier for row in checks.CHECKS} <= set(checks.TIERS)
    assert all(row.reads and row.fails_when and row.action for row in checks.CHECKS)
