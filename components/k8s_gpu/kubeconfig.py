"""Kubeconfigs that authenticate with the cloud's own credential plugin, as each cloud's CLI writes them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable, Sequence


def _any(args: Sequence[str]) -> bool:
    return True


@dataclass(frozen=True)
class CredentialPlugin:
    """The credential plugin (client-go exec) a Kubernetes platform's kubeconfig runs: its descriptor's
    ``credentials``, the only commands ``gpuready smoke`` lets an outputs file's kubeconfig run unless told to trust
    it (``gpuready.smoke.kubeconfig``)."""

    command: str
    """The program, as ``PATH`` finds it (``aws``)."""
    said: str
    """The command as the stack writes it, for a message (``aws eks get-token``)."""
    accepts: Callable[[Sequence[str]], bool] = _any
    """Whether ``args`` are the ones the stack (and the cloud's CLI) write."""
    env: frozenset[str] = frozenset()
    """Environment the entry may set (what the cloud's CLI writes beside it)."""


def kubeconfig(cluster_name: str, server: str, certificate_authority: str, command: str, args: Sequence[str],
               install_hint: str) -> str:
    """A kubeconfig (JSON) for one cluster whose user runs ``command args`` for a token (client-go exec plugin)."""
    return json.dumps({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster_name, "cluster": {
            "server": server, "certificate-authority-data": certificate_authority}}],
        "contexts": [{"name": cluster_name, "context": {"cluster": cluster_name, "user": cluster_name}}],
        "current-context": cluster_name,
        "users": [{"name": cluster_name, "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": command,
            "args": list(args),
            "interactiveMode": "Never",
            "installHint": install_hint,
        }}}],
    })
