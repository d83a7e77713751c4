"""Smoke tests: run the GPU probe where a stack's GPU work runs, and report what the GPUs really did."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Optional

from .result import SmokeResult


After = Callable[[Mapping[str, Any]], Callable[[Any], None]]
"""A step after a run: called with the stack's outputs before the run starts (it raises to refuse them: nothing has
run yet), it returns what to call with the target once :func:`.target.drive` returned and the target's work ran to
its end (its :attr:`~.target.SmokeTarget.result` final, its objects deleted); not called after a Ctrl-C, or when
there was nothing to run."""


def run_on_stack(*, stack: Optional[str], outputs_file: Optional[Path], gpus: Optional[int], timeout: float,
                 keep: bool, full: bool = False, trust_kubeconfig_exec: bool = False, nodes: int = 1,
                 team: Optional[str] = None) -> SmokeResult:
    """Run the probe on the stack (its outputs read from Pulumi, or ``outputs_file``) with the target its platform
    registers (:mod:`.dispatch`); with ``nodes`` > 1, one gang job on that many nodes, with NCCL across them.
    ``trust_kubeconfig_exec``: let the kubeconfig run any credential command (see :mod:`.kubeconfig`); ``team``:
    through that team's queue (the stack's ``teams`` output; none, on a stack with teams: the operators' queue)."""
    from gpuready_components.platforms import GANG, SINGLE

    from .target import Request

    return _on_stack(stack, outputs_file, GANG if nodes > 1 else SINGLE, Request(
        timeout=timeout, gpus=gpus, nodes=nodes, keep=keep, full=full, trust_kubeconfig_exec=trust_kubeconfig_exec,
        team=team))


def sweep_on_stack(*, stack: Optional[str], outputs_file: Optional[Path], nodes: Optional[int], timeout: float,
                   full: bool = False, quarantine: bool = False, trust_kubeconfig_exec: bool = False,
                   team: Optional[str] = None, after: Optional[After] = None) -> Any:
    """Sweep the stack's GPU nodes (a :class:`.sweep.SweepResult`) with the sweep target its platform registers;
    ``quarantine``: take failing nodes out of service (Kubernetes); ``team``: through that team's queue (none, on
    a stack with teams: the operators' queue); ``after``:
    a step to run on the target once the sweep ended (``gpuready sweep --repair``, see :data:`After`)."""
    from gpuready_components.platforms import SWEEP

    from .target import Request

    return _on_stack(stack, outputs_file, SWEEP, Request(timeout=timeout, nodes=nodes, full=full,
                                                         quarantine=quarantine, repair=after is not None,
                                                         trust_kubeconfig_exec=trust_kubeconfig_exec, team=team),
                     after)


def _on_stack(stack: Optional[str], outputs_file: Optional[Path], mode: str, request: Any,
              after: Optional[After] = None) -> Any:
    """Read the stack's outputs, then drive the target of ``mode`` on their platform (then ``after``'s step), access
    problems said in one line."""
    from .dispatch import target_class
    from .outputs import load_outputs
    from .target import drive

    outputs = load_outputs(stack=stack, path=outputs_file)
    platform = outputs.get("platform")
    with access_problems(platform):
        then = after(outputs) if after is not None else None
        target = target_class(platform, mode)(outputs, request)
        result = drive(target)
        if then is not None and getattr(target, "ended", False):
            then(target)
        return result


@contextlib.contextmanager
def access_problems(platform: Optional[str]) -> Iterator[None]:
    """Turn missing credentials, an API's refusal or failure, or an unreachable API raised in the block into a
    :class:`UserError` that says so (``platform: ...``); anything else passes unchanged."""
    from ..errors import UserError

    try:
        yield
    except Exception as error:  # noqa: BLE001 (access and credential problems are the user's to fix)
        hint = _access_problem(error)
        if hint is None:
            raise
        raise UserError(f"{platform}: {hint}") from error


NETWORK_ERRORS = ("EndpointConnectionError", "ConnectionClosedError", "ReadTimeoutError", "ConnectTimeoutError",
                  "ConnectionError", "ProxyConnectionError", "HTTPClientError", "MaxRetryError", "NewConnectionError",
                  "ProtocolError", "TimeoutError", "ConnectionResetError", "ConnectionRefusedError")
"""Exceptions (botocore, urllib3, the standard library) that mean the API could not be reached or did not answer."""


def _access_problem(error: Exception) -> Optional[str]:
    """A one-line explanation of missing credentials, an API's refusal or failure, or an unreachable API, or None."""
    name = type(error).__name__
    if name in ("NoCredentialsError", "PartialCredentialsError", "NoRegionError"):
        return f"{error}: configure AWS credentials and region (aws configure, AWS_PROFILE, or AWS_REGION)"
    response = getattr(error, "response", None)
    if isinstance(response, dict) and "Error" in response:  # botocore ClientError and its modeled subclasses
        code = response["Error"].get("Code") or name  # ClientException, ServerException, AccessDenied...
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        why = "AWS failed the call, retry later" if code == "ServerException" or (status or 0) >= 500 \
            else "AWS refused the call"
        return f"{why} ({code}): {response['Error'].get('Message') or error}"
    if any(cls.__name__ == "ApiException" for cls in type(error).__mro__):  # and ForbiddenException...
        status = getattr(error, "status", None)
        hint = ": check the kubeconfig's credentials and that your identity may create Jobs and ConfigMaps" \
            if status in (401, 403) else (": the Kubernetes API failed, retry later" if (status or 0) >= 500 else "")
        return f"the Kubernetes API refused the call ({status} {getattr(error, 'reason', '')}){hint}"
    if name in NETWORK_ERRORS or isinstance(error, (ConnectionError, TimeoutError)):
        return f"cannot reach the API or it did not answer ({name}: {error}): check the network, VPN, or the " \
               "endpoint's allow-list, then retry"
    return None


__all__ = ["SmokeResult", "access_problems", "run_on_stack", "sweep_on_stack"]
