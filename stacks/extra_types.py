"""``gpuready:extraInstanceTypes``: GPU facts a stack declares for instance types newer than gpuready's catalog, handed
to its component as ``extra_instance_types`` (:class:`~gpuready_components.k8s_gpu.args.ExtraInstanceTypeArgs`),
which checks them like catalog rows and alone knows them: nothing outlives the render."""

from __future__ import annotations

from gpuready_components.errors import ConfigError
from gpuready_components.k8s_gpu.args import ExtraInstanceTypeArgs

from .config import NAMESPACE, StackConfig
from .settings import Setting, args_of

KEY = "extraInstanceTypes"
REQUIRED = ("name", "gpuModel", "gpus", "gpuMemoryGiB", "vcpus", "memoryGiB")
FIELD = "extra_instance_types"
SETTING = Setting(
    KEY, list, "GPU facts of instance types newer than gpuready's catalog, checked like its rows: "
    "`[{name, gpuModel, gpus, gpuMemoryGiB, vcpus, memoryGiB}]`, and `efaInterfaces` (0); unpriced; "
    "`gpuMemoryGiB` is one GPU's memory in GiB as the cloud reports it (EC2's GPU `SizeInMiB` / 1024: an L4's "
    "22,888 MiB is 22.35), not the vendor's GB", (FIELD,),
    default=[], sub=tuple(Setting(key, kind, fields=(f"{FIELD}.{field}",)) for key, kind, field in (
        ("name", str, "name"), ("gpuModel", str, "gpu_model"), ("gpus", int, "gpus"),
        ("gpuMemoryGiB", float, "gpu_memory_gib"), ("vcpus", int, "vcpus"), ("memoryGiB", float, "memory_gib"),
        ("efaInterfaces", int, "efa_interfaces"))))


def args(config: StackConfig) -> tuple[ExtraInstanceTypeArgs, ...]:
    """The stack's ``extraInstanceTypes`` as the component's ``extra_instance_types`` (which checks their facts); a
    missing key is a :class:`ConfigError` naming it."""
    declared = []
    for i, item in enumerate(config.read(KEY)):
        for key in REQUIRED:
            if key not in item:
                raise ConfigError(f"{NAMESPACE}:{KEY}[{i}].{key}", None, "required",
                                  f"give {', '.join(REQUIRED)} for each type")
        declared.append(ExtraInstanceTypeArgs(**args_of(SETTING, item)))
    return tuple(declared)
