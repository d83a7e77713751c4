"""Construction-time checks of :class:`K8sGpuSoftwareArgs`: a node that would never get a usable GPU fails at preview.

:func:`check` raises :class:`~gpuready_components.errors.ConfigError` naming the field, the value and the fix.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Mapping, Optional, Sequence

from .. import catalog, platforms
from ..errors import ConfigError
from ..inputs import settled
from . import facts
from .args import ExistingClusterArgs, GpuSoftwareOptions, K8sGpuSoftwareArgs, MigArgs

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")

def check_labels(field: str, labels: Mapping[str, str], reserved: Mapping[str, str]) -> None:
    """Node labels must be valid Kubernetes labels and leave the labels the GPU software selects by (``reserved``)."""
    for key, value in labels.items():
        prefix, _, name = key.rpartition("/")
        if not name or not _LABEL_NAME.match(name) or (prefix and not _DNS_SUBDOMAIN.match(prefix)) \
                or not isinstance(value, str) or not _LABEL_NAME.match(value):
            raise ConfigError(f"{field}.{key}", value, "not a valid Kubernetes label",
                              "use [prefix/]name with letters, digits, '-', '_' and '.', values of 63 characters or less")
        if key in reserved and value != reserved[key]:
            raise ConfigError(f"{field}.{key}", value, "the GPU software selects GPU nodes by this label",
                              f"remove it; it is always {reserved[key]!r}")


def check_cluster_choice(cluster: object, existing: Optional[ExistingClusterArgs]) -> None:
    """A platform component creates a cluster or joins an existing one: exactly one of the two is given."""
    if (cluster is None) == (existing is None):
        raise ConfigError("cluster/existing_cluster", (cluster, existing), "give exactly one",
                          "give cluster=ClusterArgs() to create one, or existing_cluster")
    if existing is not None and settled(existing.name) in ("", None):
        raise ConfigError("existing_cluster.name", existing.name, "required", "give the cluster's name")


def restricts(cidrs: Sequence[str]) -> bool:
    """Whether an API endpoint allow-list keeps anyone out: it is not empty and holds no /0 (anywhere)."""
    return bool(cidrs) and all(ipaddress.ip_network(c, strict=False).prefixlen > 0 for c in cidrs)


def mig_profiles(model: str, memory_gib: float) -> Optional[tuple[str, ...]]:
    """MIG profiles of a GPU (its model and memory in GiB as the catalog holds it: an H100 80 GB is 80 GiB, as EC2
    reports it, on every cloud; a declared type's figure may differ a little), or ``None`` when it cannot be
    partitioned. The profiles are keyed by the
    model's memory size in GB (:func:`catalog.memory_size`), the figure NVIDIA's profile names count in."""
    size = catalog.memory_size(model, memory_gib)
    return None if size is None else facts.MIG_PROFILES.get((model, round(size)))


def check_mig(field: str, mig: MigArgs, gpu_models: Sequence[tuple[str, float]], partitioned_by_platform: bool) -> None:
    """Check a MIG request against the GPUs of the node pools (``(model, memory GiB)`` pairs)."""
    if mig.strategy not in ("single", "mixed"):
        raise ConfigError(f"{field}.strategy", mig.strategy, "not a MIG strategy",
                          "use single or mixed, or leave mig unset for whole GPUs")
    without = sorted({f"{m} {catalog.gib_text(g)}" for m, g in gpu_models if mig_profiles(m, g) is None})
    if without:
        raise ConfigError(field, f"strategy {mig.strategy}", f"these GPUs have no MIG: {', '.join(without)}",
                          "use A100, H100 or H200 instance types, or leave mig unset")
    if partitioned_by_platform or mig.config in facts.MIG_CONFIGS_ANY_GPU:
        return
    profile = mig.config.removeprefix("all-")
    if not mig.config.startswith("all-"):
        raise ConfigError(f"{field}.config", mig.config, "not a mig-parted configuration of the GPU Operator",
                          f"use {', '.join(facts.MIG_CONFIGS_ANY_GPU)} or all-PROFILE such as all-1g.10gb")
    for model, gib in gpu_models:
        profiles = mig_profiles(model, gib) or ()
        if profile not in profiles:
            raise ConfigError(f"{field}.config", mig.config, f"{model} {catalog.gib_text(gib)} has no {profile} profile",
                              f"use all-balanced, or one of {', '.join('all-' + p for p in profiles)}")


def check_options(field: str, options: GpuSoftwareOptions, image: facts.NodeImage, image_key: str,
                  gpu_models: Sequence[tuple[str, float]] = ()) -> None:
    """Raise :class:`ConfigError` for options that cannot work on ``image``; ``field`` prefixes the field names."""
    if options.install not in facts.INSTALL_MODES:
        raise ConfigError(f"{field}.install", options.install, "not an install mode",
                          f"use {' or '.join(facts.INSTALL_MODES)}")
    missing = [s for s in (facts.DRIVER, facts.TOOLKIT) if s not in image.ships]
    if options.install == "device-plugin" and missing:
        raise ConfigError(f"{field}.install", options.install,
                          f"{image_key} ships no {' or '.join(missing)}, and the device plugin chart installs neither",
                          "use install 'gpu-operator', which installs them")
    if options.install == "gpu-operator" and image.operator_image:
        raise ConfigError(f"{field}.install", options.install,
                          f"{image_key} runs the platform's own device plugin, which gives containers the driver "
                          "without the container toolkit the operator's pods need",
                          f"use node image {image.operator_image} (the platform's device plugin turned off)")
    _check_dra(field, options, image, image_key)
    replicas = options.time_slicing_replicas
    if replicas is not None:
        low, high = facts.TIME_SLICING_REPLICAS
        if not low <= replicas <= high:
            raise ConfigError(f"{field}.time_slicing_replicas", replicas, f"must be between {low} and {high}",
                              "use 2-8 for notebooks and small inference, or leave it unset for whole GPUs")
        if options.mig is not None:
            raise ConfigError(f"{field}.time_slicing_replicas", replicas, "time-slicing together with MIG",
                              "choose one: MIG for isolated slices, time-slicing for shared whole GPUs")
        if facts.DEVICE_PLUGIN in image.ships:
            raise ConfigError(f"{field}.time_slicing_replicas", replicas,
                              f"{image_key} runs its own device plugin, which these charts do not configure",
                              platforms.node_facts(image.platform).sharing_fix)
    if options.mig is not None:
        partitioned = facts.MIG_PARTITIONING in image.ships
        if not partitioned and options.install == "device-plugin":
            raise ConfigError(f"{field}.mig", f"strategy {options.mig.strategy}",
                              f"nothing partitions the GPUs on {image_key} with the device plugin alone",
                              "use install 'gpu-operator', whose MIG manager partitions them")
        if not partitioned and facts.DEVICE_PLUGIN in image.ships:
            raise ConfigError(f"{field}.mig", f"strategy {options.mig.strategy}",
                              f"{image_key} runs its own device plugin, which the GPU Operator cannot configure "
                              "for MIG", "use ami_type AL2023_x86_64_NVIDIA for MIG")
        check_mig(f"{field}.mig", options.mig, gpu_models, partitioned)
    if options.gpu_feature_discovery and facts.GPU_LABELS in image.ships:
        raise ConfigError(f"{field}.gpu_feature_discovery", True,
                          f"{image_key} labels GPU nodes itself, and GPU feature discovery cannot reach its driver",
                          "leave gpu_feature_discovery unset, and select GPUs by the platform's labels")
    if options.prometheus_operator and options.dcgm_exporter is False:
        raise ConfigError(f"{field}.prometheus_operator", True, "a ServiceMonitor needs the DCGM exporter",
                          "set dcgm_exporter true, or prometheus_operator false")
    if options.burn_in is not None:
        level = options.burn_in.dcgm_level
        if level not in facts.DCGM_DIAG_LEVELS:
            raise ConfigError(f"{field}.burn_in.dcgm_level", level, "not a dcgmi diag level",
                              "use 1 (seconds), 2 (about two minutes, the default), 3 or 4 (hours)")
        if "core.py" not in options.burn_in.probe_files:
            raise ConfigError(f"{field}.burn_in.probe_files", sorted(options.burn_in.probe_files),
                              "the burn-in runs the probe's core.py", "give gpuready/probe/core.py's text as core.py")
    if not _DNS_LABEL.match(options.namespace):
        raise ConfigError(f"{field}.namespace", options.namespace, "not a valid namespace name",
                          "use lowercase letters, digits and '-', e.g. nvidia-gpu")


def _check_dra(field: str, options: GpuSoftwareOptions, image: facts.NodeImage, image_key: str) -> None:
    """``install: dra`` on an image that ships the driver and runs no device plugin; ComputeDomains only with it."""
    if options.compute_domains and options.install != facts.DRA:
        raise ConfigError(f"{field}.compute_domains", True, f"ComputeDomains are the DRA driver's, and install is "
                          f"{options.install}", "set install 'dra' too, or compute_domains false")
    if options.install != facts.DRA:
        return
    if facts.DRIVER not in image.ships:
        raise ConfigError(f"{field}.install", options.install, f"{image_key} ships no NVIDIA driver, and the DRA "
                          "driver installs none", "use a node image whose platform installs the driver (the "
                          "platform's default for install 'dra')")
    if facts.DEVICE_PLUGIN in image.ships:
        raise ConfigError(f"{field}.install", options.install, f"{image_key} runs its own device plugin, and the "
                          "device plugin and the DRA driver must not give out the same GPUs",
                          "use a node image without a device plugin (EKS: AL2023 NVIDIA, not Bottlerocket or Auto "
                          "Mode), or install 'device-plugin'")
    for name, value in (("time_slicing_replicas", options.time_slicing_replicas), ("mig", options.mig)):
        if value is not None:
            raise ConfigError(f"{field}.{name}", value if name != "mig" else f"strategy {value.strategy}",
                              "not offered with install 'dra' (the DRA driver shares GPUs by its own claim "
                              "configuration)", f"leave {name} unset, or use install 'device-plugin' or 'gpu-operator'")


def check_dra_version(field: str, version: Optional[str], options: GpuSoftwareOptions, default: str = "") -> None:
    """``install: dra`` needs the cluster's Kubernetes version, stated or the platform's pinned default, to be
    :data:`~facts.DRA_MIN_KUBERNETES` or later: ``field`` names where it is set, ``default`` says what an unset one
    means (the platform's default, which preview cannot know)."""
    if options.install != facts.DRA:
        return
    low = facts.DRA_MIN_KUBERNETES
    wanted = ".".join(map(str, low))
    if version is None:
        unknown = default or "the version is not stated"
        raise ConfigError(field, None, f"install 'dra' needs Kubernetes {wanted} or later, and {unknown}",
                          "set the cluster's version, 1.34 or later (e.g. 1.34)")
    supported = facts.dra_supported(version)
    if supported is None:
        raise ConfigError(field, version, "not a Kubernetes version", "give it as 1.34 or 1.34.2")
    if not supported:
        raise ConfigError(field, version, f"install 'dra' needs Kubernetes {wanted} or later (resource.k8s.io/v1, "
                          "the DRA driver's prerequisites)", "use 1.34 or later, or install 'device-plugin'")


def check(args: K8sGpuSoftwareArgs) -> facts.NodeImage:
    """Raise :class:`ConfigError` for the first input that cannot work; return the node image's facts."""
    kubernetes = [p.name for p in platforms.every(kubernetes=True)]
    if args.platform not in kubernetes:
        raise ConfigError("platform", args.platform, "unknown platform (none of gpuready's Kubernetes platforms)",
                          f"use one of {', '.join(kubernetes)}")
    images = platforms.require(args.platform).node_images
    image = images.get(args.node_image)
    if image is None:
        known = list(images)
        raise ConfigError("node_image", args.node_image, f"not a {args.platform} GPU node image",
                          f"use one of {', '.join(known)}")
    check_options("options", args.options, image, args.node_image, args.gpu_models)
    known_types(args)
    return image


def known_types(args: K8sGpuSoftwareArgs) -> catalog.Catalog:
    """The catalog the burn-in reads GPU counts from: the file's and ``extra_instance_types`` (a
    :class:`ConfigError` for a declared type that fails the catalog's checks)."""
    return catalog.declared(platforms.require(args.platform).cloud, args.extra_instance_types)
