"""Building an EksGpuCluster under the mock runtime, for the tests in this folder."""

from __future__ import annotations

import dataclasses
from typing import Any

from gpuready_components.eks_gpu import ClusterArgs, EksGpuCluster, EksGpuClusterArgs, GpuNodeGroupArgs
from tests.conftest import render_component

CLUSTER = "aws:eks/cluster:Cluster"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LT = "aws:ec2/launchTemplate:LaunchTemplate"
ROLE = "aws:iam/role:Role"
ATTACH = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
OIDC = "aws:iam/openIdConnectProvider:OpenIdConnectProvider"
RELEASE = "kubernetes:helm.sh/v3:Release"


def args(node_group: dict[str, Any] | None = None, **overrides: Any) -> EksGpuClusterArgs:
    ng = GpuNodeGroupArgs(instance_types=["g6.xlarge", "g6.12xlarge"], max_size=3)
    base = EksGpuClusterArgs(node_group=dataclasses.replace(ng, **(node_group or {})),
                             subnet_ids=["subnet-aaaaaaaa", "subnet-bbbbbbbb"], cluster=ClusterArgs())
    return dataclasses.replace(base, **overrides)


def build(render, node_group: dict[str, Any] | None = None, **overrides: Any):
    """Render one cluster; returns (rendering, component)."""
    return render_component(render, lambda: EksGpuCluster("ml", args(node_group, **overrides)))

