"""The platform registry: what each platform gpuready stands up *is*, in one descriptor, registered in one place.

A platform is the value of ``gpuready:platform`` and of a deployed stack's ``platform`` output (``aws-batch``,
``eks``, ``gke``, ``aks``). Its descriptor names everything the layers above need, so that no module branches on a
platform's name: the stack program that builds it, the output contract it exports, its Kubernetes node facts, the
modules that teach ``gpuready plan`` and the policy rules its resources (readers, describers, mock answers), and the
smoke targets that run the GPU probe on it.

The descriptor lives in the bottom layer so that every layer can read it (the stack program, the SDK, the policy
pack); what belongs to a layer above (a stack module, a smoke target) is named by its dotted path and imported only
where that layer uses it, as a plugin's entry point is. SDK-free: importing this loads no cloud SDK.

Adding a platform: one folder with its parts, and one :func:`register` call (for gpuready's own platforms, a line in
:data:`BUILTIN`). ``tests/platforms/`` shows a throw-away one that plans and smokes.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Iterator, Mapping, Optional

from .k8s_gpu import facts as k8s_facts

SINGLE, GANG, SWEEP = "single", "gang", "sweep"
"""Smoke modes: one job on one node (``gpuready smoke``), one gang job across nodes (``--nodes N``), one probe per
node (``gpuready sweep``)."""


@dataclass(frozen=True)
class Platform:
    """What one platform is, for every layer that must tell platforms apart."""

    name: str
    """The value of ``gpuready:platform`` and of the ``platform`` output."""
    cloud: str
    """The catalog's cloud for its instance/VM/machine types (``aws``, ``gcp``, ``azure``)."""
    extras: tuple[str, ...]
    """gpuready's pip extras it needs (named together when one is missing)."""
    stack: str
    """The stack program's module: ``SETTINGS``, ``CLOUD_KEYS`` and ``build(config)``."""
    contract: str
    """The module whose ``OUTPUTS`` (:class:`gpuready_components.outputs.Contract`) the stack exports."""
    plugins: tuple[str, ...] = ()
    """Modules that register, on import, the readers of its resource types, the plan's describers and mock answers
    (``gpuready.resources``, ``gpuready.plan.describe``); gpuready imports them before it reads a rendering."""
    targets: Mapping[str, str] = field(default_factory=dict)
    """Smoke mode (:data:`SINGLE`, :data:`GANG`, :data:`SWEEP`) -> ``module:Class`` of the target that runs it."""
    node: Optional[k8s_facts.Platform] = None
    """Kubernetes platforms: how its GPU nodes register (taint, boot labels); ``None`` for the others."""
    managed_autoscaler: bool = False
    """The platform runs the cluster autoscaler itself (GKE, AKS): no flag or deployment of ours reaches it."""
    pool_max_setting: str = ""
    """The ``gpuready:`` setting that bounds the GPU pool's size (what a stuck pod's diagnosis tells to raise)."""
    compute_service: str = ""
    """What the cloud calls the service that launches its nodes (in diagnosis: "EC2 could not launch ...")."""

    @property
    def kubernetes(self) -> bool:
        """Whether GPU work runs as Kubernetes pods (its GPU software comes from ``k8s_gpu``)."""
        return self.node is not None

    @property
    def extra(self) -> str:
        """The extras as pip writes them: ``aws,k8s``."""
        return ",".join(self.extras)

    def load(self, attribute: str) -> Any:
        """The object a ``module:attr`` path names, or the module for a bare ``module`` path."""
        module, _, name = attribute.partition(":")
        loaded = importlib.import_module(module)
        return getattr(loaded, name) if name else loaded

    def target(self, mode: str) -> Optional[str]:
        """The ``module:Class`` that runs smoke ``mode`` here; ``None`` where the platform cannot."""
        return self.targets.get(mode)


_REGISTRY: dict[str, Platform] = {}


def register(platform: Platform) -> Platform:
    """Add ``platform``; a second platform of the same name is an error (its stacks would mean two things)."""
    if platform.name in _REGISTRY and _REGISTRY[platform.name] != platform:
        raise ValueError(f"a platform named {platform.name!r} is registered already")
    _REGISTRY[platform.name] = platform
    return platform


def unregister(name: str) -> None:
    """Forget the platform ``name`` (tests register throw-away platforms)."""
    _REGISTRY.pop(name, None)


def get(name: Any) -> Optional[Platform]:
    """The platform called ``name``; ``None`` for any other value."""
    return _REGISTRY.get(name) if isinstance(name, str) else None


def require(name: str) -> Platform:
    """The platform called ``name``; ``KeyError`` naming the known ones otherwise."""
    platform = get(name)
    if platform is None:
        raise KeyError(f"unknown platform {name!r}: gpuready knows {', '.join(names())}")
    return platform


def names() -> tuple[str, ...]:
    """Every registered platform's name, in registration order."""
    return tuple(_REGISTRY)


def every(*, kubernetes: Optional[bool] = None) -> Iterator[Platform]:
    """The registered platforms (only the Kubernetes ones, or only the others, when asked)."""
    return (p for p in tuple(_REGISTRY.values()) if kubernetes is None or p.kubernetes == kubernetes)


def node_facts(name: str) -> k8s_facts.Platform:
    """How the GPU nodes of Kubernetes platform ``name`` register; ``KeyError`` for another platform."""
    node = require(name).node
    if node is None:
        raise KeyError(f"platform {name!r} runs no Kubernetes GPU nodes")
    return node


_READERS = ("gpuready.resources.aws", "gpuready.resources.gcp", "gpuready.resources.azure",
            "gpuready.resources.kubernetes")


def _kubernetes(name: str, cloud: str, extras: tuple[str, ...], **facts: Any) -> Platform:
    return Platform(
        name, cloud, extras, f"gpuready_stacks.{name}", f"gpuready_components.{name}_gpu.outputs", plugins=_READERS,
        targets=MappingProxyType({SINGLE: "gpuready.smoke.kubernetes:KubernetesTarget",
                                  GANG: "gpuready.smoke.kubernetes_multinode:KubernetesGangTarget",
                                  SWEEP: "gpuready.smoke.sweep_kubernetes:KubernetesSweepTarget"}),
        node=k8s_facts.PLATFORMS[name], **facts)


BUILTIN = (
    Platform("aws-batch", "aws", ("aws",), "gpuready_stacks.aws_batch", "gpuready_components.batch_gpu.outputs",
             plugins=_READERS,
             targets=MappingProxyType({SINGLE: "gpuready.smoke.batch:BatchTarget",
                                       GANG: "gpuready.smoke.batch_multinode:BatchGangTarget",
                                       SWEEP: "gpuready.smoke.sweep_batch:BatchSweepTarget"}),
             compute_service="EC2"),
    _kubernetes("eks", "aws", ("aws", "k8s"), pool_max_setting="gpuready:maxSize",
                compute_service="EC2"),
    _kubernetes("gke", "gcp", ("gcp", "k8s"), managed_autoscaler=True,
                pool_max_setting="gpuready:maxNodes", compute_service="Compute Engine"),
    _kubernetes("aks", "azure", ("azure", "k8s"), managed_autoscaler=True,
                pool_max_setting="gpuready:maxCount", compute_service="Azure"),
)
"""gpuready's own platforms."""

for _platform in BUILTIN:
    register(_platform)
