"""Smoke tests: run the GPU probe where a stack's GPU work runs, and report what the GPUs really did."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from .result import SmokeResult


def run_on_stack(*, stack: Optional[str], outputs_file: Optional[Path], gpus: Optional[int], timeout: float,
                 keep: bool, full: bool = False) -> SmokeResult:
    """Pick the target from the stack's outputs (``platform``) and run the probe there."""
    from .outputs import load_outputs

    outputs = load_outputs(stack=stack, path=outputs_file)
    platform = outputs.get("platform")
    if platform == "aws-batch":
        from . import batch

        return batch.run(outputs, gpus=gpus or 1, timeout=timeout, keep=keep, full=full)
    from ..errors import UserError

    if platform in ("eks", "gke", "aks"):
        from . import kubernetes

        return kubernetes.run(outputs, gpus=gpus or 1, timeout=timeout, keep=keep, full=full)
    raise UserError(f"the stack's outputs name no platform gpuready knows ({platform!r}); is it a gpuready stack?")


__all__ = ["SmokeResult", "run_on_stack"]
