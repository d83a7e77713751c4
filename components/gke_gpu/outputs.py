"""The outputs of a ``gke`` stack: what :class:`GkeGpuCluster` registers and ``gpuready smoke`` reads."""

from __future__ import annotations

from ..k8s_gpu.outputs import kubernetes_contract
from ..outputs import STRING, Output

OUTPUTS = kubernetes_contract("gke", Output("nodePoolName", STRING, "the GPU node pool"))
