"""Which commands a kubeconfig may make the Kubernetes client run: the credential plugins gpuready's stacks write.

A kubeconfig's user can name a program the client runs for a token (``exec``, or a legacy ``auth-provider``'s
``cmd-path``), so an outputs file someone else wrote could run anything on this machine. :func:`checked` lets
through only the commands the Kubernetes platforms' stacks emit (each descriptor's ``credentials``: ``aws eks
get-token`` on EKS...), found on ``PATH``, unless the user says the file is trusted.
"""

from __future__ import annotations

import os
import shlex
import shutil
from typing import Any, Optional

from gpuready_components import platforms

from ..errors import UserError

TRUST_FLAG = "--trust-kubeconfig-exec"
"""The ``gpuready smoke`` flag (SDK: ``trust_kubeconfig_exec=True``) that runs any command the kubeconfig names."""

def _known() -> dict[str, Any]:
    """Credential plugin command -> the plugin (its arguments, its environment) of each registered platform."""
    return {p.credentials.command: p.credentials for p in platforms.every() if p.credentials is not None}


def _env() -> frozenset[str]:
    """Environment a trusted exec entry may set (what the clouds' CLIs write, ``AWS_PROFILE``...); anything else
    (``LD_PRELOAD``, ``PATH``, a config file path) could make a known command run other code."""
    return frozenset().union(*(plugin.env for plugin in _known().values()))


def _on_path(command: str) -> Optional[str]:
    """The plugin ``command`` is, when it is one of :func:`_known` as ``PATH`` finds it; else ``None``."""
    name = os.path.basename(command).removesuffix(".exe")
    if name not in _known():
        return None
    if command == name or command == f"{name}.exe":
        return name
    found = shutil.which(name)
    return name if found and os.path.realpath(found) == os.path.realpath(command) else None


def _printable(text: str) -> str:
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _users(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The user entries the client may use: the current context's, or every one when that cannot be told."""
    users = [u for u in data.get("users") or [] if isinstance(u, dict)]
    contexts = {c.get("name"): c.get("context") for c in data.get("contexts") or [] if isinstance(c, dict)}
    context = contexts.get(data.get("current-context"))
    name = context.get("user") if isinstance(context, dict) else None
    chosen = [u for u in users if u.get("name") == name]
    return chosen or users


def credential_command(data: dict[str, Any]) -> str:
    """The credential command (``exec``) the kubeconfig ``data`` runs for its current user, as a shell line."""
    for entry in _users(data):
        spec = (entry.get("user") or {}).get("exec") if isinstance(entry.get("user"), dict) else None
        if isinstance(spec, dict):
            return _printable(shlex.join([str(spec.get("command") or ""), *map(str, spec.get("args") or [])]))
    return "kubectl get nodes"


def _problem(user: Any) -> Optional[str]:
    """Why the user entry's credential command may not run, or ``None``."""
    if not isinstance(user, dict):
        return None
    provider = user.get("auth-provider")
    cmd_path = (provider.get("config") or {}).get("cmd-path") if isinstance(provider, dict) else None
    if cmd_path:
        return f"runs `{_printable(str(cmd_path))}` (auth-provider cmd-path), which no gpuready stack writes"
    spec = user.get("exec")
    if not isinstance(spec, dict):
        return None
    command, args = str(spec.get("command") or ""), [str(a) for a in spec.get("args") or []]
    shown = _printable(shlex.join([command, *args]))
    name = _on_path(command)
    if name is None or not _known()[name].accepts(args):
        said = [f"`{plugin.said}`" for plugin in _known().values()] or ["none"]
        listed = " or ".join(filter(None, (", ".join(said[:-1]), said[-1])))
        return f"runs `{shown}` for credentials, which no gpuready stack writes (they run {listed}, found on PATH)"
    env = sorted({str(e.get("name")) for e in spec.get("env") or [] if isinstance(e, dict)} - _env())
    if env:
        return f"runs `{shown}` with {', '.join(map(_printable, env))} set, which no gpuready stack writes"
    return None


def usable(data: Any) -> dict[str, Any]:
    """``data`` (a parsed kubeconfig), once it is a map whose ``current-context`` names one of its contexts;
    otherwise a :class:`UserError` saying what to set."""
    if not isinstance(data, dict):
        raise UserError("the kubeconfig in the stack's outputs is not a kubeconfig (a YAML or JSON map): re-save the "
                        "outputs with `pulumi stack output --json --show-secrets > outputs.json`")
    names = [str(c.get("name")) for c in data.get("contexts") or [] if isinstance(c, dict)]
    current = data.get("current-context")
    if not current or current not in names:
        now = f"names {_printable(str(current))!r}, not one of its contexts" if current else "is not set"
        fix = f"set it to one of its contexts ({', '.join(map(_printable, names))})" if names else \
            "the kubeconfig has no contexts: re-save the outputs with `pulumi stack output --json --show-secrets`"
        raise UserError(f"the kubeconfig in the stack's outputs: current-context {now}: {fix}")
    return data


def checked(data: Any, trust_exec: bool = False) -> Any:
    """``data`` (a parsed kubeconfig), once every credential command it would make the client run is one the
    stacks write; with ``trust_exec``, as it is.

    Raises :class:`UserError` naming the command and :data:`TRUST_FLAG` otherwise, before anything runs.
    """
    if trust_exec or not isinstance(data, dict):
        return data
    for entry in _users(data):
        problem = _problem(entry.get("user"))
        if problem:
            raise UserError(f"the kubeconfig in the stack's outputs (user {_printable(str(entry.get('name')))!r}) "
                            f"{problem}; gpuready did not run it. If you wrote this outputs file and trust it, pass "
                            f"{TRUST_FLAG} (SDK: trust_kubeconfig_exec=True)")
    return data
