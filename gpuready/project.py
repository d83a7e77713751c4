"""Pulumi projects and stack config files, read as the Pulumi CLI reads them."""

from __future__ import annotations

import datetime
import importlib.resources
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import yaml

from .errors import UserError, printable


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


class _StrictLoader(yaml.SafeLoader):
    """YAML's safe loader that refuses a key given twice in one map (plain YAML keeps the last, silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        """The map of ``node``, at any depth and in block or flow style (``{gpus: 1, gpus: 2}`` on one line)."""
        seen: dict[Any, str] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            mark = key_node.start_mark
            where = f"line {mark.line + 1}" + (f" column {mark.column + 1}" if node.flow_style else "")
            try:
                first = seen.get(key)
                seen[key] = first or where
            except TypeError:  # an unhashable key (a list or map used as a key); reported by the caller
                continue
            if first:
                raise UserError(f"{printable(key)} is given twice in one map ({first} and {where} of "
                                f"{printable(self.name)}): YAML would silently keep the last; keep one of them")
        return super().construct_mapping(node, deep)


def _read_yaml(path: Path) -> dict:
    """The map a Pulumi YAML file holds; a missing, undecodable or malformed file is a :class:`UserError` naming it."""
    try:
        data = path.read_bytes()
    except OSError as e:  # a missing file is reported by the callers, which look for it first
        raise UserError(f"cannot read file {path}: {e.strerror}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise UserError(f"file {path} is not UTF-8 (byte 0x{data[e.start]:02x} at offset {e.start}): "
                        "save it as UTF-8, as Pulumi reads it") from None
    try:
        loader = _StrictLoader(text)
        loader.name = str(path)
        try:
            loaded = loader.get_single_data() or {}
        finally:
            loader.dispose()
    except yaml.YAMLError as e:
        raise UserError(f"file {path} is not valid YAML: {printable(' '.join(str(e).split()), 400)}") from None
    except RecursionError:
        raise UserError(f"file {path} nests maps or lists too deeply to read") from None
    if not isinstance(loaded, dict):
        raise UserError(f"file {path} must hold a YAML map")
    return loaded


def _plain(key: str, value: Any, path: Path) -> Any:
    """``value`` with only what Pulumi's config can hold (strings, finite numbers, booleans, null, lists, string-keyed
    maps); dates become their ISO text, as Pulumi reads them. Anything else is a :class:`UserError` naming ``key``."""
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        raise UserError(f"{printable(key)} = {printable(value)} in {path}: not a finite number. Fix: give a number "
                        "such as 64 (YAML reads .inf and .nan as infinity and not-a-number)")
    if isinstance(value, list):
        return [_plain(f"{key}[{i}]", v, path) for i, v in enumerate(value)]
    if isinstance(value, dict):
        for sub in value:
            if not isinstance(sub, str):
                raise UserError(f"{printable(key)}: key {printable(sub)} in {path} is not text. Fix: quote it "
                                f"(\"{printable(sub)}\":), as config keys are strings")
        return {sub: _plain(f"{key}.{sub}", v, path) for sub, v in value.items()}
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    raise UserError(f"{printable(key)} in {path} holds a YAML {type(value).__name__}, which Pulumi config cannot "
                    "hold. Fix: use text, numbers, true/false, lists or maps")


def load_project(directory: Path, file: str = "Pulumi.yaml") -> Project:
    """The project whose ``Pulumi.yaml`` (or project ``file``) is in ``directory``."""
    path = directory / file
    if not path.is_file():
        raise UserError(f"no {file} in {directory}: give --program the directory of a Pulumi project")
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


SHIPPED_PACKAGE, SHIPPED_FILE = "gpuready_stacks", "pulumi-project.yaml"
"""gpuready's own project: the reference stacks' program and stack files, package data of ``gpuready_stacks``
(``stacks/`` of a checkout, installed with the wheel), with the project file that describes them from there."""


def shipped_project() -> Optional[Project]:
    """The reference stacks' project as installed (from a wheel, or a checkout's ``stacks/`` when installed with
    ``pip install -e``); ``None`` when it is not installed as files on disk."""
    try:
        folder = importlib.resources.files(SHIPPED_PACKAGE)  # imports the stack package: a name, not a dependency
    except ModuleNotFoundError as e:
        if e.name != SHIPPED_PACKAGE:
            raise
        return None
    if not isinstance(folder, Path) or not (folder / SHIPPED_FILE).is_file():
        return None
    return load_project(folder, SHIPPED_FILE)


def find_project(start: Optional[Path] = None) -> Project:
    """The project at or above ``start`` (the working directory), else the one gpuready ships with."""
    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        if (directory / "Pulumi.yaml").is_file():
            return load_project(directory)
    shipped = shipped_project()
    if shipped is None:
        raise UserError("no Pulumi.yaml here or above: run from a Pulumi project, or give --program DIR")
    return shipped


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
        if not isinstance(key, str):
            raise UserError(f"{path}: config key {printable(key)} is not text. Fix: write keys as "
                            f"namespace:name, such as gpuready:maxVcpus")
        value = _plain(key, value, path)
        full_key = key if ":" in key else f"{project}:{key}"
        value = _without_ciphertext(value)
        if isinstance(value, str):
            result[full_key] = value
        else:
            result[full_key] = json.dumps(value)
    return result
