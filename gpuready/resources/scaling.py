"""Scale from zero in a rendered stack: which EKS GPU node groups the stack's autoscaler can add for the smoke pod.

Reads resources in a neutral shape (:class:`Item`) so that ``gpuready plan`` (a rendering) and the policy pack
(``PolicyResource``) share it; the check itself is :func:`gpuready_components.k8s_gpu.scale_from_zero.check`.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, NamedTuple, Optional, Sequence

from gpuready_components.k8s_gpu import scalers as sf
from gpuready_components.k8s_gpu.scale_from_zero import ScaleFromZero, ScaleGroup, check

from . import read
from .aws import AutoScalingTag, EksCluster, EksNodeGroup
from .kubernetes import HelmRelease, KarpenterNodePool

PLUGIN_CHARTS = ("nvidia-device-plugin", "gpu-operator")
"""Charts that bring an NVIDIA device plugin (the dcgm-exporter chart does not)."""


class Item(NamedTuple):
    urn: str
    type: str
    name: str
    props: Mapping[str, Any]
    deps: Mapping[str, Sequence[str]]
    """Input name -> URNs it was built from."""

    @property
    def facts(self) -> Any:
        """Its reader (:mod:`gpuready.resources`); ``None`` for a type no reader knows."""
        return read(self.type, self.props)


def _gpus(pool: Any) -> dict[str, int]:
    """GPUs per GPU type of a node group or NodePool, as its reader knows them (declared types too)."""
    return {row.name: row.gpus for row in pool.gpu_rows}


def gpu_node_groups(items: Sequence[Item]) -> list[ScaleGroup]:
    """The EKS node groups with GPU types (catalog or declared), each with the tags set on its Auto Scaling group."""
    tags: dict[str, dict[str, str]] = {}
    for t in items:
        tag = t.facts
        if isinstance(tag, AutoScalingTag):
            for urn in t.deps.get(AutoScalingTag.GROUP_INPUT) or ():
                tags.setdefault(urn, {})[tag.key] = tag.value
    groups = []
    for r in items:
        group = r.facts
        if not isinstance(group, EksNodeGroup) or not group.is_gpu:
            continue
        groups.append(ScaleGroup(r.name, tuple(group.instance_types), group.labels, tuple(group.taints),
                                 tags.get(r.urn, {}), group.minimum[0], type_gpus=_gpus(group)))
    return groups


def node_pools(items: Sequence[Item]) -> list[ScaleGroup]:
    """GPU NodePools (Karpenter, Auto Mode): their labels, taints and admitted instance types."""
    groups = []
    for r in items:
        pool = r.facts
        if not isinstance(pool, KarpenterNodePool):
            continue
        if not pool.gpu_rows:
            continue
        groups.append(ScaleGroup(pool.name or r.name, tuple(pool.instance_types), pool.labels, tuple(pool.taints),
                                 type_gpus=_gpus(pool)))
    return groups


def scaler(items: Sequence[Item]) -> str:
    if any(isinstance(r.facts, EksCluster) and r.facts.auto_mode for r in items):
        return sf.AUTO_MODE
    charts = {r.facts.chart for r in items if isinstance(r.facts, HelmRelease)}
    if sf.KARPENTER_CHART.name in charts:
        return sf.KARPENTER
    return sf.CLUSTER_AUTOSCALER if sf.CLUSTER_AUTOSCALER_CHART.name in charts else sf.NONE


def nvidia_plugins(items: Sequence[Item]) -> list[str]:
    """The stack's charts that run an NVIDIA device plugin (or GPU feature discovery's plugin companion)."""
    found = set()
    for r in items:
        release = r.facts
        if not isinstance(release, HelmRelease) or release.chart not in PLUGIN_CHARTS:
            continue
        if release.chart == "gpu-operator" or release.value("devicePlugin.enabled", True) or \
                release.value("gfd.enabled"):
            found.add(release.chart)
    return sorted(found)


def smoke_pod(outputs: Mapping[str, Any], groups: Sequence[ScaleGroup]) -> tuple[dict, list[dict], int]:
    """(nodeSelector, tolerations, most GPUs) of the smoke test's pod: from the stack's outputs, else from the
    labels and taints every GPU group shares."""
    if "gpuNodeLabels" in outputs:
        labels = dict(outputs["gpuNodeLabels"] or {})
        taints = list(outputs.get("gpuNodeTaints") or [])
    else:
        shared = [set(g.labels.items()) for g in groups]
        labels = dict(set.intersection(*shared)) if shared else {}
        labels = {k: v for k, v in labels.items() if k != sf.ACCELERATOR_LABEL}
        taints = [{"key": t.key, "value": t.value, "effect": t.effect} for t in {t for g in groups for t in g.taints}]
    tolerations = [{"key": t["key"], "operator": "Equal", "value": t.get("value", ""), "effect": t["effect"]}
                   for t in taints]
    most = outputs.get("maxGpusPerNode") or max(
        (n for g in groups for n in map(g.gpus_of, g.instance_types) if n), default=1)
    return labels, tolerations, int(most)


def scale_from_zero(items: Sequence[Item], outputs: Optional[Mapping[str, Any]] = None) -> Optional[ScaleFromZero]:
    """The check for the stack's EKS GPU node groups at min size 0; ``None`` when it has none."""
    mode = scaler(items)
    if mode in (sf.AUTO_MODE, sf.KARPENTER):
        groups = node_pools(items)
    else:
        groups = [g for g in gpu_node_groups(items) if g.min_size == 0]
    if not groups:
        return None
    selector, tolerations, most = smoke_pod(outputs or {}, groups)
    return check(mode, groups, selector, tolerations, most, nvidia_plugins(items))


def from_rendering(resources: Iterable[Any]) -> list[Item]:
    return [Item(r.urn, r.type, r.name, r.inputs, r.property_dependencies) for r in resources]


def from_policy(resources: Iterable[Any]) -> list[Item]:
    return [Item(r.urn, r.resource_type, r.name, r.props,
                 {k: [d.urn for d in v] for k, v in (r.property_dependencies or {}).items()}) for r in resources]
