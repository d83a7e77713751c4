"""EC2 GPU instance types for every AWS component: the catalog's facts, and EC2's own list of type names."""

from __future__ import annotations

import functools
import re
from typing import Sequence

from . import catalog
from .errors import ConfigError


GPU_FAMILY = re.compile(r"^(p\d|g\d|gr\d)")
"""EC2's accelerated families with GPUs (p: training, g: graphics and inference, gr: graphics with more memory)."""
NOT_NVIDIA = {"g4ad": "AMD Radeon Pro V520"}
"""GPU families whose GPUs are not NVIDIA's (EC2 DescribeInstanceTypes GpuInfo.Gpus[].Manufacturer)."""


@functools.lru_cache(maxsize=1)
def ec2_instance_types() -> frozenset[str]:
    """Every instance type name EC2 knows (botocore's EC2 model)."""
    from .sdk import require

    botocore_session = require("botocore.session")
    return frozenset(botocore_session.get_session().get_service_model("ec2").shape_for("InstanceType").enum)


def gpu_instances(field: str, names: Sequence[str], cpu_fix: str) -> tuple[catalog.GpuInstanceType, ...]:
    """The catalog rows of ``names``; a CPU type (fix: ``cpu_fix``), an unknown type or an empty list is an error."""
    if isinstance(names, str):
        raise ConfigError(field, names, "must be a list", f"use [{names!r}]")
    if not names:
        raise ConfigError(field, list(names), "no instance type given", "list GPU instance types, e.g. ['g6.xlarge']")
    rows = []
    for name in names:
        row = catalog.find("aws", name)
        if row is None:
            family = name.split(".")[0]
            if family in NOT_NVIDIA:
                raise ConfigError(field, name, f"its GPUs are {NOT_NVIDIA[family]}, not NVIDIA's",
                                  "use an NVIDIA GPU type, e.g. g6.xlarge")
            if name in ec2_instance_types() and GPU_FAMILY.match(name):
                raise ConfigError(field, name, "an NVIDIA GPU type that gpuready's GPU catalog does not list yet",
                                  "add its row (GPU model, count, memory, vCPUs, memory, source) to "
                                  "components/catalog/gpu_instances.csv, or use a listed type")
            if name in ec2_instance_types():
                raise ConfigError(field, name, "this EC2 instance type has no NVIDIA GPU", cpu_fix)
            close = catalog.suggest("aws", name)
            raise ConfigError(field, name, "unknown instance type",
                              f"use one of {', '.join(close)}" if close else "use a GPU type from the catalog")
        rows.append(row)
    return tuple(rows)


EFA_INTERFACES = {
    "g4dn.8xlarge": 1, "g4dn.12xlarge": 1, "g4dn.16xlarge": 1, "g4dn.metal": 1,
    "g5.8xlarge": 1, "g5.12xlarge": 1, "g5.16xlarge": 1, "g5.24xlarge": 1, "g5.48xlarge": 1,
    "g6.8xlarge": 1, "g6.12xlarge": 1, "g6.16xlarge": 1, "g6.24xlarge": 1, "g6.48xlarge": 1,
    "g6e.8xlarge": 1, "g6e.12xlarge": 1, "g6e.16xlarge": 1, "g6e.24xlarge": 2, "g6e.48xlarge": 4,
    "p3dn.24xlarge": 1, "p4d.24xlarge": 4, "p4de.24xlarge": 4, "p5.4xlarge": 1, "p5.48xlarge": 32,
    "p5e.48xlarge": 32,
}
"""EFA interfaces (one per network card) of the catalog's AWS types that have any: EC2 DescribeInstanceTypes
``NetworkInfo.EfaInfo.MaximumEfaInterfaces`` as moto ships it (a test compares). Stands in until the catalog carries
the figure as its ``efa_interfaces`` column, which :func:`efa_interfaces` then reads instead."""


def efa_interfaces(row: catalog.GpuInstanceType) -> int:
    """How many EFA interfaces an instance of ``row`` takes (0: no EFA; NCCL then uses TCP sockets)."""
    count = getattr(row, "efa_interfaces", None)
    return int(count) if count is not None else EFA_INTERFACES.get(row.name, 0)
