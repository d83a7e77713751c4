"""What every Kubernetes GPU platform component (EKS, GKE, AKS) exposes, set and registered in one place."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence

import pulumi

from .. import metaflow, platforms
from ..outputs import Contract
from . import facts

if TYPE_CHECKING:
    from .component import K8sGpuSoftware


class GpuCluster(pulumi.ComponentResource):
    """Base of the platform components: the cluster's access, how its GPU nodes look, and their capacity."""

    cluster_name: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    """Secret."""
    gpu_taint: dict[str, str]
    """The platform's GPU taint, as Kubernetes spells it: ``{key, value, effect}``."""
    gpu_node_taints: list[dict[str, str]]
    """Every taint the GPU nodes carry (the GPU taint, and e.g. AKS's Spot taint): what a pod must tolerate."""
    gpu_node_labels: dict[str, str]
    """Labels the GPU nodes carry from boot: what a pod selects them by."""
    software: "K8sGpuSoftware"
    gpu_sharing: Optional[str] = None
    """How the platform itself shares each GPU between pods (GKE's time-sharing, MPS or GPU partitions); the NVIDIA
    software's time-slicing or MIG otherwise (``software.sharing``)."""
    gpu_fabric: Optional[str] = None
    """The GPU nodes' fabric for NCCL across nodes (``efa``, ``ib``, ``tcpx``, ``tcpxo``); None: TCP sockets."""
    gpu_efa_interfaces: Optional[int] = None
    """EFA interfaces of each GPU node (with ``gpu_fabric`` ``efa``): the ``vpc.amazonaws.com/efa`` devices a pod
    asks for to use them all."""
    outputs: dict[str, Any]
    """What the component registered: the platform's output contract (``outputs.py``), for the stack to export."""

    def _gpu_nodes(self, platform: str, labels: Mapping[str, str],
                   extra_taints: Sequence[facts.Taint] = ()) -> facts.Taint:
        """Record the GPU nodes' taints and labels; returns the platform's GPU taint."""
        taint = platforms.node_facts(platform).taint
        self.gpu_taint = {"key": taint.key, "value": taint.value, "effect": taint.effect}
        self.gpu_node_taints = [{"key": t.key, "value": t.value, "effect": t.effect} for t in (taint, *extra_taints)]
        self.gpu_node_labels = dict(labels)
        return taint

    def _register(self, contract: Contract, cluster_name: pulumi.Output[str], kubeconfig: pulumi.Output[str],
                  capacity: Any, **extra: Any) -> None:
        """Set the access outputs and register exactly the outputs of ``contract`` (``extra``: the platform's own,
        its GPU pool's name included), kept as :attr:`outputs` for the stack to export."""
        self.cluster_name, self.kubeconfig = cluster_name, kubeconfig
        self.outputs = contract.values({
            "platform": contract.platform,
            "clusterName": cluster_name,
            "kubeconfig": kubeconfig,
            **extra,
            "gpuTaint": self.gpu_taint,
            "gpuNodeTaints": self.gpu_node_taints,
            "gpuNodeLabels": self.gpu_node_labels,
            "gpuNamespace": self.software.namespace,
            "gpuFabric": self.gpu_fabric,
            "gpuSharing": self.gpu_sharing or self.software.sharing,
            "gpuEfaInterfaces": self.gpu_efa_interfaces,
            "gpuModels": list(capacity.gpu_models),
            "maxGpusPerNode": capacity.max_gpus_per_node,
            "maxGpus": capacity.max_gpus,
            "maxUsdPerHour": capacity.max_usd_per_hour,
            "metaflowProfile": metaflow.kubernetes_profile(
                namespace=self.software.job_namespace, service_account=self.software.job_service_account,
                node_labels=self.gpu_node_labels, taints=self.gpu_node_taints),
        })
        self.register_outputs(self.outputs)
