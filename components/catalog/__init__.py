"""The GPU catalog: every instance, VM and machine type gpuready knows, with its GPUs, CPUs, memory and price.

The facts live in ``gpu_instances.csv`` (one row per type; ``gpu_memory_gib`` is GiB, 2**30 bytes, as the cloud
reports it), ``gpu_models.csv`` (the memory sizes each GPU model comes in: the vendor's GB figure with its source,
and the GiB figure the clouds' APIs report for it, EC2's ``SizeInMiB`` / 1024, with its source; a model EC2 does not
report is the vendor's GB converted as decimal, and says so. A GPU's memory is the chip's, not the cloud's: every
row's GiB figure is its model size's GiB figure there, on every cloud) and ``sources.csv`` (where each row's figures
come from);
this module loads them and checks rows (:func:`problems`). A :class:`Catalog` is the file's rows plus the rows a user
declares for types newer than the file (a component's ``extra_instance_types``, a stack's
``gpuready:extraInstanceTypes``): each component builds its own (:func:`declared`) from its args, so what one
component or render declares never reaches another; the module's lookups (:func:`find`, :func:`lookup`...) read
:data:`FILE`, the file alone. Everything here is immutable; lookups of unknown names raise
:class:`UnknownInstanceType` with the closest known names, or say whose GPUs a type has when they are not NVIDIA's
(:func:`not_nvidia`).
"""

from __future__ import annotations

import csv
import difflib
import functools
import re
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Iterable, Mapping, Optional, Sequence

from ..errors import ConfigError

from .. import platforms

_HERE = Path(__file__).parent
CATALOG_CSV = _HERE / "gpu_instances.csv"
GPU_MODELS_CSV = _HERE / "gpu_models.csv"
MEMORY_TOLERANCE = 0.1
"""How far (a fraction) a cloud's figure for a GPU's memory may be from a memory size of its model in
``gpu_models.csv`` (both in bytes) and still be that size: EC2 reports the L4's 24 GB as 22,888 MiB (24.0 GB), the
H100's 80 GB as 81,920 MiB (85.9 GB, 7% more) and the B200's 180 GB as 183,359 MiB; the sizes of one model differ by
more (A100 40 and 80, H100 80 and 94), and the nearest size is the one."""
BYTES_PER_GB, BYTES_PER_GIB = 10**9, 2**30


def gib_of_gb(gb: float) -> float:
    """A decimal GB figure in GiB, to 0.01 (24 GB is 22.35 GiB): the GiB of a model size in ``gpu_models.csv`` that
    no cloud's API reports (source ``gib-from-vendor-gb``). Not what a cloud's row carries for a model EC2 reports:
    the H100's 80 GB is 80 GiB there (:func:`model_gib`)."""
    return round(gb * BYTES_PER_GB / BYTES_PER_GIB, 2)


def gib_text(gib: float) -> str:
    """A GPU memory figure as gpuready prints it, to 0.01 GiB with its unit: ``22.35 GiB``, ``16 GiB``."""
    return f"{float(gib):.2f}".rstrip("0").rstrip(".") + " GiB"


def gib_of_mib(mib: int) -> float:
    """EC2's ``SizeInMiB`` in GiB, exactly (22,888 MiB is 22.3515625 GiB)."""
    return mib / 1024


COLUMNS = ("cloud", "name", "accelerator", "gpu_model", "gpus", "gpu_memory_gib", "vcpus", "memory_gib",
           "price_usd_hour", "price_region", "price_date", "spec_source", "price_source", "efa_interfaces",
           "network_gbps")
"""The columns of ``gpu_instances.csv``, in order."""

GPU_MODELS = ("T4", "T4g", "V100", "A10G", "A10", "L4", "L40S", "A100", "H100", "H100 NVL", "H200", "H200 NVL",
              "B200", "B300", "GB200", "GB300", "RTX PRO Server 6000", "RTX PRO 4500")
"""NVIDIA GPU models as the catalog names them (EC2's ``GpuInfo.Gpus[].Name`` where EC2 sells the model: ``T4g`` is
the T4 of the Graviton g5g; ``H100 NVL`` is Azure's NC H100 v5 GPU, 94 GB; ``RTX PRO Server 6000`` is the RTX PRO
6000 Blackwell Server Edition of EC2 G7e and Azure's NC RTXPRO6000BSE v6; ``GB200`` and ``GB300`` the Blackwell GPUs
of the NVL72 racks). Code keyed on the model (the probe's typical figures, the fabric tables) must know every one,
or say it has no figure for it."""

NOT_NVIDIA: Mapping[str, tuple[tuple[str, str], ...]] = MappingProxyType({
    "aws": ((r"g4ad\.", "AMD Radeon Pro V520"), (r"(inf1|inf2)\.", "AWS Inferentia"),
            (r"(trn1|trn1n|trn2|trn2u)\.", "AWS Trainium"), (r"dl1\.", "Habana Gaudi (Intel)"),
            (r"dl2q\.", "Qualcomm AI 100"), (r"(f1|f2|vt1)\.", "FPGAs or Xilinx media accelerators")),
    "gcp": (),
    "azure": ((r"Standard_ND96isr_MI300X_v5", "AMD Instinct MI300X"),
              (r"Standard_NV\d+as_v4", "AMD Radeon Instinct MI25"),
              (r"Standard_NG\d+ad[a-z]*_V620_v1", "AMD Radeon Pro V620"),
              (r"Standard_NV\d+ad[a-z]*_V710_v5", "AMD Radeon Pro V710")),
})
"""Accelerated types whose accelerators are not NVIDIA GPUs (cloud -> (name pattern, whose accelerators)): gpuready
says so rather than "unknown type" (EC2 ``GpuInfo.Gpus[].Manufacturer``, Azure's GPU VM size pages)."""

FRACTIONAL_GPU = MappingProxyType({
    "aws": ((r"(g6f|gr6f)\.", "a fraction of one L4 GPU (1/8 to 1/2, NVIDIA vGPU)"),),
    "azure": ((r"Standard_NV(6|12|18)ads_A10_v5", "a sixth to a half of one A10 (NVIDIA GRID vGPU)"),)})
"""Types that give a fraction of a GPU: the catalog counts whole GPUs, and a Kubernetes or Batch job cannot ask for
part of one, so these are refused with this reason (EC2 reports ``GpuPartitionSize`` below 1 for them)."""


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
    """NVIDIA model as the catalog names it (:data:`GPU_MODELS`)."""
    gpus: int
    """GPUs in one instance."""
    gpu_memory_gib: float
    """Memory of one GPU in GiB (2**30 bytes) as the clouds' APIs report it: EC2's ``GpuInfo`` ``SizeInMiB`` / 1024
    (the L4 22.35, the H100 80), the same figure for the same model on GCP and Azure (:func:`model_gib`). Not the
    vendor's GB figure, which :attr:`gpu_memory_gb` gives."""
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
    def gpu_memory_gb(self) -> Optional[float]:
        """The memory size of ``gpu_models.csv`` (vendor decimal GB: the L4's 24) this GPU is; ``None`` for a
        declared type whose figure is no size the catalog knows."""
        return memory_size(self.gpu_model, self.gpu_memory_gib)

    @property
    def memory_mib(self) -> int:
        return int(self.memory_gib * 1024)


class UnknownInstanceType(LookupError):
    """A type name the catalog does not hold; ``suggestions`` are the closest names it does; ``vendor`` whose
    accelerators the type has when they are not NVIDIA GPUs."""

    def __init__(self, cloud: str, name: str, suggestions: list[str], vendor: Optional[str] = None) -> None:
        self.cloud = cloud
        self.name = name
        self.suggestions = suggestions
        self.vendor = vendor
        if vendor:
            text = f"{name!r} has {vendor} accelerators, not NVIDIA GPUs: gpuready runs NVIDIA GPUs only."
        else:
            hint = f" Did you mean {', '.join(suggestions)}?" if suggestions else ""
            text = f"{name!r} is not a GPU type in gpuready's {cloud} catalog.{hint}"
        super().__init__(text)


def _matching(table: Mapping[str, tuple[tuple[str, str], ...]], cloud: str, name: str) -> Optional[str]:
    return next((what for pattern, what in table.get(cloud, ()) if re.match(pattern, name)), None)


def not_nvidia(cloud: str, name: str) -> Optional[str]:
    """Whose accelerators ``name`` has when they are not NVIDIA GPUs (``AMD Instinct MI300X``), else ``None``."""
    return _matching(NOT_NVIDIA, cloud, name)


def fractional(cloud: str, name: str) -> Optional[str]:
    """What part of a GPU ``name`` gives when it is less than one whole GPU, else ``None``."""
    return _matching(FRACTIONAL_GPU, cloud, name)


def _num(text: str) -> Optional[float]:
    return float(text) if text else None


def read_csv(path: Path) -> tuple[GpuInstanceType, ...]:
    """The rows of a catalog CSV file (``gpu_instances.csv`` or one written by ``gpuready catalog refresh``)."""
    with open(path, newline="") as f:
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


def write_csv(path: Path, rows_: Iterable[GpuInstanceType]) -> None:
    """Write ``rows_`` as a catalog CSV file (the columns of :data:`COLUMNS`)."""
    def cell(column: str, value: Any) -> str:
        if value is None:
            return ""
        if isinstance(value, float) and column == "network_gbps" and value.is_integer():
            return str(int(value))
        return repr(value) if isinstance(value, float) else str(value)

    with open(path, "w", newline="") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(COLUMNS)
        for row in rows_:
            out.writerow([cell(c, getattr(row, c)) for c in COLUMNS])


@functools.lru_cache(maxsize=1)
def file_rows() -> tuple[GpuInstanceType, ...]:
    """The rows of ``gpu_instances.csv``, in file order."""
    return read_csv(CATALOG_CSV)


STAMP_PREFIX = "gpu-facts.gpuready.io/"
"""The key, before the type's name, of the AWS tag or Kubernetes annotation that carries the GPU facts of a type the
stack declared on each resource that launches it (``gpu-facts.gpuready.io/g9.xlarge``): the catalog of the process
that reads the resource (the policy pack's, the smoke test's) does not hold the type. A valid AWS tag key (at most
128 characters) and Kubernetes annotation key (a DNS subdomain, then the type's name)."""
_STAMPED = (("gpuModel", "gpu_model", str), ("gpus", "gpus", int), ("gpuMemoryGiB", "gpu_memory_gib", float),
            ("vcpus", "vcpus", int), ("memoryGiB", "memory_gib", float), ("efaInterfaces", "efa_interfaces", int))
"""The facts a stamp carries, by the names of ``gpuready:extraInstanceTypes``."""
STAMP_MOST = 256
"""The longest tag value Batch and EKS take (botocore's ``TagValue``: max 256)."""


def _figure(value: float) -> str:
    number = float(value)
    return str(int(number)) if number.is_integer() else repr(number)


def stamp(row: GpuInstanceType) -> tuple[str, str]:
    """``row``'s GPU facts as a tag or annotation (key, value): ``gpuModel=L4:gpus=1:gpuMemoryGiB=22.35:vcpus=4:
    memoryGiB=16:efaInterfaces=0``, in the characters every AWS service takes in tag values (letters, digits,
    spaces, ``+ - = . _ : / @``), within :data:`STAMP_MOST`."""
    value = ":".join(f"{key}={getattr(row, field) if kind is str else _figure(getattr(row, field))}"
                     for key, field, kind in _STAMPED)
    return STAMP_PREFIX + row.name, value


def stamped(cloud: str, name: str, value: Any) -> Optional[GpuInstanceType]:
    """The row a stamp's ``value`` gives type ``name`` (unpriced, as a stack's declared rows are); ``None`` for a
    value that is not a stamp or whose facts fail :func:`problems`."""
    if not isinstance(value, str):
        return None
    pairs = dict(part.partition("=")[::2] for part in value.split(":"))
    facts: dict[str, Any] = {"efa_interfaces": 0}
    try:
        for key, field, kind in _STAMPED:
            if key in pairs:
                facts[field] = kind(pairs[key])
        row = GpuInstanceType(cloud=cloud, name=name, accelerator="", price_usd_hour=None, price_region="",
                              price_date="", spec_source="", price_source="", **facts)
    except (TypeError, ValueError):
        return None
    return None if problems(row, provenance=False) else row


def problems(row: GpuInstanceType, provenance: bool = True) -> list[str]:
    """What is wrong with ``row``, one phrase each (empty: nothing). The hardware checks apply to every row, catalog
    or a stack's own; ``provenance`` adds the price date and source keys that every catalog row must have."""
    found = []
    if row.cloud not in platforms.clouds():
        found.append(f"cloud {row.cloud!r} is not one of {', '.join(platforms.clouds())}")
    if row.gpu_model not in GPU_MODELS:
        found.append(f"GPU model {row.gpu_model!r} is not one of {', '.join(GPU_MODELS)}")
    if not 1 <= row.gpus <= 16:
        found.append(f"{row.gpus} GPUs: a whole number from 1 to 16")
    if not 8 <= row.gpu_memory_gib <= 288:
        found.append(f"{row.gpu_memory_gib} GiB per GPU: from 8 to 288")
    if not 1 <= row.vcpus <= 512:
        found.append(f"{row.vcpus} vCPUs: from 1 to 512")
    if not row.vcpus <= row.memory_gib <= 32768:
        found.append(f"{row.memory_gib} GiB of memory: at least 1 GiB per vCPU, at most 32768")
    if row.price_usd_hour is not None and not 0.1 < row.price_usd_hour < 200:
        found.append(f"{row.price_usd_hour} $/h: above 0.1 and below 200")
    if not 0 <= row.efa_interfaces <= 32 or (row.cloud != "aws" and row.efa_interfaces):
        found.append(f"{row.efa_interfaces} EFA interfaces: 0 to 32, and 0 outside AWS")
    if row.network_gbps is not None and not 1 <= row.network_gbps <= 6400:
        found.append(f"{row.network_gbps} Gbit/s: from 1 to 6400")
    if row.cloud == "gcp" and not row.accelerator.startswith("nvidia-"):
        found.append(f"GCP accelerator {row.accelerator!r}: an nvidia-* accelerator type")
    if provenance:
        known = gpu_memories().get(row.gpu_model, {})
        if row.gpu_model in GPU_MODELS and memory_size(row.gpu_model, row.gpu_memory_gib) is None:
            found.append(f"{gib_text(row.gpu_memory_gib)} per {row.gpu_model}: no memory size of gpu_models.csv "
                         f"({', '.join(f'{m:g} GB' for m in known) or 'none'}): give the cloud's figure in GiB, or "
                         "add the model's memory size there with its source")
        if not re.fullmatch(r"\d{4}-\d{2}", row.price_date) or not row.price_region:
            found.append(f"price date {row.price_date!r} (YYYY-MM) and region {row.price_region!r} required")
        for key in (row.spec_source, row.price_source):
            if key not in sources():
                found.append(f"source {key!r} is not in sources.csv")
    return found


@functools.lru_cache(maxsize=1)
def _gpu_model_rows() -> tuple[dict[str, str], ...]:
    with open(GPU_MODELS_CSV, newline="") as f:
        return tuple(csv.DictReader(f))


@functools.lru_cache(maxsize=1)
def gpu_memories() -> dict[str, dict[float, str]]:
    """``gpu_models.csv``: GPU model -> {each memory size it comes in, the vendor's GB per GPU: the source key of
    that figure}."""
    found: dict[str, dict[float, str]] = {}
    for r in _gpu_model_rows():
        found.setdefault(r["gpu_model"], {})[float(r["gpu_memory_gb"])] = r["source"]
    return found


@functools.lru_cache(maxsize=1)
def gpu_memory_gibs() -> dict[tuple[str, float], tuple[float, str]]:
    """``gpu_models.csv``: (GPU model, vendor GB size) -> (its GiB figure as the clouds' APIs report it, the source
    key of that figure: ``aws-ec2-api`` for EC2's ``SizeInMiB`` / 1024, ``gib-from-vendor-gb`` where no API figure
    was at hand and the vendor's GB is converted as decimal)."""
    return {(r["gpu_model"], float(r["gpu_memory_gb"])): (float(r["gpu_memory_gib"]), r["gib_source"])
            for r in _gpu_model_rows()}


def model_gib(model: str, gb: Optional[float]) -> Optional[float]:
    """The GiB figure of ``model``'s ``gb`` size (vendor GB) in ``gpu_models.csv``, the one every cloud's row of that
    GPU carries (H100 80 GB: 80.0, as EC2 reports it; L4 24 GB: 22.3515625); ``None`` for a size it does not have."""
    found = gpu_memory_gibs().get((model, float(gb))) if gb is not None else None
    return found[0] if found else None


def memory_size(model: str, reported_gib: float) -> Optional[float]:
    """The memory size of ``gpu_models.csv`` (GB) for ``model`` that a figure a cloud reports (``reported_gib``
    GiB) is: the nearest within :data:`MEMORY_TOLERANCE`; None when none is."""
    reported = reported_gib * BYTES_PER_GIB / BYTES_PER_GB
    close = [m for m in gpu_memories().get(model, {}) if abs(m - reported) <= MEMORY_TOLERANCE * m]
    return min(close, key=lambda m: abs(m - reported)) if close else None


@functools.lru_cache(maxsize=1)
def sources() -> dict[str, dict[str, str]]:
    """``sources.csv`` by key: ``{"url": ..., "what": ...}``."""
    with open(_HERE / "sources.csv", newline="") as f:
        return {r["key"]: {"url": r["url"], "what": r["what"]} for r in csv.DictReader(f)}


def _declared_row(cloud: str, item: Any) -> GpuInstanceType:
    return GpuInstanceType(
        cloud=cloud, name=item.name, accelerator="", gpu_model=item.gpu_model, gpus=item.gpus,
        gpu_memory_gib=item.gpu_memory_gib, vcpus=item.vcpus, memory_gib=item.memory_gib, price_usd_hour=None,
        price_region="", price_date="", spec_source="", price_source="", efa_interfaces=item.efa_interfaces)


def _refusal(row: GpuInstanceType, before: Sequence[GpuInstanceType]) -> Optional[tuple[str, str]]:
    """Why a declared ``row`` cannot join the catalog after the declared rows ``before``, as (where: ``""`` for the
    whole row, ``".name"`` for its name; what), or ``None``."""
    found = problems(row, provenance=False)
    if found:
        return "", "; ".join(found)
    if any(r.cloud == row.cloud and r.name == row.name for r in (*file_rows(), *before)):
        return ".name", "already in gpuready's catalog or listed twice"
    return None


@functools.lru_cache(maxsize=64)
def _index(cloud: str, extra: tuple[GpuInstanceType, ...]) -> Mapping[str, GpuInstanceType]:
    return MappingProxyType({r.name: r for r in (*file_rows(), *extra) if r.cloud == cloud})


@dataclass(frozen=True)
class Catalog:
    """The types one component (or one render) knows: the file's rows, then ``extra``, the rows its user declared
    for types newer than the file (unpriced). An immutable value: a component builds its own from its args
    (:func:`declared`) and passes it to what checks its types, so declared types never outlive it. Construction
    raises ``ValueError`` for a declared row with :func:`problems`, one the file already holds, or one listed
    twice."""

    extra: tuple[GpuInstanceType, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "extra", tuple(self.extra))
        for i, row in enumerate(self.extra):
            refusal = _refusal(row, self.extra[:i])
            if refusal:
                raise ValueError(f"{row.name}: {refusal[1]}")

    def rows(self) -> tuple[GpuInstanceType, ...]:
        """Every row, in file order, then the declared ones."""
        return file_rows() + self.extra

    def names(self, cloud: str) -> list[str]:
        """Every type name known for ``cloud``."""
        return list(_index(cloud, self.extra))

    def find(self, cloud: str, name: str) -> Optional[GpuInstanceType]:
        """The row for ``name`` on ``cloud``, or ``None``."""
        return _index(cloud, self.extra).get(name)

    def find_gcp(self, machine_type: str, accelerators: Iterable[Mapping[str, Any]] = ()) -> Optional[GpuInstanceType]:
        """The row of a GCP machine as a node config names it: an N1 machine with an attached accelerator
        (``{type, count}``, as in ``guestAccelerators``), or a G2/A2/A3 machine type with its own GPUs."""
        for accelerator in accelerators:
            row = self.find("gcp", f"{machine_type}:{accelerator.get('type')}:{int(accelerator.get('count', 0))}")
            if row:
                return row
        return self.find("gcp", machine_type)

    def suggest(self, cloud: str, name: str, n: int = 3) -> list[str]:
        """The known names closest to ``name``."""
        return difflib.get_close_matches(name, self.names(cloud), n=n, cutoff=0.5)

    def lookup(self, cloud: str, name: str) -> GpuInstanceType:
        """The row for ``name`` on ``cloud``; raises :class:`UnknownInstanceType` with suggestions."""
        if cloud not in platforms.clouds():
            raise ValueError(f"cloud must be one of {', '.join(platforms.clouds())}, not {cloud!r}")
        row = self.find(cloud, name)
        if row is None:
            raise UnknownInstanceType(cloud, name, self.suggest(cloud, name), not_nvidia(cloud, name))
        return row

    def lookup_all(self, cloud: str, names_: Iterable[str]) -> list[GpuInstanceType]:
        """:meth:`lookup` for each name, in order."""
        return [self.lookup(cloud, n) for n in names_]

    def stamps(self, cloud: str, names_: Iterable[str]) -> dict[str, str]:
        """The stamps (:func:`stamp`) of the declared types among ``names_``; none for the file's types, so the
        resources of catalog types carry nothing more."""
        wanted = set(names_)
        return dict(stamp(row) for row in self.extra if row.cloud == cloud and row.name in wanted)


def declared(cloud: str, items: Iterable[Any], field: str = "extra_instance_types") -> Catalog:
    """The catalog of a component whose ``field`` declares ``items`` (``ExtraInstanceTypeArgs``: name, gpu_model,
    gpus, gpu_memory_gib, vcpus, memory_gib, efa_interfaces) as types of ``cloud``; a :class:`ConfigError` names
    the item (``extra_instance_types[1]``) whose facts fail :func:`problems`, or its name (``...[1].name``) where the
    file already holds the type or the list gives it twice."""
    rows: list[GpuInstanceType] = []
    for i, item in enumerate(items):
        row = _declared_row(cloud, item)
        refusal = _refusal(row, rows)
        if refusal:
            where, what = refusal
            raise ConfigError(f"{field}[{i}]{where}", row.name, what, "remove it from the list" if where else
                              "give the type's figures as its cloud states them (EC2 DescribeInstanceTypes)")
        rows.append(row)
    return Catalog(tuple(rows))


FILE = Catalog()
"""gpuready's own catalog: the file's rows alone. The module-level lookups below read it."""
rows, names, find, find_gcp, suggest, lookup, lookup_all = (
    FILE.rows, FILE.names, FILE.find, FILE.find_gcp, FILE.suggest, FILE.lookup, FILE.lookup_all)
