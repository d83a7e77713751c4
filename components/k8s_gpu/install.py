"""Which chart installs what on a node image, and each chart's values: pure data, no Pulumi.

:func:`plan` decides, from what the node image ships and the install mode, the Helm releases and their values, so
that driver, container toolkit and device plugin each come from exactly one place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import dataclasses

import yaml

from .. import platforms
from . import facts, health
from .args import GpuSoftwareOptions, K8sGpuSoftwareArgs
from .validation import check


@dataclass(frozen=True)
class Release:
    """One Helm release: the pinned chart, its values, and the node software it installs."""

    key: str
    """Stable child-name suffix of the release resource."""
    chart: facts.Chart
    values: dict[str, Any]
    installs: tuple[str, ...]


@dataclass(frozen=True)
class InstallPlan:
    node_image: facts.NodeImage
    platform: facts.Platform
    releases: tuple[Release, ...]
    node_labels: dict[str, str] = field(default_factory=dict)
    """Labels the GPU nodes must carry from boot for the releases to work (the MIG manager's configuration):
    each platform component adds them to its node group or pool."""
    resource_quota: Optional[dict[str, Any]] = None
    """ResourceQuota manifest the namespace needs before the releases (where the platform admits critical pods
    only under one), or ``None``."""
    prometheus_rule: Optional[dict[str, Any]] = None
    """The PrometheusRule of GPU health alerts (with the Prometheus Operator and an exporter of ours), or ``None``."""

    def provider(self, software: str) -> Optional[str]:
        """Who provides ``software`` on the GPU nodes: ``node image``, a chart name, or ``None``."""
        if software in self.node_image.ships:
            return "node image"
        return next((r.chart.name for r in self.releases if software in r.installs), None)


def gpu_toleration(taint: facts.Taint) -> dict[str, str]:
    """Tolerates the taint whatever its value: platforms and admins disagree on it (``true``, ``present``...)."""
    return {"key": taint.key, "operator": "Exists", "effect": taint.effect}


def gpu_tolerations(platform: facts.Platform, extra: Sequence[facts.Taint]) -> list[dict[str, str]]:
    """Tolerations for every taint a GPU node carries: the platform's GPU taint first."""
    return [gpu_toleration(t) for t in (platform.taint, *extra)]


def gpu_node_affinity(platform: facts.Platform) -> dict[str, Any]:
    """Required node affinity on the labels the platform's GPU nodes carry from boot (not labels NFD adds later)."""
    expressions = [{"key": k, "operator": op, **({"values": list(v)} if v else {})} for k, op, v in platform.selector]
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": expressions}]}}}


def device_plugin_config(options: GpuSoftwareOptions) -> str:
    """The device plugin's own config file (``version: v1``) for time-slicing and the MIG strategy."""
    config: dict[str, Any] = {"version": "v1",
                              "flags": {"migStrategy": options.mig.strategy if options.mig else "none"}}
    if options.time_slicing_replicas:
        config["sharing"] = {"timeSlicing": {"resources": [
            {"name": "nvidia.com/gpu", "replicas": options.time_slicing_replicas}]}}
    return yaml.safe_dump(config, sort_keys=False)


def _device_plugin_release(options: GpuSoftwareOptions, image: facts.NodeImage, platform: facts.Platform,
                           extra: Sequence[facts.Taint]) -> Optional[Release]:
    plugin = facts.DEVICE_PLUGIN not in image.ships and options.install != facts.DRA  # never both on one node
    gfd = options.gpu_feature_discovery
    if not plugin and not gfd:
        return None
    tolerations = gpu_tolerations(platform, extra)
    values: dict[str, Any] = {
        "devicePlugin": {"enabled": plugin},
        "gfd": {"enabled": gfd},
        "tolerations": [dict(facts.CRITICAL_ADDONS_TOLERATION), *tolerations],
        "affinity": gpu_node_affinity(platform),
    }
    if options.mig:
        values["migStrategy"] = options.mig.strategy
    if options.time_slicing_replicas:
        values["config"] = {"map": {"default": device_plugin_config(options)}, "default": "default"}
    if gfd:
        # The chart's own NFD worker tolerates only nvidia.com/gpu=present: on any other taint value it never runs
        # on GPU nodes, and GPU feature discovery waits for its labels forever.
        values["nfd"] = {"worker": {"tolerations": [dict(facts.CONTROL_PLANE_TOLERATION), *tolerations]}}
    installs = ((facts.DEVICE_PLUGIN,) if plugin else ()) + (("gpu-feature-discovery", "node-feature-discovery")
                                                             if gfd else ())
    return Release("device-plugin", facts.CHARTS["nvidia-device-plugin"], values, installs)


def _service_monitor(options: GpuSoftwareOptions) -> dict[str, Any]:
    """The exporter chart's ``serviceMonitor`` values: always said (both charts create one by default, which fails
    where the Prometheus Operator's CRD is missing), with the labels its Prometheus selects by."""
    labels = dict(options.prometheus_labels)
    return {"enabled": options.prometheus_operator, **({"additionalLabels": labels} if labels else {})}


def _dcgm_exporter_release(options: GpuSoftwareOptions, image: facts.NodeImage, platform: facts.Platform,
                           extra: Sequence[facts.Taint]) -> Release:
    values: dict[str, Any] = {
        "tolerations": gpu_tolerations(platform, extra),
        "affinity": gpu_node_affinity(platform),
        "serviceMonitor": _service_monitor(options),
        # the chart's own list and every field the GPU alerts read (the chart's list leaves several out)
        "customMetrics": health.counters_csv(),
    }
    if image.driver_root:
        # A driver outside the usual paths (GKE): the exporter requests no GPU, so nothing mounts it for it.
        values["extraHostVolumes"] = [{"name": "nvidia-driver", "hostPath": image.driver_root}]
        values["extraVolumeMounts"] = [dict(facts.DCGM_EXPORTER_METRICS_MOUNT), {
            "name": "nvidia-driver", "mountPath": facts.CONTAINER_DRIVER_ROOT, "readOnly": True}]
        values["extraEnv"] = [{"name": "LD_LIBRARY_PATH", "value": f"{facts.CONTAINER_DRIVER_ROOT}/lib64"}]
    return Release("dcgm-exporter", facts.CHARTS["dcgm-exporter"], values, ("dcgm-exporter",))


def dra_values(options: GpuSoftwareOptions, image: facts.NodeImage, platform: facts.Platform,
               extra: Sequence[facts.Taint]) -> dict[str, Any]:
    """The DRA driver chart's values: the driver where this image puts it, the kubelet plugin on exactly the GPU
    nodes (their boot labels, every taint they carry tolerated), GPUs on (the chart refuses them without
    ``gpuResourcesEnabledOverride``, its guard against a device plugin on the same nodes, which :func:`plan` never
    installs beside it) and ComputeDomains as chosen."""
    return {
        "nvidiaDriverRoot": image.driver_root or facts.HOST_DRIVER_ROOT,
        "resourceApiVersion": facts.DRA_RESOURCE_API,
        "gpuResourcesEnabledOverride": True,
        "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": options.compute_domains}},
        "kubeletPlugin": {"tolerations": gpu_tolerations(platform, extra), "affinity": gpu_node_affinity(platform)},
    }


def _dra_release(options: GpuSoftwareOptions, image: facts.NodeImage, platform: facts.Platform,
                 extra: Sequence[facts.Taint]) -> Release:
    installs = (facts.DRA_DRIVER,) + (("compute-domains",) if options.compute_domains else ())
    return Release("dra-driver", facts.CHARTS[facts.DRA_CHART], dra_values(options, image, platform, extra), installs)


def _env(pairs: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"name": name, "value": value} for name, value in pairs]


def _mig_manager(options: GpuSoftwareOptions, image: facts.NodeImage) -> bool:
    """Whether the GPU Operator's MIG manager partitions the GPUs (MIG asked for, and the platform does not)."""
    return options.install == "gpu-operator" and options.mig is not None and \
        facts.MIG_PARTITIONING not in image.ships


def critical_pods_quota(namespace: str) -> dict[str, Any]:
    """A ResourceQuota admitting pods of the system-critical PriorityClasses in ``namespace``."""
    quota = facts.CRITICAL_PODS_QUOTA
    return {"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": quota["name"], "namespace": namespace},
            "spec": {"hard": {"pods": quota["pods"]}, "scopeSelector": {"matchExpressions": [
                {"scopeName": "PriorityClass", "operator": "In", "values": list(facts.CRITICAL_PRIORITY_CLASSES)}]}}}


def _operator_release(options: GpuSoftwareOptions, image: facts.NodeImage, platform: facts.Platform,
                      extra: Sequence[facts.Taint]) -> Release:
    tolerations = gpu_tolerations(platform, extra)
    wanted = {s: s not in image.ships for s in facts.NODE_SOFTWARE}
    mig_manager = _mig_manager(options, image)
    device_plugin: dict[str, Any] = {"enabled": wanted[facts.DEVICE_PLUGIN]}
    if options.time_slicing_replicas:
        device_plugin["config"] = {"create": True, "name": "gpuready-device-plugin-config", "default": "default",
                                   "data": {"default": device_plugin_config(options)}}
    values: dict[str, Any] = {
        "driver": {"enabled": wanted[facts.DRIVER]},
        "toolkit": {"enabled": wanted[facts.TOOLKIT]},
        "devicePlugin": device_plugin,
        "gfd": {"enabled": options.gpu_feature_discovery},
        "dcgmExporter": {"enabled": options.dcgm_exporter,
                         "serviceMonitor": _service_monitor(options),
                         "config": {"name": health.METRICS_CONFIG_MAP, "create": True,
                                    "data": health.counters_csv()}},
        "migManager": {"enabled": mig_manager},
        # The operator places its operands on nodes NFD labels as NVIDIA; they and NFD's worker must tolerate the
        # platform's GPU taint, or no operand ever runs there.
        "daemonsets": {"tolerations": tolerations},
        "node-feature-discovery": {"worker": {"tolerations": [dict(facts.CONTROL_PLANE_TOLERATION), *tolerations]}},
    }
    if image.driver_root and not wanted[facts.DRIVER]:
        # The platform's driver (GKE's): the operator's validator and toolkit find it, and the toolkit installs
        # beside it, in a directory that is writable and kept across reboots (NVIDIA GPU Operator docs, Google GKE).
        values["hostPaths"] = {"driverInstallDir": image.driver_root}
        if wanted[facts.TOOLKIT]:
            values["toolkit"]["installDir"] = image.driver_root
    if wanted[facts.TOOLKIT] and platform.toolkit_env:
        values["toolkit"]["env"] = _env(platform.toolkit_env)
    if options.mig:
        values["mig"] = {"strategy": options.mig.strategy}
    if mig_manager and image.mig_manager_env:
        # The configuration itself comes from each node's nvidia.com/mig.config label (InstallPlan.node_labels).
        values["migManager"]["env"] = _env(image.mig_manager_env)
    installs = tuple(s for s in facts.NODE_SOFTWARE if wanted[s]) + \
        (("gpu-feature-discovery",) if options.gpu_feature_discovery else ()) + \
        (("dcgm-exporter",) if options.dcgm_exporter else ()) + \
        ((facts.MIG_PARTITIONING,) if mig_manager else ()) + ("node-feature-discovery",)
    return Release("gpu-operator", facts.CHARTS["gpu-operator"], values, installs)


def resolve(options: GpuSoftwareOptions, image: facts.NodeImage) -> GpuSoftwareOptions:
    """``options`` with the platform defaults filled in: GPU feature discovery where nothing else labels GPUs."""
    return dataclasses.replace(
        options,
        gpu_feature_discovery=facts.GPU_LABELS not in image.ships if options.gpu_feature_discovery is None
        else options.gpu_feature_discovery,
        dcgm_exporter=True if options.dcgm_exporter is None else options.dcgm_exporter)


def startup_taints(options: GpuSoftwareOptions, platform: str) -> tuple[facts.Taint, ...]:
    """Taints the platform's GPU nodes boot with and lose once ready: the burn-in's, with burn-in admission on.
    Pools set them; pods never tolerate them (``gpuNodeTaints`` leaves them out)."""
    return (platforms.node_facts(platform).burn_in_taint,) if options.burn_in is not None else ()


def node_taints(args: K8sGpuSoftwareArgs) -> tuple[facts.Taint, ...]:
    """Taints a GPU node may carry besides the platform's GPU taint, which every NVIDIA daemonset tolerates: the
    pool's own, and the burn-in taint (the burn-in needs the driver, toolkit and device plugin up)."""
    return (*args.extra_taints, *startup_taints(args.options, args.platform))


def plan(args: K8sGpuSoftwareArgs) -> InstallPlan:
    """Check ``args`` and decide the releases; raises :class:`~gpuready_components.errors.ConfigError`."""
    image = check(args)
    platform = platforms.node_facts(args.platform)
    options = resolve(args.options, image)
    extra = node_taints(args)
    if options.install == "gpu-operator":
        releases: list[Optional[Release]] = [_operator_release(options, image, platform, extra)]
    else:
        releases = [_dra_release(options, image, platform, extra) if options.install == facts.DRA else None,
                    _device_plugin_release(options, image, platform, extra),
                    _dcgm_exporter_release(options, image, platform, extra)
                    if options.dcgm_exporter else None]
    installed = tuple(r for r in releases if r is not None)
    exporter = next((r.chart.name for r in installed if "dcgm-exporter" in r.installs), None)
    return InstallPlan(
        image, platform, installed,
        node_labels={facts.MIG_CONFIG_LABEL: options.mig.config} if _mig_manager(options, image) else {},
        resource_quota=critical_pods_quota(options.namespace)
        if (installed or options.burn_in is not None) and platform.critical_pods_need_quota else None,
        prometheus_rule=health.prometheus_rule(
            options.namespace, exporter_job=health.EXPORTER_JOBS[exporter],
            replicas=options.time_slicing_replicas or 1, mig=options.mig is not None,
            labels=dict(options.prometheus_labels)) if exporter and options.prometheus_operator else None)
