"""Pulumi projects and stack config files, read as the Pulumi CLI reads them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional


from .errors import UserError
from .files import read_map


@dataclass(frozen=True)
class Project:
    """A Pulumi project: the directory holding ``Pulumi.yaml``."""

    root: Path
    name: str
    main: Path
    """The program directory (``main:`` in Pulumi.yaml, else the root)."""
    stack_config_dir: Path

    def stack_file(self, stack: str) -> Path:
        return self.stack_config_dir / f"Pulumi.{stack}.yaml"

    def stacks(self) -> list[str]:
        return sorted(p.name[len("Pulumi."):-len(".yaml")] for p in self.stack_config_dir.glob("Pulumi.*.yaml"))


def _read_yaml(path: Path) -> dict:
    return read_map(path, "file")


def load_project(directory: Path) -> Project:
    """The project whose ``Pulumi.yaml`` is in ``directory``."""
    path = directory / "Pulumi.yaml"
    if not path.is_file():
        raise UserError(f"no Pulumi.yaml in {directory}: give --program the directory of a Pulumi project")
    data = _read_yaml(path)
    runtime = data.get("runtime")
    runtime_name = runtime.get("name") if isinstance(runtime, dict) else runtime
    if runtime_name != "python":
        raise UserError(f"{path}: runtime is {runtime_name!r}; gpuready plan renders Python programs only")
    root = directory.resolve()
    return Project(
        root=root,
        name=str(data.get("name", root.name)),
        main=(root / str(data.get("main", "."))).resolve(),
        stack_config_dir=(root / str(data.get("stackConfigDir", "."))).resolve(),
    )


def find_project(start: Optional[Path] = None) -> Project:
    """The project at or above ``start`` (the working directory), else the one gpuready ships with."""
    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        if (directory / "Pulumi.yaml").is_file():
            return load_project(directory)
    shipped = Path(__file__).resolve().parent.parent
    if (shipped / "Pulumi.yaml").is_file():
        return load_project(shipped)
    raise UserError("no Pulumi.yaml here or above: run from a Pulumi project, or give --program DIR")


def _without_ciphertext(value: object) -> object:
    if isinstance(value, dict):
        return "[secret]" if set(value) == {"secure"} else {k: _without_ciphertext(v) for k, v in value.items()}
    return [_without_ciphertext(v) for v in value] if isinstance(value, list) else value


def load_stack_config(path: Path, project: str) -> dict[str, str]:
    """A stack file's ``config:`` as the Pulumi engine hands it to a program: ``namespace:key`` -> string.

    Keys without a namespace belong to the project; structured values are passed as JSON, as ``pulumi up`` does.
    Encrypted (``secure:``) values cannot be read offline and become the placeholder ``[secret]``, nested ones too.
    """
    data = _read_yaml(path)
    config = data.get("config") or {}
    if not isinstance(config, dict):
        raise UserError(f"{path}: 'config' must be a map of keys to values")
    result = {}
    for key, value in config.items():
        full_key = key if ":" in key else f"{project}:{key}"
        value = _without_ciphertext(value)
        if isinstance(value, str):
            result[full_key] = value
        else:
            result[full_key] = json.dumps(value)
    return result
