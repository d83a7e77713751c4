"""The outputs of an ``eks`` stack: what :class:`EksGpuCluster` registers and ``gpuready smoke`` reads."""

from __future__ import annotations

from ..k8s_gpu.outputs import kubernetes_contract
from ..outputs import STRING, STRINGS, Output

OUTPUTS = kubernetes_contract(
    "eks",
    Output("nodeGroupName", STRING, "the first GPU node group (or the GPU NodePool)"),
    Output("oidcProviderArn", STRING, "the new cluster's IAM OIDC provider, for IRSA",
           when="when the stack creates the cluster"),
    Output("nodeGroupNames", STRINGS, "every GPU node group (or the GPU NodePool)"),
    Output("autoscaler", STRING, "what scales the GPU nodes from zero: cluster-autoscaler, karpenter, auto-mode or "
                                 "none", smoke=True),
)
