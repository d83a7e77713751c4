"""Cloud SDKs, imported on first use; a missing one names the extra that installs it."""

from __future__ import annotations

import importlib
import shlex
from pathlib import Path
from types import ModuleType

_EXTRAS = {
    "pulumi_aws": "aws",
    "boto3": "aws",
    "botocore": "aws",
    "pulumi_gcp": "gcp",
    "pulumi_azure_native": "azure",
    "pulumi_kubernetes": "k8s",
}


def install_command(extra: str) -> str:
    """The ``pip install`` that adds gpuready's ``extra``: from the checkout gpuready runs from (it is not on PyPI
    yet), or, for an installed release, from the package index."""
    root = Path(__file__).resolve().parent.parent
    if (root / "pyproject.toml").is_file() and (root / "gpuready").is_dir():
        return f"pip install -e {shlex.quote(f'{root}[{extra}]')}"
    return f"pip install 'gpuready[{extra}]'"


class MissingExtra(ImportError):
    """A cloud SDK that is not installed; the message has the ``pip install`` that fixes it."""


def require(module: str) -> ModuleType:
    """Import ``module`` or raise :class:`MissingExtra` naming the gpuready extra that provides it."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name != module.split(".")[0]:
            raise
        extra = _EXTRAS.get(module.split(".")[0], "all")
        raise MissingExtra(
            f"{module} is not installed; it comes with gpuready's '{extra}' extra: {install_command(extra)}"
        ) from e


def lazy_exports(package: str, **modules: tuple[str, ...]):
    """A module ``__getattr__`` giving each name of ``modules`` (submodule -> names) from ``package.submodule`` on
    first use: the package imports nothing until a name is asked for, so its submodules may import modules that
    import it back (the platform registry reads the Kubernetes node facts; the Kubernetes software reads the
    registry)."""
    where = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str):
        if name in where:
            return getattr(importlib.import_module(f"{package}.{where[name]}"), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return __getattr__


def lazy_components(package: str, *names: str):
    """A module ``__getattr__`` giving ``names`` from ``package.component`` on first use.

    A platform's component imports its cloud SDK; its args, facts and validation must not (the policy pack and
    ``gpuready plan`` for other platforms read them).
    """
    def __getattr__(name: str):
        if name in names:
            return getattr(importlib.import_module(f"{package}.component"), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return __getattr__
