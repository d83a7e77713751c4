"""The outputs of an ``aks`` stack: what :class:`AksGpuCluster` registers and ``gpuready smoke`` reads."""

from __future__ import annotations

from ..k8s_gpu.outputs import kubernetes_contract
from ..outputs import STRING, Output

OUTPUTS = kubernetes_contract("aks", Output("nodePoolName", STRING, "the GPU agent pool"))
