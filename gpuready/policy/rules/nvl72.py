"""GB200/GB300 NVL72 rules: a rack's pool gets multi-node NVLink only through the DRA driver's ComputeDomains, and
its jobs stay on one NVLink domain only where its nodes carry the platform's NVLink-domain label (GPU feature
discovery's ``nvidia.com/gpu.clique``; GKE labels ``cloud.google.com/gce-topology-subblock`` itself)."""

from __future__ import annotations

from gpuready.resources import kubernetes
from gpuready_components import platforms
from gpuready_components.k8s_gpu import compute_domain, facts as k8s_facts

from ..gpu import facts, of_kind
from ..rule import MANDATORY, each, stack_rule
from .kubernetes import gpu_pools

GFD_SWITCHES = {"nvidia-device-plugin": "gfd.enabled", "gpu-operator": "gfd.enabled"}
"""Chart -> the values switch of its GPU feature discovery (on by default in the GPU Operator's chart, off in the
device plugin's: v0.20.0's values.yaml)."""
GFD_DEFAULTS = {"nvidia-device-plugin": False, "gpu-operator": True}


def _releases(resources):
    return [facts(r) for r in of_kind(resources, kubernetes.HelmRelease)]


def _compute_domains(releases) -> bool:
    """A DRA driver release with ComputeDomains on (the chart's own default is on; gpuready always says)."""
    chart = k8s_facts.CHARTS[k8s_facts.DRA_CHART].name
    return any(r.chart == chart and r.value("resources.computeDomains.enabled", True) for r in releases)


def _labels_cliques(releases) -> bool:
    return any(r.chart in GFD_SWITCHES and r.value(GFD_SWITCHES[r.chart], GFD_DEFAULTS[r.chart]) for r in releases)


def _check(resources, config):
    pools, unknown = gpu_pools(resources)
    racks = [p for p in pools if compute_domain.needs_compute_domains(tuple(r.gpu_model for r in facts(p).gpu_rows))]
    releases = _releases(resources)
    domains, cliques = _compute_domains(releases), _labels_cliques(releases)

    def check(pool):
        reader = facts(pool)
        models = "/".join(sorted({r.gpu_model for r in reader.gpu_rows if r.gpu_model in compute_domain.RACK_MODELS}))
        gfd_labels_it = platforms.node_facts(reader.platform().name).nvlink_domain_label == compute_domain.CLIQUE_LABEL
        if not domains:
            yield pool, (f"{models} NVL72 pool without the DRA driver's ComputeDomains: a job across its hosts gets "
                         "no IMEX channel, so NCCL crosses the network instead of the rack's NVLink"), \
                "set gpuready:install: dra and gpuready:computeDomains: true (Kubernetes 1.34 or later)"
        if gfd_labels_it and not cliques:
            yield pool, (f"{models} NVL72 pool whose nodes nobody labels {compute_domain.CLIQUE_LABEL}: a gang cannot "
                         "be kept on one NVLink domain (gpuready's multi-node smoke requires one and would never "
                         "schedule)"), "set gpuready:gpuFeatureDiscovery: true (GPU feature discovery labels it)"

    yield from each(racks, check)
    if unknown:
        yield unknown


gpu_nvl72_compute_domains = stack_rule(
    "gpu-nvl72-compute-domains",
    "A GB200 or GB300 NVL72 pool runs NVIDIA's DRA driver with ComputeDomains (one IMEX channel per job: multi-node "
    "NVLink) and, where the platform does not label NVLink domains itself (GKE does), GPU feature discovery (the "
    "nvidia.com/gpu.clique label that keeps a job on one NVLink domain).",
    MANDATORY, _check)

RULES = [gpu_nvl72_compute_domains]
