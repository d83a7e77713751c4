"""What rendered resources mean: one reader per resource type, registered by its type token.

A reader wraps a resource's inputs (camelCase, as ``gpuready plan`` renders them or the policy engine hands them over)
and reads them as typed facts: a GPU pool's instance types, catalog rows, minimum, taints (as Kubernetes spells
them), labels and capacity; a Batch job definition's needs; a launch template's metadata options. Only the readers
know type tokens: ``gpuready plan``, the policy rules and the smoke diagnosis select and read resources through
:func:`read` and :func:`tokens`. No cloud SDK is imported.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from . import aws, azure, gcp, kubernetes
from .base import REGISTRY, GpuPool, PoolCapacity, Resource

GPU_POOLS = (aws.BatchComputeEnvironment, aws.EksNodeGroup, gcp.GkeNodePool, azure.AksAgentPool)
"""The capacity resources the policy rules treat as GPU pools."""
KUBERNETES_POOLS = (aws.EksNodeGroup, gcp.GkeNodePool, azure.AksAgentPool)
CAPACITY = (*GPU_POOLS, kubernetes.KarpenterNodePool)
"""Everything whose GPU capacity ``gpuready plan`` sums up (each has ``capacity()``)."""


def read(type_token: str, props: Mapping[str, Any]) -> Optional[Resource]:
    """The reader of a resource of ``type_token`` over ``props``; ``None`` for a type no reader knows."""
    reader = REGISTRY.get(type_token)
    return reader(props) if reader else None


def tokens(*readers: type[Resource]) -> tuple[str, ...]:
    """The type tokens of ``readers``: what a policy names as the types it runs on."""
    return tuple(r.TOKEN for r in readers)


def is_a(type_token: str, *readers: type[Resource]) -> bool:
    """Whether a resource of ``type_token`` is read by one of ``readers``."""
    return REGISTRY.get(type_token) in readers


def of_kind(resources: Sequence[Any], *readers: type[Resource], type_of: str = "type") -> list[Any]:
    """The ``resources`` (with their type token in attribute ``type_of``) that ``readers`` read."""
    return [r for r in resources if REGISTRY.get(getattr(r, type_of)) in readers]


__all__ = ["CAPACITY", "GPU_POOLS", "GpuPool", "KUBERNETES_POOLS", "PoolCapacity", "REGISTRY", "Resource", "aws",
           "azure", "gcp", "is_a", "kubernetes", "of_kind", "read", "tokens"]
