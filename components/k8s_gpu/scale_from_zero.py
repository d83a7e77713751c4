"""Scale from zero, proven offline: the node each GPU group presents to the scheduler when it has no node, and
whether the smoke test's GPU pod fits one of them. Pure: no Pulumi, used by the component, ``gpuready plan`` and the
policy pack alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping, Optional, Sequence

from .. import catalog
from .facts import Taint
from .scheduling import schedulable
from . import scalers as sf


@dataclass(frozen=True)
class GpuGroup:
    """One GPU node group: instance types with the same GPU count and model (cluster-autoscaler models a group by
    its first instance type, so a group mixing 1- and 4-GPU types never scales up for a 4-GPU pod)."""

    suffix: str
    """Child-name suffix: ``""`` for the first group (the ``{name}-gpu`` group stacks already have), else ``-4x``."""
    instance_types: tuple[str, ...]
    gpus: int
    gpu_model: str


def split(rows: Sequence[catalog.GpuInstanceType]) -> tuple[GpuGroup, ...]:
    """Group catalog rows by (GPU count, model), in order of GPU count; the first keeps the plain name."""
    keys: dict[tuple[int, str], list[str]] = {}
    for row in sorted(rows, key=lambda r: r.gpus):
        keys.setdefault((row.gpus, row.gpu_model), []).append(row.name)
    models = {model for _, model in keys}
    groups = []
    for i, ((gpus, model), types) in enumerate(keys.items()):
        suffix = "" if i == 0 else (f"-{gpus}x" if len(models) == 1 else f"-{sf.accelerator(model)[7:]}-{gpus}x")
        groups.append(GpuGroup(suffix, tuple(types), gpus, model))
    return tuple(groups)


def template_tags(gpus: int, labels: Mapping[str, str], taints: Sequence[Taint],
                  resources: Mapping[str, int] = MappingProxyType({})) -> dict[str, str]:
    """The Auto Scaling group tags telling cluster-autoscaler what a node of the empty group offers (its GPUs, and
    other extended ``resources`` such as EFA interfaces)."""
    tags = {f"{sf.TEMPLATE_TAG}resources/{sf.GPU_RESOURCE}": str(gpus)}
    tags.update({f"{sf.TEMPLATE_TAG}resources/{k}": str(v) for k, v in resources.items()})
    tags.update({f"{sf.TEMPLATE_TAG}label/{k}": v for k, v in labels.items()})
    tags.update({f"{sf.TEMPLATE_TAG}taint/{t.key}": f"{t.value}:{t.effect}" for t in taints})
    return tags


@dataclass(frozen=True)
class ScaleGroup:
    """What one scaling unit declares: a node group (and its Auto Scaling group's tags) or a NodePool."""

    name: str
    instance_types: tuple[str, ...]
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    tags: Mapping[str, str] = field(default_factory=dict)
    """Auto Scaling group tags (cluster-autoscaler); ignored for NodePools."""
    min_size: int = 0
    startup_taints: tuple[Taint, ...] = ()
    """Taints among ``taints`` that a daemonset removes once the node is ready (burn-in): the scaler ignores them
    when it imagines a node (cluster-autoscaler's ``--startup-taint``, a NodePool's ``startupTaints``)."""
    type_gpus: Mapping[str, int] = field(default_factory=dict)
    """GPUs per instance type as the caller read them (a resource's reader knows the types the stack declared);
    the catalog answers for the types not in it."""

    def gpus_of(self, instance_type: str) -> int:
        """GPUs of one instance of ``instance_type`` (0: none known)."""
        if instance_type in self.type_gpus:
            return self.type_gpus[instance_type]
        row = catalog.find("aws", instance_type)
        return row.gpus if row else 0


@dataclass(frozen=True)
class NodeTemplate:
    """The node a scaler imagines for an empty group, which the scheduler simulation places the pod on."""

    group: str
    instance_type: str
    gpus: int
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]

    def offer(self) -> str:
        return f"{self.instance_type}, {self.gpus} GPU{'s' if self.gpus != 1 else ''}"

    def __str__(self) -> str:
        return f"{self.group} ({self.offer()})"


def node_templates(scaler: str, groups: Sequence[ScaleGroup]) -> tuple[list[NodeTemplate], list[str]]:
    """The templates ``scaler`` presents for ``groups`` at zero nodes, and the problems found building them.

    cluster-autoscaler: the first instance type, GPUs from its ``resources/nvidia.com/gpu`` tag (else the catalog),
    labels and taints from the template tags only: a node group label or taint without its tag is a problem (a
    missing taint makes it scale the group up for pods that cannot land there). Karpenter and Auto Mode: every
    admitted type with the NodePool's labels and taints.
    """
    templates, problems = [], []
    for g in groups:
        if not g.instance_types:
            problems.append(f"{g.name} admits no instance type")
            continue
        lasting = tuple(t for t in g.taints if t not in g.startup_taints)
        if scaler != sf.CLUSTER_AUTOSCALER:
            templates += [NodeTemplate(g.name, t, g.gpus_of(t), dict(g.labels), lasting) for t in g.instance_types]
            continue
        prefix = sf.TEMPLATE_TAG
        labels = {k[len(prefix + "label/"):]: v for k, v in g.tags.items() if k.startswith(prefix + "label/")}
        taints = []
        for k, v in g.tags.items():
            if k.startswith(prefix + "taint/"):
                value, _, effect = v.rpartition(":")
                if k[len(prefix + "taint/"):] not in {t.key for t in g.startup_taints}:
                    taints.append(Taint(k[len(prefix + "taint/"):], value, effect))
        first = g.instance_types[0]
        gpu_tag = g.tags.get(f"{prefix}resources/{sf.GPU_RESOURCE}")
        gpus = int(gpu_tag) if gpu_tag and gpu_tag.isdigit() else g.gpus_of(first)
        for key, value in g.labels.items():
            if labels.get(key) != value:
                problems.append(f"{g.name}: label {key}={value} has no template tag {prefix}label/{key}, so "
                                f"cluster-autoscaler does not know it at zero nodes")
        for t in lasting:
            if t not in taints:
                problems.append(f"{g.name}: taint {t.key}={t.value}:{t.effect} has no template tag "
                                f"{prefix}taint/{t.key}, so cluster-autoscaler adds its nodes for pods that "
                                f"cannot run there")
        odd = [t for t in g.instance_types[1:] if g.gpus_of(t) != gpus]
        if odd:
            problems.append(f"{g.name}: cluster-autoscaler models the group as {first} ({gpus} GPUs), but "
                            f"{', '.join(odd)} have other GPU counts; use one node group per GPU count")
        templates.append(NodeTemplate(g.name, first, gpus, labels, tuple(taints)))
    return templates, problems


@dataclass(frozen=True)
class ScaleFromZero:
    """Whether the smoke pod (1 GPU, and the most GPUs per node) makes ``scaler`` add a node."""

    scaler: str
    templates: tuple[NodeTemplate, ...]
    fits: Mapping[int, tuple[str, ...]]
    """GPUs requested -> templates the pod fits."""
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        if self.scaler == sf.NONE:
            return "scale from zero: no autoscaler installed; GPU node groups at minSize 0 rely on your own"
        if not self.templates:
            return f"scale from zero: {self.scaler} has no GPU node to add"
        groups: dict[str, list[NodeTemplate]] = {}
        for t in self.templates:
            groups.setdefault(t.group, []).append(t)
        return f"scale from zero: {self.scaler} adds " + " or ".join(
            f"{group} ({'; '.join(t.offer() for t in offered)})" for group, offered in groups.items())


def check(scaler: str, groups: Sequence[ScaleGroup], node_selector: Mapping[str, str],
          tolerations: Sequence[Mapping[str, str]], max_gpus_per_node: int,
          plugins: Sequence[str] = ()) -> ScaleFromZero:
    """Build ``scaler``'s templates for ``groups`` and fit the smoke pod (``node_selector``, ``tolerations``) to
    them at 1 GPU and at ``max_gpus_per_node``; ``plugins`` are the NVIDIA charts the stack installs (Auto Mode must
    have none)."""
    if scaler == sf.NONE:
        return ScaleFromZero(scaler, (), {}, ())
    templates, problems = node_templates(scaler, groups)
    if scaler == sf.AUTO_MODE and plugins:
        problems.append(f"EKS Auto Mode runs its own NVIDIA device plugin; the stack also installs "
                        f"{', '.join(plugins)}, and two plugins on a node break GPU allocation")
    pod = {"nodeSelector": dict(node_selector), "tolerations": list(tolerations)}
    fits: dict[int, tuple[str, ...]] = {}
    for want in sorted({1, max(max_gpus_per_node, 1)}):
        fits[want] = tuple(t.group for t in templates if t.gpus >= want and schedulable(pod, t.labels, t.taints))
        if not fits[want]:
            why = [f"{t}: " + ("too few GPUs" if t.gpus < want else "labels or taints do not match the pod")
                   for t in templates]
            problems.append(f"a pod asking for {want} GPU(s) with nodeSelector {dict(node_selector)} fits no node "
                            f"{scaler} can add ({'; '.join(why) or 'no templates'})")
    return ScaleFromZero(scaler, tuple(templates), fits, tuple(dict.fromkeys(problems)))


def default_mode(new_cluster: bool) -> str:
    return sf.CLUSTER_AUTOSCALER if new_cluster else sf.NONE


def resolve(mode: Optional[str], new_cluster: bool) -> str:
    return mode or default_mode(new_cluster)
