"""How the smoke modules may lean on each other: through public names only (what another module shares it names
without an underscore), read from the source, imports inside functions included."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import gpuready.smoke
from tests.test_layers import GRAPH

SMOKE = Path(gpuready.smoke.__file__).parent
PROJECT = ("gpuready", "gpuready_components")
"""The import names of the project's own packages."""


def _module(path: Path) -> str:
    parts = ["gpuready", *path.relative_to(SMOKE.parent).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(path): path for path in sorted(SMOKE.rglob("*.py"))}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _source(node: ast.ImportFrom, module: str, path: Path) -> str:
    """The absolute module a ``from ... import`` reads from."""
    if not node.level:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = package[:len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def private_uses(module: str, path: Path) -> list[str]:
    """Each place ``module`` reads another project module's underscore name: ``from m import _x``, or ``m._x``
    on a name bound by an import."""
    tree = ast.parse(path.read_text(), str(path))
    imported, found = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in PROJECT:
                    imported.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            source = _source(node, module, path)
            if source.split(".")[0] not in PROJECT:
                continue
            for alias in node.names:
                if _private(alias.name):
                    found.append(f"{path.name}:{node.lineno} imports {alias.name} from {source}")
                imported.add(alias.asname or alias.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in imported:
                found.append(f"{path.name}:{node.lineno} reads {ast.unparse(node)}")
    return found


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_smoke_module_reads_another_modules_private_names(module):
    assert private_uses(module, MODULES[module]) == []


def test_the_check_sees_both_ways_of_reading_a_private_name(tmp_path):
    path = tmp_path / "spy.py"
    path.write_text("from . import batch\nfrom .kubernetes import _Calls\n\n\ndef f():\n"
                    "    return batch._clients, batch.clients, _Calls, self._mine\n")
    assert private_uses("gpuready.smoke.spy", path) == [
        "spy.py:2 imports _Calls from gpuready.smoke.kubernetes", "spy.py:6 reads batch._clients"]


def reached(module: str) -> set[str]:
    """Every project module ``module`` imports, directly or through others (``tests/test_layers.py`` reads who
    imports whom, imports inside functions included, and holds the project to no cycle)."""
    seen, todo = set(), [module]
    while todo:
        for target in GRAPH[todo.pop()] - seen:
            seen.add(target)
            todo.append(target)
    return seen


def test_the_sweep_imports_neither_of_its_targets():
    """The targets build on the sweep's rows, never the other way: the platform registry picks the target."""
    assert {"gpuready.smoke.sweep_batch", "gpuready.smoke.sweep_kubernetes"} & reached("gpuready.smoke.sweep") == set()
    assert "gpuready.smoke.sweep" in GRAPH["gpuready.smoke.sweep_batch"]  # the graph is read as it should be
