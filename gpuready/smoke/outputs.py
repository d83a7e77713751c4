"""A deployed stack's outputs: from the Pulumi CLI, or from a JSON file (``pulumi stack output --json > FILE``)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any, Optional

from ..errors import UserError
from ..files import read_map


def load_outputs(stack: Optional[str] = None, path: Optional[Path] = None) -> dict[str, Any]:
    """The outputs in ``path``, or those the Pulumi CLI prints for ``stack`` (secrets shown: the kubeconfig)."""
    if path is not None:
        return read_map(path, "outputs file")
    pulumi = shutil.which("pulumi")
    if pulumi is None:
        raise UserError("the Pulumi CLI is not installed: save the outputs where it is "
                        f"(`pulumi stack output --json --show-secrets -s {stack} > outputs.json`) and pass "
                        "--outputs outputs.json")
    done = subprocess.run([pulumi, "stack", "output", "--json", "--show-secrets", "-s", str(stack)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise UserError(f"pulumi stack output -s {stack} failed: {done.stderr.strip()}")
    try:
        data = json.loads(done.stdout or "{}")
    except json.JSONDecodeError as e:
        raise UserError(f"pulumi stack output -s {stack} printed no JSON: {e}") from None
    if not isinstance(data, dict):
        raise UserError("stack outputs must be a JSON object")
    return data
