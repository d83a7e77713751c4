"""Reading the user's JSON and YAML files: a missing or malformed file is a :class:`UserError` naming it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from .errors import UserError


def read_map(path: Path, what: str) -> dict[str, Any]:
    """The object a ``.json`` or YAML file holds; ``what`` names the file in messages ("policy config")."""
    path = Path(path)
    kind = "JSON" if path.suffix == ".json" else "YAML"
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise UserError(f"{what} {path} does not exist") from None
    except OSError as e:
        raise UserError(f"cannot read {what} {path}: {e.strerror}") from None
    try:
        data = json.loads(text) if kind == "JSON" else (yaml.safe_load(text) or {})
    except (json.JSONDecodeError, yaml.YAMLError) as e:
        raise UserError(f"{what} {path} is not valid {kind}: {e}") from None
    if not isinstance(data, dict):
        raise UserError(f"{what} {path} must hold a {'JSON object' if kind == 'JSON' else 'YAML map'}")
    return data
