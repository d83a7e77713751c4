"""Config keys and exports every Kubernetes reference stack shares (eks, gke, aks)."""

from __future__ import annotations

from typing import Any, Optional

import pulumi

from gpuready_components.errors import ConfigError
from gpuready_components.k8s_gpu import BurnInArgs, GpuSoftwareOptions, MigArgs

from .config import StackConfig
from . import teams
from .settings import Setting, Settings, args_of

SOFTWARE = (
    Setting("install", str, "`device-plugin` (NVIDIA device plugin + DCGM exporter charts), `gpu-operator` (who "
            "installs the NVIDIA software the node image lacks) or `dra` (NVIDIA's DRA driver instead of the device "
            "plugin: jobs claim GPUs of DeviceClass `gpu.nvidia.com`; Kubernetes 1.34.2 or later, on gke and aks "
            "stated in `kubernetesVersion`; docs/platforms/dra.md)", ("software.install", "software"), GpuSoftwareOptions),
    Setting("computeDomains", bool, "with `install: dra`: the DRA driver's ComputeDomains (IMEX channels for "
            "multi-node NVLink, GB200/GB300 NVL72)", ("software.compute_domains",), GpuSoftwareOptions),
    Setting("timeSlicingReplicas", int, "advertise each GPU as this many `nvidia.com/gpu` (2-64), shared in turns",
            ("software.time_slicing_replicas",), GpuSoftwareOptions),
    Setting("mig", dict, "partition GPUs with MIG: `{strategy: single|mixed, config: all-balanced|all-1g.10gb...}`",
            ("software.mig",), sub=(Setting("strategy", str, fields=("software.mig.strategy",), feeds=MigArgs),
                                    Setting("config", str, fields=("software.mig.config",), feeds=MigArgs))),
    Setting("gpuFeatureDiscovery", bool, "label nodes with GPU product, memory and CUDA version (default: on where "
            "the platform does not label GPUs)", ("software.gpu_feature_discovery",), GpuSoftwareOptions),
    Setting("dcgmExporter", bool, "run NVIDIA's DCGM exporter for GPU metrics on :9400 (default: on, but where the "
            "platform's managed DCGM runs)", ("software.dcgm_exporter",), GpuSoftwareOptions),
    Setting("burnIn", bool, "admit new GPU nodes only after a burn-in: they boot tainted (eks "
            "`gpuready.io/burn-in`, gke and aks `startup-taint.cluster-autoscaler.kubernetes.io/gpuready-burn-in`, "
            "`=pending:NoSchedule`), a daemonset runs `dcgmi diag` and the probe, then removes the taint (pass) or "
            "labels the node `gpuready.io/burn-in=failed` with the cause", ("software.burn_in",), default=False),
    Setting("burnInDcgmLevel", int, "the burn-in's `dcgmi diag -r` level: 1 (seconds) to 4 (hours)",
            ("software.burn_in.dcgm_level",), BurnInArgs),
    Setting("jobNamespace", str, "an existing namespace where GPU jobs run; the stack creates their service account "
            "there (named in the `metaflowProfile` output)", ("software.job_namespace",), GpuSoftwareOptions),
    Setting("jobServiceAccount", str, "the service account created for GPU jobs (no permissions of its own)",
            ("software.job_service_account",), GpuSoftwareOptions),
    Setting("prometheusOperator", bool, "create a ServiceMonitor for the DCGM exporter and a PrometheusRule of GPU "
            "health alerts; needs the Prometheus Operator's CRDs in the cluster", ("software.prometheus_operator",),
            GpuSoftwareOptions),
    Setting("prometheusLabels", dict, "labels the Prometheus picks the ServiceMonitor and PrometheusRule by "
            "(kube-prometheus-stack: `release: <its release name>`) (map)", ("software.prometheus_labels",),
            GpuSoftwareOptions),
)
"""The keys of the NVIDIA software, the same on every Kubernetes platform."""


def api_access(field: str, sets: str) -> Setting:
    """``apiAllowedCidrs``, feeding the platform's cluster argument ``field``, which ``sets`` the cloud's setting."""
    return Setting("apiAllowedCidrs", list, "CIDRs that may reach the new cluster's Kubernetes API (required with a "
                   "public endpoint): your egress IP as /32, your VPN's range, or `[0.0.0.0/0]` for anywhere; sets "
                   f"{sets}; see below", (field,))


SET_API_ALLOWED_CIDRS = ("pulumi config set --path 'gpuready:apiAllowedCidrs[0]' "
                         "$(curl -s https://checkip.amazonaws.com)/32")
"""The fix named when the allow-list is missing: this machine's public address, which ``pulumi up`` calls from."""
EXISTING_CLUSTER = (
    Setting("existingCluster", str, "add the GPU nodes to this existing cluster instead of creating one",
            ("existing_cluster.name",)),
    Setting("kubeconfig", str, "its kubeconfig, for the Helm releases: `pulumi config set --secret "
            "gpuready:kubeconfig \"$(cat FILE)\"`", secret=True),
)


def kubernetes_settings(api_field: str, api_sets: str, *own: Setting) -> Settings:
    """A Kubernetes platform's settings: its ``own``, then those every Kubernetes platform reads (``apiAllowedCidrs``
    feeding its cluster argument ``api_field``, which sets the cloud's ``api_sets``; the teams and their Kueue
    queues)."""
    return Settings(*own, api_access(api_field, api_sets), *SOFTWARE, *EXISTING_CLUSTER, teams.SETTING,
                    teams.OVERCOMMIT)


def probe_files() -> dict[str, str]:
    """The probe the burn-in runs, read from the installed gpuready package (not imported: components ship it)."""
    from importlib import resources

    return {"core.py": resources.files("gpuready.probe").joinpath("core.py").read_text()}


def software_options(config: StackConfig) -> GpuSoftwareOptions:
    """The NVIDIA software options (every platform's component taints its GPU pools for burn-in admission)."""
    mig = config.read("mig")
    admission = None
    if config.read("burnIn"):
        admission = BurnInArgs(**config.args("software.burn_in", probe_files=probe_files()))
    return GpuSoftwareOptions(**config.args(
        "software", mig=MigArgs(**args_of(config.settings["mig"], mig)) if mig is not None else None,
        burn_in=admission))


def api_allowed_cidrs(config: StackConfig, existing: bool, public: bool = True) -> list[str]:
    """The allow-list of a new cluster's public API endpoint, which must be set: no one can reach an endpoint behind
    a made-up range, and an open one must be asked for (``[0.0.0.0/0]``, which the policy pack flags)."""
    cidrs = config.read("apiAllowedCidrs")
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
    name, kubeconfig = config.read("existingCluster"), config.read("kubeconfig")
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
