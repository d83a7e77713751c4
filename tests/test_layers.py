"""The floors of docs/architecture.md, held: who may import whom, and no import cycles.

Every ``import`` in the project's code counts, also those inside functions (a lazy import is still a dependency: it
runs when the function does). No module names another in a string (``"module:Class"``, ``import_module(f"...")``):
a platform's descriptor holds objects, and what it must import late it imports in a function, which counts here. The
one place that names modules in text is ``pyproject.toml``'s entry points, checked to resolve.
"""

from __future__ import annotations

import ast
import re
from importlib import import_module as importlib_import
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGES = {"gpuready": ROOT / "gpuready", "gpuready_components": ROOT / "components",
            "gpuready_stacks": ROOT / "stacks", "gpuready_platforms": ROOT / "platforms", "policies": ROOT / "policies"}
"""Import name -> folder (components/ installs as gpuready_components, stacks/ as gpuready_stacks)."""


def _modules() -> dict[str, Path]:
    found = {}
    for package, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = [package, *path.relative_to(folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """The project modules ``name`` imports (the deepest known module of each import)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets.update(f"{module}.{alias.name}" for alias in node.names)
            targets.add(module)
    known = set()
    for target in targets:
        while target and target not in MODULES:
            target = target.rpartition(".")[0]
        if target and target != name:
            known.add(target)
    return known


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _floor(module: str) -> str:
    return module.split(".")[0]


@pytest.mark.parametrize("lower, upper", [
    ("gpuready_components", "gpuready"), ("gpuready_components", "gpuready_stacks"),
    ("gpuready_components", "policies"), ("gpuready_stacks", "gpuready"), ("gpuready_stacks", "policies"),
    ("gpuready", "policies"), ("gpuready", "gpuready_stacks"),
    # the platforms' own modules (gpuready_platforms) compose every layer; none imports them (entry points name them)
    ("gpuready_components", "gpuready_platforms"), ("gpuready_stacks", "gpuready_platforms"),
    ("gpuready", "gpuready_platforms"), ("policies", "gpuready_platforms"),
])
def test_a_floor_never_imports_one_above_it(lower, upper):
    wrong = sorted(f"{m} imports {t}" for m, targets in GRAPH.items() if _floor(m) == lower
                   for t in targets if _floor(t) == upper)
    assert not wrong, "\n".join(wrong)


SDK_FLOORS = [
    # (package, packages it must not import): the policy rules and resource readers run in the pack's own venv,
    # which has gpuready's core only; plan and policy do not reach into each other's halves.
    ("gpuready.resources", ("gpuready.plan", "gpuready.policy", "gpuready.smoke", "gpuready.cli")),
    ("gpuready.policy", ("gpuready.plan", "gpuready.smoke", "gpuready.cli")),
    ("gpuready.rendering", ("gpuready.plan", "gpuready.policy")),
    ("gpuready.probe", ("gpuready.plan", "gpuready.policy", "gpuready.smoke", "gpuready.resources", "gpuready.cli")),
    ("gpuready.smoke", ("gpuready.plan", "gpuready.policy", "gpuready.cli")),
    ("gpuready.plan", ("gpuready.smoke", "gpuready.cli")),
    ("gpuready.refresh", ("gpuready.plan", "gpuready.policy", "gpuready.smoke", "gpuready.cli")),
]


@pytest.mark.parametrize("package, forbidden", SDK_FLOORS, ids=[p for p, _ in SDK_FLOORS])
def test_the_sdk_floors(package, forbidden):
    wrong = sorted(f"{m} imports {t}" for m, targets in GRAPH.items() if m == package or m.startswith(package + ".")
                   for t in targets if any(t == f or t.startswith(f + ".") for f in forbidden))
    assert not wrong, "\n".join(wrong)


def _cycles() -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in GRAPH.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(GRAPH):
        if node not in index:
            visit(node)
    return found


def _package_of(module: str) -> str:
    return module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]


def test_no_import_cycles_between_modules():
    """A package's ``__init__`` importing its own modules, which import names back from it, is how Python packages
    export their API: only cycles that leave one package, or that join two sibling modules, are reported."""
    def real(component: list[str]) -> bool:
        inits = [m for m in component if MODULES[m].name == "__init__.py"]
        return not (len(inits) == 1 and all(_package_of(m) == inits[0] for m in component))

    cycles = [" <-> ".join(c) for c in _cycles() if real(c)]
    assert not cycles, "\n".join(cycles)


def test_the_cycle_check_sees_a_cycle():
    GRAPH["gpuready.rendering"].add("gpuready.plan.render")
    try:
        assert any("gpuready.rendering" in c and "gpuready.plan.render" in c for c in _cycles())
    finally:
        GRAPH["gpuready.rendering"].discard("gpuready.plan.render")


def test_the_reader_sees_imports_inside_functions():
    assert "gpuready.plan" in GRAPH["gpuready.cli"]  # imported inside a function: the CLI starts fast


IMPORTS_BY_NAME = {"gpuready_components.sdk": "require() imports a third-party cloud SDK a component asks for, to name "
                                           "the extra that installs it when it is missing"}
"""Modules allowed to call ``import_module`` on a computed name, and why."""


DOTTED = re.compile(r"^(gpuready|gpuready_components|gpuready_stacks|gpuready_platforms)(\.\w+)+:\w+$")


def named_in_strings(name: str, source: str) -> list[str]:
    """Where module ``name``'s ``source`` names a module of the project in a string (``"package.module:Class"``) or
    imports one by a computed name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and DOTTED.match(node.value):
            found.append(f"{name}: {node.value!r}")
        called = getattr(node, "func", None)
        if isinstance(node, ast.Call) and getattr(called, "attr", getattr(called, "id", "")) == "import_module" \
                and name not in IMPORTS_BY_NAME:
            found.append(f"{name}: import_module at line {node.lineno}")
    return found


def test_no_module_is_named_in_a_string():
    """A dependency written as ``"package.module:Class"`` or passed to ``import_module`` is one no import test sees
    and that fails only when it runs."""
    found = [f for name, path in MODULES.items() for f in named_in_strings(name, path.read_text())]
    assert not found, "\n".join(found)


def test_the_string_check_sees_a_module_path_and_an_import_by_name():
    planted = 'TARGET = "gpuready.smoke.batch:BatchTarget"\nimportlib.import_module(f"gpuready_stacks.{name}")\n'
    assert named_in_strings("gpuready.x", planted) == [
        "gpuready.x: 'gpuready.smoke.batch:BatchTarget'", "gpuready.x: import_module at line 2"]


def test_the_entry_points_name_the_builtin_platforms():
    """gpuready's own platforms are named where a third party's are: entry points of the group the registry reads."""
    import tomllib

    from gpuready_components import platforms

    entries = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"][platforms.ENTRY_POINTS]
    for name, value in entries.items():
        module, _, attribute = value.partition(":")
        assert module.startswith("gpuready_platforms.") and getattr(importlib_import(module), attribute) is \
            platforms.require(name)
