"""The readers of :mod:`gpuready.resources` over the resources a policy rule gets (``PolicyResource``)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from gpuready.resources import GpuPool, Resource, read
from gpuready.resources import of_kind as _of_kind
from gpuready.resources.base import get

__all__ = ["facts", "get", "is_gpu_capacity", "of_kind", "source"]


def facts(resource: Any) -> Any:
    """The reader of a ``PolicyResource`` (``None`` for a type no reader knows)."""
    return read(resource.resource_type, resource.props)


def is_gpu_capacity(resource_type: str, props: Mapping[str, Any]) -> bool:
    """Whether a resource is a pool that launches GPU types (catalog rows, or types the stack declared)."""
    pool = read(resource_type, props)
    return isinstance(pool, GpuPool) and pool.is_gpu


def of_kind(resources: Sequence[Any], *readers: type[Resource]) -> list[Any]:
    """The ``PolicyResource`` items that ``readers`` read."""
    return _of_kind(resources, *readers, type_of="resource_type")


def source(resource: Any, resources: Sequence[Any]) -> Any:
    """Where a GPU pool's nodes come from (:meth:`gpuready.resources.base.GpuPool.source`), read with the resources
    it names: those its launch template input was built from (the engine's property dependencies), or, for a pool
    with no such input, every resource of the stack (it picks what it names)."""
    from .rule import dependencies

    pool = facts(resource)
    field = getattr(pool, "LAUNCH_TEMPLATE_INPUT", "")
    linked = dependencies(resource, field) if field else resources
    return pool.source([reader for reader in map(facts, linked) if reader is not None])
