"""The platform registry: what each platform gpuready stands up *is*, in one descriptor, and the one way to add one.

A platform is the value of ``gpuready:platform`` and of a deployed stack's ``platform`` output (``aws-batch``,
``eks``, ``gke``, ``aks``). Its :class:`Platform` descriptor carries everything about it, as objects, so that no module
branches on a platform's name and no table outside the platform's own folders is keyed by it: its stack program, its
output contract and served components, its Kubernetes node facts, node images and kubeconfig credential plugin, the
readers, describers and offline answers that teach ``gpuready plan`` and the policy rules its resources (with the
readers of its GPU pools and the facts they read), its smoke targets (and why it lacks one), the wording of its
scaler's diagnosis, its catalog refresh, its node repair and the SDKs its extras install.

Every platform, gpuready's own included, joins the same way: a :class:`Platform` object named by an entry point of
the group :data:`ENTRY_POINTS` (gpuready's own are in its ``pyproject.toml``), loaded on the first look-up, or one
:func:`register` call. Parts that need a cloud SDK or a layer above this one are zero-argument callables that import
them when called, so that reading the registry loads no SDK. ``tests/platforms/`` shows a throw-away platform.

This module imports nothing of gpuready's: the platforms' own modules import it.
"""

from __future__ import annotations

import importlib.metadata
import threading
from dataclasses import dataclass, field
from types import MappingProxyType, ModuleType
from typing import Any, Callable, Iterator, Mapping, Optional

SINGLE, GANG, SWEEP = "single", "gang", "sweep"
"""Smoke modes: one job on one node (``gpuready smoke``), one gang job across nodes (``--nodes N``), one probe per
node (``gpuready sweep``)."""

ENTRY_POINTS = "gpuready.platforms"
"""The entry point group whose entries are :class:`Platform` objects; gpuready's own platforms are entries of it."""

_EMPTY: Mapping[Any, Any] = MappingProxyType({})


@dataclass(frozen=True)
class Launches:
    """How a platform's compute service is named and its launch failures are fixed, in a stuck job's diagnosis."""

    service: str
    """What the cloud calls the service that launches its nodes ("EC2 could not launch ...")."""
    quota_fix: str = "request a quota increase for the GPU family in this region"
    capacity_fix: str = "other zones or GPU machine types, no Spot, or retry later"
    """What to try when no capacity was found; ``{group}`` is replaced by the node group's name ('' when none)."""
    cause: str = ""
    """A command that shows why a launch in node group ``{group}`` failed ('' where there is none)."""
    join_fix: str = "check the node pool's events"
    """What to check when a node started but never joined the cluster."""
    quota_in_capacity: bool = False
    """Its capacity errors may also mean a vCPU quota (EC2's generic scale-up errors)."""


@dataclass(frozen=True)
class Platform:
    """What one platform is, for every layer that must tell platforms apart."""

    name: str
    """The value of ``gpuready:platform`` and of the ``platform`` output."""
    cloud: str
    """The catalog's cloud for its instance/VM/machine types (``aws``, ``gcp``, ``azure``)."""
    extras: tuple[str, ...]
    """gpuready's pip extras it needs (named together when one is missing)."""
    stack: Callable[[], ModuleType]
    """The stack program's module (``SETTINGS``, ``CLOUD_KEYS`` and ``build(config)``), imported when called."""
    contract: Any
    """The outputs its stack exports (:class:`gpuready_components.outputs.Contract`)."""
    sdks: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    """Top-level module of each cloud SDK it imports -> the extra that installs it (``pulumi_aws`` -> ``aws``)."""
    served: tuple[Any, ...] = ()
    """Its components in the component package (:class:`gpuready_components.served.Served`)."""
    readers: tuple[type, ...] = ()
    """The readers of its resource types (:class:`gpuready.resources.base.Resource` subclasses, one per token)."""
    pools: tuple[type, ...] = ()
    """The readers of its GPU pools (:class:`gpuready.resources.base.GpuPool` subclasses among ``readers``): a pool
    one of them reads is this platform's."""
    facts: Optional[ModuleType] = None
    """Its own facts (``components/<platform>/facts.py``), as the readers of its GPU pools read them (image types,
    labels, taints, node image keys)."""
    describers: Mapping[type, Callable[..., dict]] = field(default_factory=lambda: _EMPTY)
    """Reader -> the facts ``gpuready plan`` prints for its resources."""
    answers: Mapping[str, Callable[..., dict]] = field(default_factory=lambda: _EMPTY)
    """Invoke token -> its offline answer under ``gpuready plan`` (from the invoke's arguments and the plan's site)."""
    targets: Mapping[str, Callable[[], type]] = field(default_factory=lambda: _EMPTY)
    """Smoke mode (:data:`SINGLE`, :data:`GANG`, :data:`SWEEP`) -> the target class that runs it, imported when
    called."""
    lacks: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    """Smoke mode -> why the platform has no target for it (said to a user who asks for it)."""
    node: Any = None
    """Kubernetes platforms: how its GPU nodes register (:class:`gpuready_components.k8s_gpu.facts.NodeFacts`);
    ``None`` for the others."""
    credentials: Any = None
    """Kubernetes platforms: the credential plugin its stack's kubeconfig runs
    (:class:`gpuready_components.k8s_gpu.kubeconfig.CredentialPlugin`), which ``gpuready smoke`` lets run."""
    node_images: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    """``PLATFORM/IMAGE`` -> what its GPU node image ships (:class:`gpuready_components.k8s_gpu.facts.NodeImage`)."""
    launches: Optional[Launches] = None
    """How its compute service is named and its launch failures fixed; ``None`` where it launches no nodes."""
    managed_autoscaler: bool = False
    """The platform runs the cluster autoscaler itself (GKE, AKS): no flag or deployment of ours reaches it."""
    pool_max_setting: str = ""
    """The ``gpuready:`` setting that bounds the GPU pool's size (what a stuck pod's diagnosis tells to raise)."""
    refresh: Optional[Callable[[], ModuleType]] = None
    """Its cloud's catalog refresh (a module with ``fetch(answers, month)``), imported when called."""
    repair: Optional[Callable[[], ModuleType]] = None
    """Its cloud's node repair for ``gpuready sweep --repair`` (a module with ``repairer(outputs, api_client=None,
    **endpoints)``, :mod:`gpuready.repair`), imported when called; ``None``: the platform repairs nothing."""

    @property
    def kubernetes(self) -> bool:
        """Whether GPU work runs as Kubernetes pods (its GPU software comes from ``k8s_gpu``)."""
        return self.node is not None

    @property
    def extra(self) -> str:
        """The extras as pip writes them: ``aws,k8s``."""
        return ",".join(self.extras)

    def target(self, mode: str) -> Optional[type]:
        """The class that runs smoke ``mode`` here; ``None`` where the platform has none (:attr:`lacks` says why)."""
        load = self.targets.get(mode)
        return load() if load else None


class Registry:
    """The registered platforms by name. The entry points of :data:`ENTRY_POINTS` are loaded on the first look-up;
    :meth:`register` adds others. What a platform brings (readers, describers, answers, node images, served types)
    is part of its descriptor, so :meth:`unregister` takes all of it away."""

    def __init__(self, group: str = ENTRY_POINTS) -> None:
        self._group = group
        self._platforms: dict[str, Platform] = {}
        self._derived: dict[str, Any] = {}
        self._loaded = False
        self._entered = False
        self._loading = threading.RLock()
        """Held while the entry points load: a look-up from another thread (the gRPC threads of a provider or an
        engine) waits for all of them; the loading thread's own look-ups come back in and see those loaded so far."""

    def _load(self) -> dict[str, Platform]:
        if self._loaded:
            return self._platforms
        with self._loading:
            if self._loaded or self._entered:
                return self._platforms
            self._entered = True  # a plugin module that looks a platform up while it loads sees the others
            try:
                for entry in sorted(importlib.metadata.entry_points(group=self._group), key=lambda e: e.name):
                    platform = entry.load()
                    if not isinstance(platform, Platform):
                        raise TypeError(f"entry point {entry.name} = {entry.value} ({self._group}) is not a "
                                        "Platform")
                    self.register(platform)
            finally:
                self._loaded = True
        return self._platforms

    def register(self, platform: Platform) -> Platform:
        """Add ``platform``. A second, different platform of the same name is an error (its stacks would mean two
        things), and so is a reader, describer, offline answer, node image or served type that another platform
        already gives otherwise (one would silently replace the other)."""
        known = self._load()
        if platform.name in known:
            if known[platform.name] != platform:
                raise ValueError(f"a platform named {platform.name!r} is registered already")
            return platform
        for other in known.values():
            _clash(platform, other)
        known[platform.name] = platform
        self._derived.clear()
        return platform

    def unregister(self, name: str) -> None:
        """Forget the platform ``name`` and everything it brought."""
        self._load().pop(name, None)
        self._derived.clear()

    def all(self) -> tuple[Platform, ...]:
        """Every registered platform, by name (whatever the order they were registered in)."""
        return tuple(sorted(self._load().values(), key=lambda p: p.name))

    def derived(self, name: str, compute: Callable[[], Any]) -> Any:
        """``compute()``, kept under ``name`` until the next (un)registration: a table read from every platform."""
        self._load()
        if name not in self._derived:
            self._derived[name] = compute()
        return self._derived[name]


def _clash(new: Platform, old: Platform) -> None:
    """Raise where ``new`` gives a part ``old`` gives too, as a different object."""
    parts = (("reader for", lambda p: {r.TOKEN: r for r in p.readers}), ("describer for", lambda p: p.describers),
             ("offline answer for", lambda p: p.answers), ("node image", lambda p: p.node_images),
             ("served type", lambda p: {s.token: s for s in p.served}))
    for what, of in parts:
        mine, theirs = of(new), of(old)
        for key in mine.keys() & theirs.keys():
            if mine[key] is not theirs[key] and mine[key] != theirs[key]:
                label = getattr(key, "__name__", key)
                raise ValueError(f"platform {new.name!r} gives another {what} {label}, which {old.name!r} gives")


REGISTRY = Registry()
"""gpuready's registry (tests make their own :class:`Registry` where they need a fresh one)."""


def register(platform: Platform) -> Platform:
    """Add ``platform`` to :data:`REGISTRY` (see :meth:`Registry.register`)."""
    return REGISTRY.register(platform)


def unregister(name: str) -> None:
    """Forget the platform ``name`` and all it brought (tests register throw-away platforms)."""
    REGISTRY.unregister(name)


def get(name: Any) -> Optional[Platform]:
    """The platform called ``name``; ``None`` for any other value."""
    return next((p for p in REGISTRY.all() if p.name == name), None) if isinstance(name, str) else None


def require(name: str) -> Platform:
    """The platform called ``name``; ``KeyError`` naming the known ones otherwise."""
    platform = get(name)
    if platform is None:
        raise KeyError(f"unknown platform {name!r}: gpuready knows {', '.join(names())}")
    return platform


def names() -> tuple[str, ...]:
    """Every registered platform's name, in order."""
    return tuple(p.name for p in REGISTRY.all())


def every(*, kubernetes: Optional[bool] = None) -> Iterator[Platform]:
    """The registered platforms (only the Kubernetes ones, or only the others, when asked)."""
    return (p for p in REGISTRY.all() if kubernetes is None or p.kubernetes == kubernetes)


def node_facts(name: str) -> Any:
    """How the GPU nodes of Kubernetes platform ``name`` register; ``KeyError`` for another platform."""
    node = require(name).node
    if node is None:
        raise KeyError(f"platform {name!r} runs no Kubernetes GPU nodes")
    return node


def of_pool(reader: type) -> Optional[Platform]:
    """The platform whose GPU pools ``reader`` (a class) reads: the one that names it among its ``pools`` (the first
    by name, where a twin names it too); ``None`` when no registered platform does."""
    return REGISTRY.derived("pools", lambda: MappingProxyType(
        {r: p for p in reversed(REGISTRY.all()) for r in p.pools})).get(reader)


def node_images() -> Mapping[str, Any]:
    """Every registered platform's node images, by their ``PLATFORM/IMAGE`` key."""
    return collect("node_images", lambda p: p.node_images)


def clouds() -> tuple[str, ...]:
    """The catalog clouds of the registered platforms, in registration order."""
    return tuple(dict.fromkeys(p.cloud for p in every()))


def collect(name: str, part: Callable[[Platform], Mapping[Any, Any]]) -> Mapping[Any, Any]:
    """One part of every registered platform merged (``collect("answers", lambda p: p.answers)``), kept under
    ``name`` until the registry changes; registration keeps the parts of two platforms from disagreeing."""
    return REGISTRY.derived(name, lambda: MappingProxyType({k: v for p in every() for k, v in part(p).items()}))


def once(*parts: Mapping[Any, Any]) -> Mapping[Any, Any]:
    """``parts`` merged into one read-only mapping, for a descriptor built from shared pieces."""
    return MappingProxyType({key: value for part in parts for key, value in part.items()})
