"""Building a GkeGpuCluster under the mock runtime, for the tests in this folder."""

from __future__ import annotations

import dataclasses
from typing import Any

from gpuready_components.gke_gpu import ClusterArgs, GkeGpuCluster, GkeGpuClusterArgs, GpuNodePoolArgs
from tests.conftest import render_component

CLUSTER = "gcp:container/cluster:Cluster"
NODE_POOL = "gcp:container/nodePool:NodePool"
RELEASE = "kubernetes:helm.sh/v3:Release"


def args(node_pool: dict[str, Any] | None = None, **overrides: Any) -> GkeGpuClusterArgs:
    pool = GpuNodePoolArgs(machine_type="g2-standard-8", max_nodes=3)
    base = GkeGpuClusterArgs(location="us-central1", project="ml-project",
                             node_pool=dataclasses.replace(pool, **(node_pool or {})), cluster=ClusterArgs())
    return dataclasses.replace(base, **overrides)


def build(render, node_pool: dict[str, Any] | None = None, **overrides: Any):
    """Render one cluster; returns (rendering, component)."""
    return render_component(render, lambda: GkeGpuCluster("ml", args(node_pool, **overrides)))

