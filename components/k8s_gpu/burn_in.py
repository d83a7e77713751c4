"""Burn-in admission's Kubernetes objects: pure data, no Pulumi (the component declares them, tests validate them
against Kubernetes' OpenAPI schemas).

The daemonset runs on every GPU node (tolerating the burn-in taint and the node's others): init containers check
that the node is still pending, run DCGM's diagnostics, then the probe and the verdict, which untaints or labels
the node (``burn_in_agent.py``); a pause container then holds nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from .. import catalog, platforms
from ..images import SMOKE_IMAGE
from . import facts
from .args import BurnInArgs
from .install import gpu_node_affinity, gpu_toleration

AGENT = "burn_in_agent.py"
GPUS_BY_TYPE = "gpus.json"
PROBE_TIMEOUT_S = 900
"""The probe's limit on one node (its quick GEMM and HBM tests take about a minute on 8 GPUs)."""
DCGM_TIMEOUT_S = 3600
"""The DCGM diagnostics' limit (level 2 takes about two minutes, level 3 about half an hour)."""


def agent_source() -> str:
    """The admission script shipped in the ConfigMap (a file of this package, not imported)."""
    return (Path(__file__).parent / AGENT).read_text()


def gpus_by_type(platform: str, types: catalog.Catalog = catalog.FILE) -> dict[str, int]:
    """The GPU count in ``types`` (the component's catalog: the file's rows and its declared types) of each of the
    platform's instance types (GCP N1 rows, whose count is per pool, left out): the count the burn-in expects on a
    node of that type."""
    cloud = platforms.require(platform).cloud
    return {r.name: r.gpus for r in types.rows() if r.cloud == cloud and ":" not in r.name}


def dcgm_command(level: int) -> str:
    """Start DCGM's host engine and run its diagnostics (killed after :data:`DCGM_TIMEOUT_S`: exit status 124),
    keeping the output and exit status for the verdict."""
    return ("[ -f /results/skip ] && exit 0; nv-hostengine; "
            f"timeout {DCGM_TIMEOUT_S} dcgmi diag -r {level} > /results/dcgm.txt 2>&1; echo $? > /results/dcgm.rc; "
            "cat /results/dcgm.txt")


DRIVER_MOUNT = "/usr/local/nvidia"
"""Where a driver the node image keeps outside the usual paths (GKE's ``/home/kubernetes/bin/nvidia``) is mounted:
the path GKE's own device plugin gives GPU containers."""


def manifests(namespace: str, platform: facts.Platform, taints: Sequence[facts.Taint],
              burn_in: BurnInArgs, driver_root: str = "", types: catalog.Catalog = catalog.FILE
              ) -> list[dict[str, Any]]:
    """ConfigMap, ServiceAccount, ClusterRole (get and patch nodes, nothing else), ClusterRoleBinding, DaemonSet.
    ``taints``: every taint a GPU node may carry besides the platform's (the burn-in taint among them).
    ``driver_root``: the host directory of a driver that no container runtime mounts (GKE's own driver: its device
    plugin gives it only to pods that ask for GPUs, and a daemonset that asked would hold them for good), mounted
    read-only at :data:`DRIVER_MOUNT` for DCGM and the probe. ``types``: the catalog whose GPU counts the burn-in
    expects (:func:`gpus_by_type`)."""
    name = facts.BURN_IN_NAME
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/managed-by": "gpuready"}
    meta = {"name": name, "namespace": namespace, "labels": labels}
    files = {**{k: v for k, v in sorted(burn_in.probe_files.items())}, AGENT: agent_source(),
             GPUS_BY_TYPE: json.dumps(gpus_by_type(platform.name, types), sort_keys=True)}
    node_env = [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                {"name": "BURN_IN_TAINT_KEY", "value": platform.burn_in_taint.key}]
    driver_env = [{"name": "LD_LIBRARY_PATH", "value": f"{DRIVER_MOUNT}/lib64"}] if driver_root else []
    gpu_env = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
               {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"}, *node_env, *driver_env]
    driver = [{"name": "driver", "mountPath": DRIVER_MOUNT, "readOnly": True}] if driver_root else []
    mounts = [{"name": "results", "mountPath": "/results"}]
    scripts = [{"name": "scripts", "mountPath": "/gpuready", "readOnly": True}]
    agent = ["python3", f"/gpuready/{AGENT}"]
    pod = {
        "serviceAccountName": name,
        "priorityClassName": "system-node-critical",
        "tolerations": [gpu_toleration(t) for t in (platform.taint, *taints)],
        "affinity": gpu_node_affinity(platform),
        "initContainers": [
            {"name": "check", "image": SMOKE_IMAGE, "command": [*agent, "check"], "env": node_env,
             "volumeMounts": mounts + scripts},
            {"name": "dcgm-diag", "image": facts.DCGM_IMAGE, "command": ["sh", "-c", dcgm_command(burn_in.dcgm_level)],
             "env": gpu_env, "securityContext": {"privileged": True}, "volumeMounts": mounts + driver},
            {"name": "probe", "image": SMOKE_IMAGE, "command": [*agent, "admit"],
             "env": [*gpu_env, {"name": "BURN_IN_PROBE_TIMEOUT", "value": str(PROBE_TIMEOUT_S)}],
             "securityContext": {"privileged": True}, "volumeMounts": mounts + scripts + driver},
        ],
        "containers": [{"name": "hold", "image": facts.PAUSE_IMAGE,
                        "resources": {"requests": {"cpu": "1m", "memory": "8Mi"}}}],
        "volumes": [{"name": "results", "emptyDir": {}},
                    {"name": "scripts", "configMap": {"name": name}},
                    *([{"name": "driver", "hostPath": {"path": driver_root, "type": "Directory"}}]
                      if driver_root else [])],
    }
    return [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": files},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": name, "labels": labels},
         "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": name, "labels": labels},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
         "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]},
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta,
         "spec": {"selector": {"matchLabels": {"app.kubernetes.io/name": name}},
                  "updateStrategy": {"type": "RollingUpdate"},
                  "template": {"metadata": {"labels": labels}, "spec": pod}}},
    ]
