"""Kubernetes rules: GPU nodes are tainted and every NVIDIA daemonset tolerates the taint, nothing NVIDIA is installed
twice, charts are pinned, and GPU metrics are collected."""

from __future__ import annotations

from typing import Optional

from gpuready_components import platforms
from gpuready_components.k8s_gpu import facts as k8s_facts
from gpuready_components.k8s_gpu.scheduling import tolerates
from gpuready.resources import gcp, kubernetes, kubernetes_clusters, kubernetes_pools, read, tokens

from ..gpu import facts, of_kind
from ..rule import ADVISORY, MANDATORY, each, known, resource_rule, stack_rule

def node_taints(pool) -> list[k8s_facts.Taint]:
    """The taints a pool's nodes register with, as Kubernetes spells them."""
    return facts(pool).taints


def gpu_pools(resources):
    """The GPU node pools, and the error of the first pool whose machine types are unknown (None: all known)."""
    found, unknown = known(of_kind(resources, *kubernetes_pools()), lambda pool: pool if facts(pool).is_gpu else None)
    return [pool for pool in found if pool], unknown


def _nvidia_releases(resources):
    return [r for r in of_kind(resources, kubernetes.HelmRelease) if facts(r).chart in k8s_facts.CHART_DAEMONSETS]


def _check_taints(resources, config):
    pools, unknown = gpu_pools(resources)

    def check_pool(pool):
        wanted = platforms.node_facts(facts(pool).platform().name).taint
        if not any(t.key in (wanted.key, "nvidia.com/gpu") and t.effect == "NoSchedule" for t in node_taints(pool)):
            yield pool, ("GPU nodes without the GPU taint: any pod lands on them and holds a GPU node for CPU "
                         "work"), f"taint the pool {wanted.key}={wanted.value}:{wanted.effect}"

    yield from each(pools, check_pool)
    if unknown:
        yield unknown
    taints, unknown_taints = known(pools, lambda pool: [(t, pool.name) for t in node_taints(pool)])
    hard = {(t, pool) for pool_taints in taints for t, pool in pool_taints if t.effect in ("NoSchedule", "NoExecute")}
    yield from each(_nvidia_releases(resources), lambda release: _check_tolerations(release, hard,
                                                                                   unknown or unknown_taints))


def _check_tolerations(release, hard, unknown):
    """A release's daemonsets against the known GPU-node taints ``hard``; then ``unknown``, the error of a pool whose
    type or taints are unknown, if any daemonset runs (it may not tolerate that pool's taints)."""
    chart = facts(release)
    running = chart.nvidia_daemonsets
    for daemonset in running:
        tolerations = chart.value(daemonset.tolerations_key, list(daemonset.default_tolerations))
        for taint, pool in sorted(hard, key=lambda x: (x[1], x[0].key)):
            if not tolerates(tolerations, taint):
                yield release, (f"its {daemonset.name} daemonset does not tolerate {taint.key}={taint.value}:"
                                f"{taint.effect} of {pool}, so it never runs on those GPU nodes"), (
                    f"add {{key: {taint.key}, operator: Exists, effect: {taint.effect}}} to "
                    f"{daemonset.tolerations_key} in the release values")
    if unknown and running:
        raise unknown


gpu_taint_tolerated = stack_rule(
    "gpu-taint-tolerated",
    "GPU node groups and pools carry the GPU taint, and every NVIDIA daemonset the stack installs tolerates every "
    "taint of the GPU nodes (compares the pools' taints with the Helm values and the pinned charts' defaults).",
    MANDATORY, _check_taints)


def _node_image(pool) -> Optional[str]:
    key = facts(pool).node_image
    return key if key in platforms.node_images() else None


_INSTALLS = {
    "gpu-operator": ((k8s_facts.DRIVER, "driver.enabled"), (k8s_facts.TOOLKIT, "toolkit.enabled"),
                     (k8s_facts.DEVICE_PLUGIN, "devicePlugin.enabled")),
    "nvidia-device-plugin": ((k8s_facts.DEVICE_PLUGIN, "devicePlugin.enabled"),),
}
"""Chart -> (software, values switch); every switch defaults to on in the pinned charts."""


def _check_double_install(resources, config):
    pools, unknown = gpu_pools(resources)
    images, unknown_image = known(pools, lambda pool: (pool.name, _node_image(pool)))
    unknown = unknown or unknown_image

    def check(release):
        chart = facts(release)
        installs = [(software, switch) for software, switch in _INSTALLS.get(chart.chart, ())
                    if chart.value(switch, True)]
        for software, switch in installs:
            for pool, image in sorted(images):
                if image and software in platforms.node_images()[image].ships:
                    yield release, (f"installs the {software} that {pool}'s node image ({image}) already ships: two "
                                    f"of them fight over the GPUs"), f"set {switch}: false in the release values"
        if unknown and installs:  # the pool whose image is unknown may ship it too
            raise unknown

    yield from each(_nvidia_releases(resources), check)


no_double_driver = stack_rule(
    "no-double-driver",
    "No driver, container toolkit or device plugin is installed twice: a GPU Operator or device plugin chart "
    "installing what the GPU nodes' image already ships.",
    MANDATORY, _check_double_install)


def _check_pinned(resource_type, name, props, config):
    chart = read(resource_type, props)
    if not chart.version:
        yield (f"chart {chart.chart} without a version: each `pulumi up` may install a newer chart",
               "pin version to the chart version you tested")


helm_pinned_version = resource_rule(
    "helm-pinned-version", "Helm releases pin a chart version.", MANDATORY, tokens(kubernetes.HelmRelease),
    _check_pinned)


def _check_metrics(resources, config):
    pools, unknown = gpu_pools(resources)
    if not pools and not unknown:
        return
    if any(facts(r).dcgm_exporter for r in of_kind(resources, kubernetes.HelmRelease)):
        return
    if any(facts(c).managed_dcgm for c in of_kind(resources, gcp.GkeCluster)):
        return
    if not pools:  # the only pools that may have GPUs have unknown machine types
        raise unknown
    yield None, "GPU nodes without GPU metrics: nobody sees idle, throttled or failing GPUs", \
        "install the DCGM exporter (dcgmExporter: true) or, on GKE, enable managed DCGM metrics"


gpu_metrics = stack_rule(
    "gpu-metrics",
    "A cluster with GPU nodes runs a DCGM exporter (its chart or the GPU Operator's) or the platform's managed DCGM.",
    MANDATORY, _check_metrics)

def _check_repair(resources, config):
    pools, unknown = gpu_pools(resources)

    def check_pool(pool):
        reader = facts(pool)
        repair = reader.repair
        if repair is None:
            return
        turn_on, bound, one_at_a_time = reader.REPAIR_FIXES
        if not repair.on:
            yield pool, ("GPU nodes that fail (a fallen-off GPU, double-bit ECC errors, a dead NVLink) stay in the "
                         "pool until someone notices"), turn_on
            return
        if repair.own_limits:
            return
        if repair.stops_above is None or repair.stops_above >= 1:
            yield pool, ("node repair never stops: one cause that fails every node (a bad driver, an AMI) would "
                         "reboot or replace the whole pool, and jobs with it"), bound
        if repair.parallel is not None and repair.parallel >= 1:
            yield pool, "node repair may take every node of the pool at once", one_at_a_time

    yield from each(pools, check_pool)
    if unknown:
        yield unknown


gpu_pool_repair = stack_rule(
    "gpu-pool-repair",
    "Kubernetes GPU pools repair failing nodes automatically (EKS nodeRepairConfig, GKE auto-repair; AKS and "
    "EKS Auto Mode always do), with limits that stop one bad cause from draining the whole pool.",
    ADVISORY, _check_repair)

DRA_MINIMUM = ".".join(map(str, k8s_facts.DRA_MIN_KUBERNETES))


def _dra_releases(resources):
    return [r for r in of_kind(resources, kubernetes.HelmRelease) if facts(r).dra_driver]


def _check_dra_version(resources, config):
    if not _dra_releases(resources):
        return

    def check(cluster):
        reader = facts(cluster)
        version = reader.kubernetes_version
        if version is None:
            yield cluster, (f"NVIDIA's DRA driver needs Kubernetes {DRA_MINIMUM} or later (resource.k8s.io/v1), "
                            "and the cluster's version is left to the platform's default"), reader.VERSION_FIX
        elif not k8s_facts.dra_supported(str(version)):
            yield cluster, (f"Kubernetes {version} with NVIDIA's DRA driver, which needs {DRA_MINIMUM} or later "
                            "(resource.k8s.io/v1): its DeviceClasses and ResourceClaims are refused"), \
                reader.VERSION_FIX

    yield from each(of_kind(resources, *kubernetes_clusters()), check)


gpu_dra_kubernetes_version = stack_rule(
    "gpu-dra-kubernetes-version",
    f"A cluster the stack creates with NVIDIA's DRA driver states a Kubernetes version of {DRA_MINIMUM} or later "
    "(the driver's prerequisite; resource.k8s.io/v1 is GA in 1.34). An existing cluster's version is checked at "
    "preview from gpuready:kubernetesVersion.", MANDATORY, _check_dra_version)


def _check_dra_beside_device_plugin(resources, config):
    if not _dra_releases(resources):
        return
    for release in of_kind(resources, kubernetes.HelmRelease):
        if facts(release).device_plugin:
            yield release, ("runs NVIDIA's device plugin on the GPU nodes where the DRA driver gives out the same "
                            "GPUs: both hand them to pods, and a GPU goes to two pods at once"), \
                "set devicePlugin.enabled: false in the release values (gpuready:install: dra does)"
    pools, unknown = gpu_pools(resources)
    images, unknown_image = known(pools, lambda pool: (pool, _node_image(pool)))
    for pool, image in images:
        if image and k8s_facts.DEVICE_PLUGIN in platforms.node_images()[image].ships:
            yield pool, (f"its node image ({image}) runs its own device plugin, beside the DRA driver that gives out "
                         "the same GPUs"), "use a node image without a device plugin, or install device-plugin"
    if unknown or unknown_image:
        yield unknown or unknown_image


gpu_dra_no_device_plugin = stack_rule(
    "gpu-dra-no-device-plugin",
    "Where NVIDIA's DRA driver gives out GPUs, no device plugin runs on the same nodes: neither a chart's (the device "
    "plugin chart, the GPU Operator's) nor the node image's own (Bottlerocket, EKS Auto Mode, GKE's unless turned "
    "off by label).", MANDATORY, _check_dra_beside_device_plugin)

def _check_dra_scale_from_zero(resources, config):
    if not _dra_releases(resources):
        return
    pools, unknown = gpu_pools(resources)

    def check(pool):
        reader = facts(pool)
        minimum, where = reader.minimum
        if minimum == 0:
            key = f" ({reader.MINIMUM_KEY})" if reader.MINIMUM_KEY else ""
            yield pool, (f"at {where} 0 its GPUs are claimed through DRA, and a claim is matched against the "
                         "ResourceSlices of running nodes: with none running, an autoscaler may never add the first "
                         "node, and GPU pods wait"), f"keep 1 node or more{key}, and check with gpuready smoke"

    yield from each(pools, check)
    if unknown:
        yield unknown


gpu_dra_scale_from_zero = stack_rule(
    "gpu-dra-scale-from-zero",
    "Where NVIDIA's DRA driver gives out GPUs, GPU pools keep a node: a pod's ResourceClaim is matched against the "
    "ResourceSlices of running nodes, which an autoscaler cannot always simulate for an empty pool "
    "(kubernetes/autoscaler#7724, #10277).", ADVISORY, _check_dra_scale_from_zero)

RULES = [gpu_taint_tolerated, no_double_driver, helm_pinned_version, gpu_metrics, gpu_pool_repair,
         gpu_dra_kubernetes_version, gpu_dra_no_device_plugin, gpu_dra_scale_from_zero]
