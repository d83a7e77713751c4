"""Cloud SDKs, imported on first use; a missing one names the extra that installs it and the command that adds it."""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import re
import shlex
import sys
import urllib.parse
from pathlib import Path
from types import ModuleType
from typing import Optional, Sequence

from . import platforms


DISTRIBUTION = "gpuready"


def install_command(extra: str) -> str:
    """A command that adds gpuready's ``extra`` (``aws``, or ``gcp,k8s``) to the gpuready that runs it, from where
    that gpuready came (it is not on PyPI yet; PEP 610's ``direct_url.json`` of the installed distribution records a
    wheel's, a directory's or a repository's URL):

    - a checkout installed with ``pip install -e``: ``pip install -c <checkout>/requirements/lock.txt -e
      '<checkout>[extra]'``, the lock's pins kept as the README's install keeps them;
    - a wheel (or sdist, directory, repository): ``pip install 'gpuready[extra] @ file:///.../gpuready-....whl'``;
    - an application installed with pipx or ``uv tool``, whose environment those tools own: ``pipx install --force``
      or ``uv tool install --force`` of the same;
    - a release from a package index: ``pip install 'gpuready[extra]'``.

    Each names the extras installed already besides ``extra``: uv rebuilds a tool's environment from the requirement
    it is given, which must not drop them, and pip resolves only what it is asked for (it does not read the
    requirements of the distributions installed beside it), so it would otherwise move a shared dependency past an
    installed SDK's bound (python-dateutil past botocore's). A wheel carries no lock: asked for all its extras, pip
    keeps each of their bounds, not the lock's pins. An environment that ``uv pip`` installed gpuready into (it may
    have no pip) is told ``uv pip install``.
    """
    distribution = installed()
    if distribution is None:  # no metadata: gpuready's modules were put on the path by hand
        return f"pip install {shlex.quote(f'{DISTRIBUTION}[{extra}]')}"
    tool = _tool()
    extra = ",".join(sorted({*_installed_extras(distribution), *extra.split(",")}))
    installer = tool or ("uv pip install" if _installer(distribution) == "uv" else "pip install")
    return " ".join([installer, *map(shlex.quote, _requirement(distribution, extra, lock=not tool))])


def _tool() -> Optional[str]:
    """The command that reinstalls the application environment gpuready runs in, where pipx or ``uv tool`` made it
    (each leaves its mark in the environment: ``pipx_metadata.json``, ``uv-receipt.toml``)."""
    prefix = Path(sys.prefix)
    if (prefix / "uv-receipt.toml").is_file():
        return "uv tool install --force"
    if (prefix / "pipx_metadata.json").is_file():
        try:
            suffix = json.loads((prefix / "pipx_metadata.json").read_text())["main_package"]["suffix"]
        except (OSError, ValueError, KeyError, TypeError):
            suffix = ""
        return "pipx install --force" + (f" --suffix={shlex.quote(suffix)}" if suffix else "")
    return None


def _installer(distribution: importlib.metadata.Distribution) -> str:
    """The tool that installed ``distribution`` (its ``INSTALLER`` file: ``pip``, ``uv``...)."""
    return (distribution.read_text("INSTALLER") or "").strip()


LOCK = Path("requirements", "lock.txt")
"""A checkout's lock, relative to it: the pins the README's install and CI use."""


def _requirement(distribution: importlib.metadata.Distribution, extra: str, lock: bool = True) -> list[str]:
    """The arguments that install gpuready with ``extra`` from where ``distribution`` came (an editable checkout's
    with ``-c`` its lock, where it has one and ``lock``)."""
    try:
        direct = json.loads(distribution.read_text("direct_url.json") or "{}")
    except ValueError:
        direct = {}
    url = direct.get("url") if isinstance(direct, dict) else None
    if not isinstance(url, str) or not url:  # from a package index
        return [f"{DISTRIBUTION}[{extra}]"]
    if (direct.get("dir_info") or {}).get("editable"):
        from urllib.request import url2pathname

        parts = urllib.parse.urlsplit(url)
        path = url2pathname(parts.path) if parts.scheme == "file" else url
        pins = Path(path, LOCK) if parts.scheme == "file" else None
        return [*(["-c", str(pins)] if lock and pins and pins.is_file() else []), "-e", f"{path}[{extra}]"]
    vcs = direct.get("vcs_info")
    if isinstance(vcs, dict) and vcs.get("vcs") and vcs.get("commit_id"):
        url = f"{vcs['vcs']}+{url}@{vcs['commit_id']}"
    if direct.get("subdirectory"):
        url += f"#subdirectory={direct['subdirectory']}"
    return [f"{DISTRIBUTION}[{extra}] @ {url}"]


_EXTRA_MARKER = re.compile(r"""\bextra\s*==\s*["']([^"']+)["']""")


def _installed_extras(distribution: importlib.metadata.Distribution) -> set[str]:
    """gpuready's extras whose every requirement is installed beside it (a tool's reinstall must keep them)."""
    needs = _needs(distribution)
    return {extra for extra, names in needs.items() if all(_distribution(name) for name in names)}


def _needs(distribution: importlib.metadata.Distribution) -> dict[str, set[str]]:
    """Each of ``distribution``'s extras -> the distributions it requires."""
    needs: dict[str, set[str]] = {extra: set() for extra in distribution.metadata.get_all("Provides-Extra") or ()}
    for requirement in distribution.requires or ():
        marker = _EXTRA_MARKER.search(requirement.partition(";")[2])
        if marker and marker.group(1) in needs:
            needs[marker.group(1)].add(re.split(r"[\s\[<>=!~;(]", requirement.strip(), maxsplit=1)[0])
    return needs


def extra_requirements(extras: Sequence[str]) -> Optional[set[str]]:
    """The distributions gpuready's ``extras`` require (``pulumi-aws``, ``boto3``...), from its installed metadata;
    ``None`` without any."""
    distribution = installed()
    if distribution is None:
        return None
    needs = _needs(distribution)
    return {name for extra in extras for name in needs.get(extra, ())}


def _distribution(name: str) -> Optional[importlib.metadata.Distribution]:
    """The installed distribution ``name``; ``None`` when it is not installed."""
    try:
        return importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def installed() -> Optional[importlib.metadata.Distribution]:
    """gpuready's installed distribution: the one an installer put on the path (it wrote its ``INSTALLER``), before
    metadata a build leaves in a source tree that is on the path too (``gpuready.egg-info`` of a checkout, found
    first when Python runs from there); ``None`` without any."""
    found = list(importlib.metadata.distributions(name=DISTRIBUTION))
    return next((d for d in found if d.read_text("INSTALLER")), found[0] if found else None)


class MissingExtra(ImportError):
    """A cloud SDK that is not installed; the message has the ``pip install`` that fixes it."""


def require(module: str) -> ModuleType:
    """Import ``module`` or raise :class:`MissingExtra` naming the gpuready extra that provides it."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name != module.split(".")[0]:
            raise
        extra = platforms.collect("sdks", lambda p: p.sdks).get(module.split(".")[0], "all")
        raise MissingExtra(
            f"{module} is not installed; it comes with gpuready's '{extra}' extra: {install_command(extra)}",
            name=module,
        ) from e
