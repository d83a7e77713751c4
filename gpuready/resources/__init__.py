"""What rendered resources mean: one reader per resource type, registered by its type token.

A reader wraps a resource's inputs (camelCase, as ``gpuready plan`` renders them or the policy engine hands them over)
and reads them as typed facts: a GPU pool's instance types, catalog rows, minimum, taints (as Kubernetes spells
them), labels and capacity; a Batch job definition's needs; a launch template's metadata options. Only the readers
know type tokens: ``gpuready plan``, the policy rules and the smoke diagnosis select and read resources through
:func:`read` and :func:`tokens`. No cloud SDK is imported.

Readers are carried by the platforms that use them (a descriptor's ``readers``, :mod:`gpuready_components.platforms`):
a platform registered later (a throw-away one in the tests, a third party's) is read like gpuready's own, and one
unregistered takes its readers with it.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from gpuready_components import platforms

from . import aws, azure, gcp, kubernetes
from .base import GpuPool, PoolCapacity, Resource


def by_token() -> Mapping[str, type[Resource]]:
    """Type token -> reader, over every registered platform (registration keeps two platforms from disagreeing)."""
    return platforms.collect("readers", lambda p: {r.TOKEN: r for r in p.readers})


def gpu_pools() -> tuple[type[GpuPool], ...]:
    """The readers of capacity that launches GPU nodes (compute environments, node groups and pools): what the
    policy rules treat as GPU pools."""
    return tuple(r for r in by_token().values() if issubclass(r, GpuPool))


def kubernetes_pools() -> tuple[type[GpuPool], ...]:
    """The GPU pools whose platform runs GPU work as Kubernetes pods."""
    return tuple(r for r in gpu_pools() if getattr(r.platform(), "kubernetes", False))


def kubernetes_clusters() -> tuple[type[Resource], ...]:
    """The readers of Kubernetes clusters a stack creates (each reads the cluster's ``kubernetes_version``)."""
    return tuple(r for r in by_token().values() if isinstance(getattr(r, "kubernetes_version", None), property))


def capacity_readers() -> tuple[type[Resource], ...]:
    """Every reader whose GPU capacity ``gpuready plan`` sums up (each has ``capacity()``): the GPU pools and the
    node pools of node provisioners (Karpenter)."""
    return tuple(r for r in by_token().values() if issubclass(r, GpuPool) or callable(getattr(r, "capacity", None)))


def read(type_token: str, props: Mapping[str, Any]) -> Optional[Resource]:
    """The reader of a resource of ``type_token`` over ``props``; ``None`` for a type no reader knows."""
    reader = by_token().get(type_token)
    return reader(props) if reader else None


def tokens(*readers: type[Resource]) -> tuple[str, ...]:
    """The type tokens of ``readers``: what a policy names as the types it runs on."""
    return tuple(r.TOKEN for r in readers)


def is_a(type_token: str, *readers: type[Resource]) -> bool:
    """Whether a resource of ``type_token`` is read by one of ``readers``."""
    return by_token().get(type_token) in readers


def of_kind(resources: Sequence[Any], *readers: type[Resource], type_of: str = "type") -> list[Any]:
    """The ``resources`` (with their type token in attribute ``type_of``) that ``readers`` read."""
    known = by_token()
    return [r for r in resources if known.get(getattr(r, type_of)) in readers]


__all__ = ["GpuPool", "PoolCapacity", "Resource", "aws", "azure", "capacity_readers", "gcp", "gpu_pools",
           "is_a", "kubernetes", "kubernetes_clusters", "kubernetes_pools", "of_kind", "by_token", "read", "tokens"]
