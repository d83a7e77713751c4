"""``gpuready:extraInstanceTypes``: GPU facts a stack declares for instance types newer than gpuready's catalog,
checked like catalog rows and made part of the catalog for this render (:func:`catalog.use_extra`)."""

from __future__ import annotations

from gpuready_components import catalog
from gpuready_components.errors import ConfigError

from .config import NAMESPACE, StackConfig
from .settings import Setting

KEY = "extraInstanceTypes"
REQUIRED = ("name", "gpuModel", "gpus", "gpuMemoryGiB", "vcpus", "memoryGiB")
SETTING = Setting(
    KEY, list, "GPU facts of instance types newer than gpuready's catalog, checked like its rows: "
    "`[{name, gpuModel, gpus, gpuMemoryGiB, vcpus, memoryGiB}]`, and `efaInterfaces` (0); unpriced",
    default=[], sub=(
        Setting("name", str), Setting("gpuModel", str), Setting("gpus", int), Setting("gpuMemoryGiB", float),
        Setting("vcpus", int), Setting("memoryGiB", float), Setting("efaInterfaces", int)))


def use(config: StackConfig, cloud: str) -> None:
    """Make the stack's ``extraInstanceTypes`` catalog rows of ``cloud`` for this render; a missing key, a row that
    fails the catalog's checks, or a type the catalog already lists is a :class:`ConfigError` naming the key."""
    rows = []
    for i, item in enumerate(config.read(KEY)):
        where = f"{NAMESPACE}:{KEY}[{i}]"
        for key in REQUIRED:
            if key not in item:
                raise ConfigError(f"{where}.{key}", None, "required", f"give {', '.join(REQUIRED)} for each type")
        row = catalog.GpuInstanceType(
            cloud=cloud, name=item["name"], accelerator="", gpu_model=item["gpuModel"], gpus=item["gpus"],
            gpu_memory_gib=item["gpuMemoryGiB"], vcpus=item["vcpus"], memory_gib=item["memoryGiB"],
            price_usd_hour=None, price_region="", price_date="", spec_source="", price_source="",
            efa_interfaces=item.get("efaInterfaces", 0))
        problems = catalog.problems(row, provenance=False)
        if problems:
            raise ConfigError(where, item["name"], "; ".join(problems),
                              "give the type's figures as its cloud states them (EC2 DescribeInstanceTypes)")
        if any(r.cloud == cloud and r.name == row.name for r in (*catalog.file_rows(), *rows)):
            raise ConfigError(f"{where}.name", row.name, "already in gpuready's catalog or listed twice",
                              "remove it from the list")
        rows.append(row)
    catalog.use_extra(rows)
