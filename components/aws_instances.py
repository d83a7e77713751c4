"""EC2 GPU instance types for every AWS component: the catalog's facts, and EC2's own list of type names."""

from __future__ import annotations

import functools
from typing import Sequence

from . import catalog
from .errors import ConfigError


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
            if name in ec2_instance_types():
                raise ConfigError(field, name, "this EC2 instance type has no NVIDIA GPU", cpu_fix)
            close = catalog.suggest("aws", name)
            raise ConfigError(field, name, "unknown instance type",
                              f"use one of {', '.join(close)}" if close else "use a GPU type from the catalog")
        rows.append(row)
    return tuple(rows)
