"""The GPU catalog: every instance, VM and machine type gpuready knows, with its GPUs, CPUs, memory and price.

The facts live in ``gpu_instances.csv`` (one row per type) and ``sources.csv`` (where each row's figures come from);
this module only loads them. Rows are immutable; lookups of unknown names raise :class:`UnknownInstanceType` with the
closest known names.
"""

from __future__ import annotations

import csv
import difflib
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional

CLOUDS = ("aws", "gcp", "azure")
_HERE = Path(__file__).parent


@dataclass(frozen=True)
class GpuInstanceType:
    """One instance / VM / machine type with NVIDIA GPUs, as its vendor documents it."""

    cloud: str
    """``aws``, ``gcp`` or ``azure``."""
    name: str
    """The vendor's type name. GCP N1 rows, whose GPUs are attached separately, read ``MACHINE:ACCELERATOR:COUNT``."""
    accelerator: str
    """GCP accelerator type (``nvidia-l4``); empty for AWS and Azure."""
    gpu_model: str
    """NVIDIA model as the vendor names it: T4, V100, A10G, A10, L4, L40S, A100, H100, H200, B200, B300."""
    gpus: int
    """GPUs in one instance."""
    gpu_memory_gib: float
    """Memory of one GPU, GiB."""
    vcpus: int
    memory_gib: float
    price_usd_hour: Optional[float]
    """On-demand price in ``price_region`` on ``price_date``; ``None`` where the type is not sold on demand."""
    price_region: str
    price_date: str
    spec_source: str
    """Key into ``sources.csv`` for the hardware figures."""
    price_source: str
    """Key into ``sources.csv`` for the price."""
    efa_interfaces: int = 0
    """Elastic Fabric Adapter interfaces one instance takes (EC2's ``NetworkInfo.EfaInfo.MaximumEfaInterfaces``);
    0 where the type has no EFA, and for every GCP and Azure row."""
    network_gbps: Optional[float] = None
    """Network bandwidth in Gbit/s as EC2 states it (``NetworkPerformance``: ``4x 100 Gigabit`` is 400, ``Up to 10
    Gigabit`` is 10, a burst figure); ``None`` where the catalog does not record it."""

    @property
    def machine_type(self) -> str:
        """The type to ask the cloud for (for GCP N1 rows, the machine type without its accelerator)."""
        return self.name.split(":", 1)[0]

    @property
    def memory_mib(self) -> int:
        return int(self.memory_gib * 1024)


class UnknownInstanceType(LookupError):
    """A type name the catalog does not hold; ``suggestions`` are the closest names it does."""

    def __init__(self, cloud: str, name: str, suggestions: list[str]) -> None:
        self.cloud = cloud
        self.name = name
        self.suggestions = suggestions
        hint = f" Did you mean {', '.join(suggestions)}?" if suggestions else ""
        super().__init__(f"{name!r} is not a GPU type in gpuready's {cloud} catalog.{hint}")


def _num(text: str) -> Optional[float]:
    return float(text) if text else None


@functools.lru_cache(maxsize=1)
def rows() -> tuple[GpuInstanceType, ...]:
    """Every catalog row, in file order."""
    with open(_HERE / "gpu_instances.csv", newline="") as f:
        return tuple(
            GpuInstanceType(
                cloud=r["cloud"],
                name=r["name"],
                accelerator=r["accelerator"],
                gpu_model=r["gpu_model"],
                gpus=int(r["gpus"]),
                gpu_memory_gib=float(r["gpu_memory_gib"]),
                vcpus=int(r["vcpus"]),
                memory_gib=float(r["memory_gib"]),
                price_usd_hour=_num(r["price_usd_hour"]),
                price_region=r["price_region"],
                price_date=r["price_date"],
                spec_source=r["spec_source"],
                price_source=r["price_source"],
                efa_interfaces=int(r["efa_interfaces"]),
                network_gbps=_num(r["network_gbps"]),
            )
            for r in csv.DictReader(f)
        )


@functools.lru_cache(maxsize=1)
def sources() -> dict[str, dict[str, str]]:
    """``sources.csv`` by key: ``{"url": ..., "what": ...}``."""
    with open(_HERE / "sources.csv", newline="") as f:
        return {r["key"]: {"url": r["url"], "what": r["what"]} for r in csv.DictReader(f)}


@functools.lru_cache(maxsize=None)
def _index(cloud: str) -> dict[str, GpuInstanceType]:
    return {r.name: r for r in rows() if r.cloud == cloud}


def names(cloud: str) -> list[str]:
    """Every type name known for ``cloud``."""
    return list(_index(cloud))


def find(cloud: str, name: str) -> Optional[GpuInstanceType]:
    """The row for ``name`` on ``cloud``, or ``None``."""
    return _index(cloud).get(name)


def find_gcp(machine_type: str, accelerators: Iterable[Mapping[str, Any]] = ()) -> Optional[GpuInstanceType]:
    """The row of a GCP machine as a node config names it: an N1 machine with an attached accelerator
    (``{type, count}``, as in ``guestAccelerators``), or a G2/A2/A3 machine type with its own GPUs."""
    for accelerator in accelerators:
        row = find("gcp", f"{machine_type}:{accelerator.get('type')}:{int(accelerator.get('count', 0))}")
        if row:
            return row
    return find("gcp", machine_type)


def suggest(cloud: str, name: str, n: int = 3) -> list[str]:
    """The known names closest to ``name``."""
    return difflib.get_close_matches(name, names(cloud), n=n, cutoff=0.5)


def lookup(cloud: str, name: str) -> GpuInstanceType:
    """The row for ``name`` on ``cloud``; raises :class:`UnknownInstanceType` with suggestions."""
    if cloud not in CLOUDS:
        raise ValueError(f"cloud must be one of {', '.join(CLOUDS)}, not {cloud!r}")
    row = find(cloud, name)
    if row is None:
        raise UnknownInstanceType(cloud, name, suggest(cloud, name))
    return row


def lookup_all(cloud: str, names_: Iterable[str]) -> list[GpuInstanceType]:
    """:func:`lookup` for each name, in order."""
    return [lookup(cloud, n) for n in names_]
