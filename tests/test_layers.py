"""The floors of docs/architecture.md, held: who may import whom, and no import cycles, between files or folders.

Every ``import`` in the project's code counts, also those inside functions (a lazy import is still a dependency: it
runs when the function does) and those only a type checker runs. No module names another in a string
(``"module:Class"``, ``import_module(f"...")``): a platform's descriptor holds objects, and what it must import late it
imports in a function, which counts here. The one place that names modules in text is ``pyproject.toml``'s entry
points, checked to resolve.

What an import names is what it depends on: ``import a.b`` the module ``a.b``; ``from a import b`` the submodule
``a.b`` when there is one, else the package ``a``, which is its ``__init__.py`` (a module like any other: its own
imports are its edges, so a cycle through an ``__init__`` is a cycle). The parent packages Python initialises before
a module are not counted as imported by it: every module of a package whose ``__init__`` imports its modules would
otherwise be in a cycle with it, which says nothing of either. An ``__init__`` importing a module that imports a
name back from it (``from . import name``) is a cycle.
"""

from __future__ import annotations

import ast
import re
from importlib import import_module as importlib_import
from pathlib import Path
from typing import Iterable, Mapping

import pytest

from tests.conftest import ROOT

PACKAGES = {"gpuready": "gpuready", "gpuready_components": "components", "gpuready_stacks": "stacks",
            "gpuready_platforms": "platforms", "policies": "policies"}
"""Import name -> folder under the checkout (components/ installs as gpuready_components, stacks/ as
gpuready_stacks, platforms/ as gpuready_platforms)."""


def modules(root: Path, packages: Mapping[str, str]) -> dict[str, Path]:
    """Every module of ``packages`` (import name -> folder under ``root``) by dotted name: a package by its
    ``__init__.py``."""
    found = {}
    for package, folder in packages.items():
        for path in sorted((root / folder).rglob("*.py")):
            parts = [package, *path.relative_to(root / folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: Mapping[str, Path]) -> set[str]:
    """The modules of ``known`` that module ``name`` (at ``path``) names in its imports (see the module's docstring),
    each the deepest known module of the dotted name; not ``name`` itself."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    named = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            named.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            named.update(f"{module}.{alias.name}" if f"{module}.{alias.name}" in known else module
                         for alias in node.names)
    deepest = set()
    for target in named:
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name:
            deepest.add(target)
    return deepest


def graph(known: Mapping[str, Path]) -> dict[str, frozenset[str]]:
    """Module -> the modules it imports."""
    return {name: frozenset(imports(name, path, known)) for name, path in known.items()}


MODULES = modules(ROOT, PACKAGES)
GRAPH = graph(MODULES)


def _floor(module: str) -> str:
    return module.split(".")[0]


def strongly_connected(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm), each sorted: every node of one
    reaches every other, so each lies on a cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
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

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def file_cycles(edges: Mapping[str, Iterable[str]]) -> list[str]:
    """Each set of modules that import one another in a ring, ``__init__`` modules included."""
    return [" <-> ".join(component) for component in strongly_connected(edges)]


def folder_cycles(root: Path, known: Mapping[str, Path], edges: Mapping[str, Iterable[str]]) -> dict[str, list[str]]:
    """Each cycle between folders, seen from every folder F in turn (the checkout's root included): the nodes are
    F's own files, one each, and F's subfolders, each taken whole with everything under it; a node imports another
    when one of its modules imports one of the other's. A cycle with a subfolder in it is reported: sibling folders
    that import each other (``gpuready/smoke/ <-> gpuready/plan/``, whichever modules, also deep ones, make it), and
    a package's file and a subpackage that import each other (``components/platforms.py <-> components/k8s_gpu/``).

    Edges between a package and its subpackages count, but file by file on the package's side, not as one folder:
    a package's ``__init__`` importing its subpackages is normal, and so is a subpackage importing its parent's
    shared modules (``errors.py``); only a ring is wrong. Taken whole, a folder like ``gpuready/`` (``cli.py`` above
    every subpackage, ``errors.py`` below them all) would be in a cycle with each of them, and hide the real ones.
    Cycles of F's files alone are :func:`file_cycles`' (also reported there). Each written ``in F/: A <-> B``
    (folders ending in ``/``), with the imports between its nodes that make it."""
    where = {name: path.relative_to(root).parts for name, path in known.items()}
    found = {}
    for folder in sorted({parts[:depth] for parts in where.values() for depth in range(len(parts))}):
        def node(module: str) -> str | None:
            parts = where[module]
            if parts[:len(folder)] != folder:
                return None
            return "/".join(parts[:len(folder) + 1]) + ("/" if len(parts) > len(folder) + 1 else "")

        level: dict[str, set[str]] = {}
        crossing = []
        for module, targets in edges.items():
            for target in targets:
                a, b = node(module), node(target)
                if a is not None and b is not None and a != b:
                    level.setdefault(a, set()).add(b)
                    crossing.append((a, b, f"{module} imports {target}"))
        for component in strongly_connected(level):
            if any(n.endswith("/") for n in component):
                found[f"in {'/'.join(folder) or '.'}/: " + " <-> ".join(component)] = sorted(
                    why for a, b, why in crossing if a in component and b in component)
    return found


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


def test_no_import_cycles_between_modules():
    cycles = file_cycles(GRAPH)
    assert not cycles, "\n".join(cycles)


def test_no_import_cycles_between_folders():
    cycles = folder_cycles(ROOT, MODULES, GRAPH)
    assert not cycles, "\n".join(f"{c}\n    " + "\n    ".join(why) for c, why in cycles.items())


CLEAN = {
    "pkg/__init__.py": "from .low import helper\nfrom .sub import thing\n",
    "pkg/low.py": "import json\n",
    "pkg/top.py": "from pkg import sub\nfrom . import low\n",
    "pkg/sub/__init__.py": "from .inner import thing\n",
    "pkg/sub/inner.py": "from ..low import helper\nfrom pkg import low\n",
    "pkg/other/__init__.py": "",
    "pkg/other/deep/__init__.py": "",
    "pkg/other/deep/leaf.py": "from pkg.sub.inner import thing\n",
}
"""A tree without cycles: a package's ``__init__`` importing its subpackage, which imports the package's shared
module, and imports by every spelling."""
PLANTED = {
    "between two files, one import inside a function": ({
        "pkg/low.py": "def later():\n    from pkg import mid\n", "pkg/mid.py": "from .low import helper\n"},
        ["pkg.low <-> pkg.mid"], []),
    "through an __init__ that passes the edge on": ({
        "pkg/low.py": "from pkg.sub import thing\n"},  # the package, whose __init__ imports inner, which imports low
        ["pkg.low <-> pkg.sub <-> pkg.sub.inner"], ["in pkg/: pkg/low.py <-> pkg/sub/"]),
    "an __init__ and the module it exports, which reads a name back from it": ({
        "pkg/sub/inner.py": "from . import other_name\n"}, ["pkg.sub <-> pkg.sub.inner"], []),
    "between sibling folders, no two files in a ring": ({
        "pkg/sub/two.py": "import pkg.other.deep.leaf\n"},
        [], ["in pkg/: pkg/other/ <-> pkg/sub/"]),
    "between a package's file and its subpackage": ({
        "pkg/sub/two.py": "from pkg.top import x\n"}, [], ["in pkg/: pkg/sub/ <-> pkg/top.py"]),
}
"""Name -> (files changed in :data:`CLEAN`, the file cycles and the folder cycles they make)."""


def _tree(tmp_path: Path, files: Mapping[str, str]) -> tuple[dict[str, Path], dict[str, frozenset[str]]]:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    known = modules(tmp_path, {"pkg": "pkg"})
    return known, graph(known)


def test_the_clean_tree_has_no_cycle(tmp_path):
    known, edges = _tree(tmp_path, CLEAN)
    assert edges["pkg.top"] == {"pkg.sub", "pkg.low"}  # from a package import a submodule: that submodule
    assert edges["pkg.sub.inner"] == {"pkg.low"}
    assert file_cycles(edges) == [] and folder_cycles(tmp_path, known, edges) == {}


@pytest.mark.parametrize("planted", sorted(PLANTED))
def test_the_cycle_checks_see_a_planted_cycle(tmp_path, planted):
    change, in_files, in_folders = PLANTED[planted]
    known, edges = _tree(tmp_path, {**CLEAN, **change})
    assert file_cycles(edges) == in_files
    assert list(folder_cycles(tmp_path, known, edges)) == in_folders


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


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string constants that are docstrings: a module's, class's or function's first statement, and
    the attribute docstrings that follow an assignment (any string standing alone as a statement)."""
    return {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)}


def platform_rooms(graph: Mapping[str, Iterable[str]], descriptors: Mapping[str, str]) -> dict[str, tuple[str, ...]]:
    """Platform name -> its rooms, as module name prefixes: its descriptor's module (``descriptors``: name -> module,
    the entry points), the ``gpuready_components`` package whose output contract (``outputs.py``) the descriptor
    imports (``components/<platform>_gpu/``) and the ``gpuready_stacks`` module it imports (``stacks/<platform>.py``)."""
    def own(module: str) -> list[str]:
        found = set()
        for target in graph[module]:
            parts = target.split(".")
            if parts[0] == "gpuready_components" and len(parts) == 3 and parts[2] == "outputs":
                found.add(".".join(parts[:2]))  # components/<platform>_gpu/, by its contract
            elif parts[0] == "gpuready_stacks" and len(parts) == 2:
                found.add(target)
        return sorted(found)

    return {name: (module, *own(module)) for name, module in descriptors.items()}


def _in(module: str, prefixes: Iterable[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def outside_rooms(known: Mapping[str, Path], graph: Mapping[str, Iterable[str]],
                  rooms: Mapping[str, tuple[str, ...]]) -> list[str]:
    """Where a module outside a platform's rooms (:func:`platform_rooms`) imports one of its modules, or names the
    platform in its code: a string constant (not a docstring) that is the platform's name (``"eks"``), the name of
    its package (``"eks_gpu"``) or a key of a table keyed by the platform (``"eks/..."``; not a provider module's
    path in a type token, ``"eks/nodeGroup"``)."""
    found = []
    for module, path in sorted(known.items()):
        others = {name: own for name, own in rooms.items() if not _in(module, own)}
        for target in sorted(graph[module]):
            found += [f"{module} imports {target} ({name})" for name, own in others.items() if _in(target, own[1:])]
        words = {name: {name, *(p.rpartition(".")[2] for p in own[1:] if p.startswith("gpuready_components."))}
                 for name, own in others.items()}
        tree = ast.parse(path.read_text(), str(path))
        docstrings = _docstrings(tree)
        for node in sorted((n for n in ast.walk(tree) if isinstance(n, ast.Constant)), key=lambda n: n.lineno):
            if isinstance(node.value, str) and id(node) not in docstrings:
                found += [f"{module}:{node.lineno} names {name}: {node.value!r}" for name, said in words.items()
                          if node.value in said or (node.value.startswith(name + "/")
                                                    and not re.fullmatch(r"[a-z-]+/[a-z]+[A-Z]\w*", node.value))]
    return found


def test_a_platform_lives_in_its_own_rooms():
    """A platform's code is in its rooms: ``components/<platform>_gpu/``, ``stacks/<platform>.py`` (and its stack
    files), and its descriptor ``platforms/<platform>.py``, the one registration (named by an entry point). No other
    module of the project imports a platform's modules, or names the platform in code: a string constant that is its
    name, its package's name or a key of a table keyed by platform (``"eks/<image>"``). What platforms share lives in
    a room named for what it is (``components/k8s_gpu/``, ``components/aws_reservations.py``...), and what the SDK
    must know of one platform it reads from the platform's descriptor.

    Not counted: prose (docstrings, and messages that mention a platform as an example or a way out), and the
    clouds' own vocabulary, which names a cloud's service and not gpuready's plugin: resource type tokens
    (``aws:eks/nodeGroup:NodeGroup``) and the readers named for them (``EksNodeGroup``), API hosts, label keys,
    environment variables. The tests are not scanned (they mirror the tree: a platform's tests are in its folder of
    tests/, and the shared ones drive every platform by name); nor the docs."""
    import tomllib

    from gpuready_components import platforms

    entries = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"][platforms.ENTRY_POINTS]
    rooms = platform_rooms(GRAPH, {name: value.partition(":")[0] for name, value in entries.items()})
    assert rooms["eks"] == ("gpuready_platforms.eks", "gpuready_components.eks_gpu", "gpuready_stacks.eks")
    assert all(len(own) == 3 for own in rooms.values()), rooms  # each: its descriptor, its package, its program
    found = outside_rooms(MODULES, GRAPH, rooms)
    assert not found, "\n".join(found)


def test_the_rooms_check_sees_an_import_and_a_name(tmp_path):
    files = {"gpuready_components/__init__.py": "", "gpuready_components/k8s_gpu/__init__.py": "",
             "gpuready_components/k8s_gpu/facts.py": "LABEL = 'x'\n",
             "gpuready_components/oke_gpu/__init__.py": "", "gpuready_components/oke_gpu/facts.py": "LABEL = 'y'\n",
             "gpuready_components/oke_gpu/outputs.py": "OUTPUTS = {}\n",
             "gpuready_stacks/__init__.py": "", "gpuready_stacks/oke.py": "from gpuready_components.oke_gpu import facts\n",
             "gpuready_platforms/__init__.py": "",
             "gpuready_platforms/oke.py": "from gpuready_components.oke_gpu import facts, outputs\nfrom gpuready_components."
                                          "k8s_gpu import facts\ndef _s():\n    from gpuready_stacks import oke\n",
             "gpuready_platforms/gke.py": "from gpuready_components.k8s_gpu import facts\n",
             "gpuready/__init__.py": "", "gpuready/reader.py": '"""Reads oke pools."""\nfrom gpuready_components.'
                                     'k8s_gpu import facts\nfrom gpuready_components.oke_gpu.facts import LABEL\n'
                                     'PLATFORM = "oke"\nKEY = f"oke/{LABEL}"\nSAID = "oke_gpu"\nOK = "on OKE, oke"\n'}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    known = modules(tmp_path, {p: p for p in ("gpuready", "gpuready_components", "gpuready_stacks",
                                               "gpuready_platforms")})
    edges = graph(known)
    rooms = platform_rooms(edges, {"oke": "gpuready_platforms.oke", "gke": "gpuready_platforms.gke"})
    assert rooms == {"oke": ("gpuready_platforms.oke", "gpuready_components.oke_gpu", "gpuready_stacks.oke"),
                     "gke": ("gpuready_platforms.gke",)}
    assert outside_rooms(known, edges, rooms) == [
        "gpuready.reader imports gpuready_components.oke_gpu.facts (oke)",
        "gpuready.reader:4 names oke: 'oke'", "gpuready.reader:5 names oke: 'oke/'",
        "gpuready.reader:6 names oke: 'oke_gpu'"]
