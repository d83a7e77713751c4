"""A deployed stack's outputs: from the Pulumi CLI, or from a JSON file (``pulumi stack output --json > FILE``)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any, Optional

from ..errors import UserError


def load_outputs(stack: Optional[str] = None, path: Optional[Path] = None) -> dict[str, Any]:
    if path is not None:
        try:
            data = json.loads(Path(path).read_text())
        except FileNotFoundError:
            raise UserError(f"outputs file {path} does not exist") from None
        except json.JSONDecodeError as e:
            raise UserError(f"outputs file {path} is not JSON: {e}") from None
    else:
        pulumi = shutil.which("pulumi")
        if pulumi is None:
            raise UserError("the Pulumi CLI is not installed: save the outputs where it is "
                            f"(`pulumi stack output --json --show-secrets -s {stack} > outputs.json`) and pass "
                            "--outputs outputs.json")
        done = subprocess.run([pulumi, "stack", "output", "--json", "--show-secrets", "-s", str(stack)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise UserError(f"pulumi stack output -s {stack} failed: {done.stderr.strip()}")
        data = json.loads(done.stdout or "{}")
    if not isinstance(data, dict):
        raise UserError("stack outputs must be a JSON object")
    return data
