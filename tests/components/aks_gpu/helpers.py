"""Building an AksGpuCluster under the mock runtime, for the tests in this folder."""

from __future__ import annotations

import dataclasses
from typing import Any

from gpuready_components.aks_gpu import AksGpuCluster, AksGpuClusterArgs, ClusterArgs, GpuAgentPoolArgs
from tests.conftest import render_component

CLUSTER = "azure-native:containerservice:ManagedCluster"
POOL = "azure-native:containerservice:AgentPool"
RELEASE = "kubernetes:helm.sh/v3:Release"
ROLE_ASSIGNMENT = "azure-native:authorization:RoleAssignment"


def args(node_pool: dict[str, Any] | None = None, **overrides: Any) -> AksGpuClusterArgs:
    pool = GpuAgentPoolArgs(vm_size="Standard_NC24ads_A100_v4", max_count=3)
    base = AksGpuClusterArgs(resource_group_name="ml-rg", location="eastus",
                             node_pool=dataclasses.replace(pool, **(node_pool or {})), cluster=ClusterArgs())
    return dataclasses.replace(base, **overrides)


def build(render, node_pool: dict[str, Any] | None = None, **overrides: Any):
    """Render one cluster; returns (rendering, component)."""
    return render_component(render, lambda: AksGpuCluster("ml", args(node_pool, **overrides)))
