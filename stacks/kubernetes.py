"""Config keys and exports every Kubernetes reference stack shares (eks, gke, aks)."""

from __future__ import annotations

from typing import Any, Optional

import pulumi

from components.errors import ConfigError
from components.k8s_gpu import GpuSoftwareOptions, MigArgs

from .config import StackConfig

SOFTWARE_KEYS = {
    "install": "device-plugin (default) or gpu-operator: who installs the NVIDIA software the node image lacks",
    "timeSlicingReplicas": "share each GPU between this many pods (2-64) by time-slicing",
    "mig": "partition GPUs with MIG: {strategy: single|mixed, config: all-balanced|all-1g.10gb...}",
    "gpuFeatureDiscovery": "label nodes with GPU product, memory and CUDA version (default: on where the platform "
                           "does not label GPUs)",
    "dcgmExporter": "run NVIDIA's DCGM exporter for GPU metrics (default true; GKE: managed DCGM instead)",
    "prometheusOperator": "create a ServiceMonitor for the DCGM exporter; needs the Prometheus Operator's CRDs",
}
API_ACCESS_KEYS = {
    "apiAllowedCidrs": "CIDRs that may reach the new cluster's Kubernetes API (list; required with a public "
                       "endpoint): your egress IP as /32, your VPN's range, or [0.0.0.0/0] for anywhere",
}
SET_API_ALLOWED_CIDRS = ("pulumi config set --path 'gpuready:apiAllowedCidrs[0]' "
                         "$(curl -s https://checkip.amazonaws.com)/32")
"""The fix named when the allow-list is missing: this machine's public address, which ``pulumi up`` calls from."""
EXISTING_CLUSTER_KEYS = {
    "existingCluster": "name of an existing cluster to add the GPU nodes to, instead of creating one",
    "kubeconfig": "kubeconfig of existingCluster (set it with --secret)",
}


def software_options(config: StackConfig) -> GpuSoftwareOptions:
    mig = config.get_object("mig", {"strategy": str, "config": str})
    return GpuSoftwareOptions(
        install=config.get_str("install", GpuSoftwareOptions().install),
        time_slicing_replicas=config.get_int("timeSlicingReplicas", None),
        mig=MigArgs(**mig) if mig is not None else None,
        gpu_feature_discovery=config.get_bool("gpuFeatureDiscovery", None),
        dcgm_exporter=config.get_bool("dcgmExporter", None),
        prometheus_operator=config.get_bool("prometheusOperator", False),
    )


def api_allowed_cidrs(config: StackConfig, existing: bool, public: bool = True) -> list[str]:
    """The allow-list of a new cluster's public API endpoint, which must be set: no one can reach an endpoint behind
    a made-up range, and an open one must be asked for (``[0.0.0.0/0]``, which the policy pack flags)."""
    cidrs = config.get_list("apiAllowedCidrs")
    if existing:
        if cidrs is not None:
            raise ConfigError("gpuready:apiAllowedCidrs", cidrs, "only read when the stack creates the cluster",
                              "remove it; set who reaches your existing cluster's API where the cluster is managed")
        return []
    if public and not cidrs:
        raise ConfigError("gpuready:apiAllowedCidrs", cidrs, "required: the CIDRs that may reach the new cluster's "
                          "public Kubernetes API endpoint, which pulumi up's Helm releases and gpuready smoke call",
                          f"{SET_API_ALLOWED_CIDRS} (this machine's address), or a list of your networks; "
                          "[\"0.0.0.0/0\"] allows anywhere (the policy pack flags it)")
    return cidrs or []


def existing_cluster(config: StackConfig) -> Optional[tuple[str, pulumi.Output[str]]]:
    """``(name, kubeconfig)`` of the existing cluster the config names, or ``None`` to create one."""
    name = config.get_str("existingCluster")
    kubeconfig = config.get_secret("kubeconfig")
    if name and kubeconfig is None:
        raise ConfigError("gpuready:kubeconfig", None, "needed with existingCluster to install the GPU software",
                          "pulumi config set --secret gpuready:kubeconfig \"$(cat KUBECONFIG)\"")
    if kubeconfig is not None and not name:
        raise ConfigError("gpuready:kubeconfig", "[secret]", "only read with existingCluster",
                          "set gpuready:existingCluster too, or remove gpuready:kubeconfig")
    return (name, kubeconfig) if name else None


def export(cluster: Any) -> None:
    """Export what the cluster's component registered: its platform's output contract, which ``gpuready smoke``
    reads."""
    for key, value in cluster.outputs.items():
        pulumi.export(key, value)
