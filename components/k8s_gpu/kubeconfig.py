"""Kubeconfigs that authenticate with the cloud's own credential plugin, as each cloud's CLI writes them."""

from __future__ import annotations

import json
from typing import Sequence


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
