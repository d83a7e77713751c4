"""A deployed stack's outputs: from the Pulumi CLI, or from a JSON file (``pulumi stack output --json > FILE``)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any, Callable, Optional

from ..errors import UserError
from ..files import read_map


def _is_taint(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(value.get(k), str) for k in ("key", "effect"))


SHAPES: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "platform": ("a string", lambda v: isinstance(v, str)),
    "jobQueueArn": ("a string", lambda v: isinstance(v, str)),
    "jobQueueName": ("a string", lambda v: isinstance(v, str)),
    "jobDefinitionArn": ("a string", lambda v: isinstance(v, str)),
    "logGroupName": ("a string", lambda v: isinstance(v, str)),
    "autoscaler": ("a string", lambda v: isinstance(v, str)),
    "jobVcpus": ("a whole number", lambda v: isinstance(v, int) and not isinstance(v, bool)
                 or isinstance(v, str) and v.isdigit()),
    "kubeconfig": ("a string (the kubeconfig's text)", lambda v: isinstance(v, str)),
    "gpuTaint": ("a taint ({key, value, effect})", _is_taint),
    "gpuNodeTaints": ("a list of taints ({key, value, effect})",
                      lambda v: isinstance(v, list) and all(_is_taint(t) for t in v)),
    "gpuNodeLabels": ("a map of label to string", lambda v: isinstance(v, dict)
                      and all(isinstance(k, str) and isinstance(x, str) for k, x in v.items())),
}
"""The outputs the smoke targets read, and the shape each must have; a missing (or null) output is allowed here."""


def check_shapes(outputs: dict[str, Any], source: str) -> dict[str, Any]:
    """``outputs`` unchanged; a UserError naming the first output whose value has the wrong type."""
    for key, (shape, fits) in SHAPES.items():
        value = outputs.get(key)
        if value is not None and not fits(value):
            raise UserError(f"{source}: output {key!r} must be {shape}, not {type(value).__name__} "
                            f"{json.dumps(value, default=str)[:80]!r}: re-read the outputs with `pulumi stack output "
                            "--json --show-secrets`")
    return outputs


def load_outputs(stack: Optional[str] = None, path: Optional[Path] = None) -> dict[str, Any]:
    """The outputs in ``path``, or those the Pulumi CLI prints for ``stack`` (secrets shown: the kubeconfig), each
    of the shape the smoke targets read (a UserError names the first that is not)."""
    if path is not None:
        return check_shapes(read_map(path, "outputs file"), str(path))
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
    return check_shapes(data, f"pulumi stack output -s {stack}")
