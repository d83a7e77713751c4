"""A deployed stack's outputs: from the Pulumi CLI, or from a JSON file (``pulumi stack output --json > FILE``)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any, Mapping, Optional

from gpuready_components import platforms
from gpuready_components.outputs import Output, contract

from ..errors import UserError
from ..files import read_map

MASKED = "[secret]"
"""What ``pulumi stack output --json`` prints for a secret output without ``--show-secrets``."""


class StackOutputs:
    """A deployed stack's outputs read through its platform's contract (:mod:`gpuready_components.outputs`): every declared
    output present has its declared type, and the smoke targets read only outputs the contract says they read."""

    def __init__(self, values: Mapping[str, Any], platforms: tuple[str, ...],
                 source: str = "the stack's outputs") -> None:
        """``values`` as the target for ``platforms`` reads them; their ``platform`` must be one of those (a target
        for one platform also takes outputs that do not name theirs)."""
        platform = values.get("platform") or (platforms[0] if len(platforms) == 1 else None)
        if platform not in platforms:
            raise UserError(f"{source} name platform {platform!r}, not {' or '.join(platforms)}: are they the "
                            "outputs of a gpuready stack of that platform?")
        self.contract, self.values, self.source = contract(platform), dict(values), source
        self.platform: str = platform
        check_types(self.values, source)

    def _declared(self, key: str) -> Output:
        output = self.contract[key]
        if not output.smoke:
            raise KeyError(f"{key} is not an output gpuready smoke reads on {self.contract.platform}: mark it "
                           "smoke=True in its contract")
        return output

    def __getitem__(self, key: str) -> Any:
        """The value of ``key``; a UserError naming it when the stack did not export it, or when it is a secret that
        was saved masked (:data:`MASKED`)."""
        output, value = self._declared(key), self.values.get(key)
        if value is None:
            how = "pulumi stack output --json --show-secrets" if output.secret else "pulumi stack output --json"
            raise UserError(f"{self.source} lack {key} ({output.meaning}): is it a stack of platform "
                            f"{self.contract.platform} deployed by this gpuready version (older ones did not export "
                            f"it)? Run `pulumi up`, then read the outputs with `{how}`")
        if output.secret and value == MASKED:
            raise UserError(f"{self.source}: output {key} is {MASKED}: they were saved without --show-secrets; "
                            "re-save them with `pulumi stack output --json --show-secrets > outputs.json`")
        return value

    def get(self, key: str, default: Any = None) -> Any:
        """The value of ``key``, or ``default`` when the stack did not export it."""
        self._declared(key)
        value = self.values.get(key)
        return default if value is None else value


    def gpu_taints(self) -> list[dict[str, str]]:
        """Every taint the stack's GPU nodes carry (``gpuNodeTaints``; stacks that predate it export ``gpuTaint``)."""
        taints = self.get("gpuNodeTaints")
        return list(taints) if taints else ([self.get("gpuTaint")] if self.get("gpuTaint") else [])


def check_types(outputs: dict[str, Any], source: str) -> dict[str, Any]:
    """``outputs`` unchanged; a UserError naming the first output whose value is not of the type a platform's
    contract declares for it (``platform`` must be a string; a missing or null output is not checked here)."""
    platform = outputs.get("platform")
    if platform is not None and not isinstance(platform, str):
        _mistyped(source, "platform", "a string", platform)
    kinds = {o.key: o.kind for name in platforms.names() for o in contract(name).outputs}  # one kind a key, everywhere
    own = contract(platform)
    kinds.update({o.key: o.kind for o in own.outputs} if own else {})
    for key, value in outputs.items():
        if key in kinds and value is not None and not kinds[key].fits(value):
            _mistyped(source, key, kinds[key].name, value)
    return outputs


def _mistyped(source: str, key: str, shape: str, value: Any) -> None:
    raise UserError(f"{source}: output {key!r} must be {shape}, not {type(value).__name__} "
                    f"{json.dumps(value, default=str)[:80]!r}: re-read the outputs with `pulumi stack output "
                    "--json --show-secrets`")


def load_outputs(stack: Optional[str] = None, path: Optional[Path] = None) -> dict[str, Any]:
    """The outputs in ``path``, or those the Pulumi CLI prints for ``stack`` (secrets shown: the kubeconfig), each
    of the shape the smoke targets read (a UserError names the first that is not)."""
    if path is not None:
        if not Path(path).exists() and str(path).lstrip().startswith(("{", "[")):
            raise UserError("--outputs takes a file, not JSON: save the outputs with `pulumi stack output --json "
                            "--show-secrets > outputs.json` and pass --outputs outputs.json")
        return check_types(read_map(path, "outputs file"), str(path))
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
    return check_types(data, f"pulumi stack output -s {stack}")
