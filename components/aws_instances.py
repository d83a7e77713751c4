"""EC2 GPU instance types for every AWS component: the catalog's facts, and EC2's own list of type names."""

from __future__ import annotations

import functools
import re
from typing import Iterable, Sequence

from . import catalog
from .errors import ConfigError
from .inputs import pattern


GPU_FAMILY = re.compile(r"^(p\d|g\d|gr\d)")
"""EC2's accelerated families with GPUs (p: training, g: graphics and inference, gr: graphics with more memory)."""
ARM64_GPU_FAMILIES = ("g5g", "p6e-gb200")
"""GPU instance families with Graviton (arm64) CPUs (EC2 ``ProcessorInfo.SupportedArchitectures``); every other GPU
family is x86_64."""


SUBNET_ID = pattern(r"subnet-[0-9a-f]{8}(?:[0-9a-f]{9})?", "a subnet id (subnet- and 8 or 17 hex digits)",
                    "give the subnet's id (SubnetId, or an aws.ec2.Subnet's id), not its name, ARN or CIDR")
"""An EC2 subnet id, as EC2 makes them (``subnet-0123456789abcdef0``; before 2018, 8 hex digits)."""
VPC_ID = pattern(r"vpc-[0-9a-f]{8}(?:[0-9a-f]{9})?", "a VPC id (vpc- and 8 or 17 hex digits)",
                 "give the VPC's id (VpcId, or an aws.ec2.Vpc's id), not its name or CIDR")
SECURITY_GROUP_ID = pattern(r"sg-[0-9a-f]{8}(?:[0-9a-f]{9})?", "a security group id (sg- and 8 or 17 hex digits)",
                            "give the group's id (GroupId, or an aws.ec2.SecurityGroup's id), not its name")


def arch(row: catalog.GpuInstanceType) -> str:
    """``arm64`` or ``x86_64``: the CPU architecture of an EC2 GPU type, which picks its AMI."""
    return "arm64" if row.name.split(".")[0] in ARM64_GPU_FAMILIES else "x86_64"


@functools.lru_cache(maxsize=1)
def ec2_instance_types() -> frozenset[str]:
    """Every instance type name EC2 knows (botocore's EC2 model)."""
    from .sdk import require

    botocore_session = require("botocore.session")
    return frozenset(botocore_session.get_session().get_service_model("ec2").shape_for("InstanceType").enum)


def gpu_instances(field: str, names: Sequence[str], cpu_fix: str,
                  types: catalog.Catalog = catalog.FILE) -> tuple[catalog.GpuInstanceType, ...]:
    """The rows of ``names`` in ``types`` (the component's catalog: the file's and its declared types); a CPU type
    (fix: ``cpu_fix``), an unknown type or an empty list is an error."""
    if isinstance(names, str):
        raise ConfigError(field, names, "must be a list", f"use [{names!r}]")
    if not names:
        raise ConfigError(field, list(names), "no instance type given", "list GPU instance types, e.g. ['g6.xlarge']")
    rows = []
    for name in names:
        row = types.find("aws", name)
        if row is None:
            vendor = catalog.not_nvidia("aws", name)
            if vendor:
                raise ConfigError(field, name, f"its accelerators are {vendor}, not NVIDIA GPUs",
                                  "use an NVIDIA GPU type, e.g. g6.xlarge")
            part = catalog.fractional("aws", name)
            if part:
                raise ConfigError(field, name, f"a fractional GPU type ({part}): gpuready supports whole GPUs only, "
                                  "as a job asks for whole GPUs", "use a whole-GPU type, e.g. g6.xlarge (one L4)")
            if name in ec2_instance_types() and GPU_FAMILY.match(name):
                raise ConfigError(field, name, "an NVIDIA GPU type that gpuready's GPU catalog does not list yet",
                                  "declare its GPU facts in the stack setting gpuready:extraInstanceTypes, or add "
                                  "its row to components/catalog/gpu_instances.csv (`gpuready catalog refresh "
                                  "--cloud aws` builds it from EC2's API), or use a listed type")
            if name in ec2_instance_types():
                raise ConfigError(field, name, "this EC2 instance type has no NVIDIA GPU", cpu_fix)
            close = types.suggest("aws", name)
            raise ConfigError(field, name, "unknown instance type",
                              f"use one of {', '.join(close)}" if close else "use a GPU type from the catalog")
        rows.append(row)
    return tuple(rows)


ENA_ONLY_FIRST_CARD = frozenset({"p6-b300.48xlarge"})
"""Types whose network card 0 takes no EFA (EC2 ``NetworkInfo.NetworkCards[0].InterfaceTypes`` lacks ``efa``): the
primary interface is ENA and the EFA interfaces go on cards 1 to N. A test checks this against moto's EC2 data."""


def efa_layout(names: Iterable[str], count: int) -> list[tuple[int, int, str]]:
    """``(network card, device index, interface type)`` of each network interface a launch template gives instances
    of the types ``names`` (one layout: card 0 takes EFA on all of them or on none) for ``count`` EFA interfaces:
    one per network card, card 0 at device index 0 (an ENA ``interface`` there where card 0 is ENA only), every
    other card at device index 1 (EC2 user guide, EFA on instances with multiple network cards)."""
    first = 1 if any(n in ENA_ONLY_FIRST_CARD for n in names) else 0
    return [(0, 0, "interface")] * first + [(card, 0 if card == 0 else 1, "efa")
                                            for card in range(first, first + count)]
