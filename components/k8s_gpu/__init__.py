"""The NVIDIA GPU software every Kubernetes platform shares: device plugin or GPU Operator, DCGM exporter, GPU
feature discovery, time-slicing and MIG, tolerating the platform's GPU taint and selecting its GPU nodes.

The names below load from their modules on first use: importing one module of the package (every plan's readers
import its facts) loads no other, and :class:`K8sGpuSoftware` alone imports the Kubernetes SDK.
"""

__all__ = ["BurnInArgs", "ExtraInstanceTypeArgs", "GpuSoftwareOptions", "InstallPlan", "K8sGpuSoftware",
           "K8sGpuSoftwareArgs", "MigArgs", "Release", "plan", "startup_taints"]


def __getattr__(name: str):
    if name in ("BurnInArgs", "ExtraInstanceTypeArgs", "GpuSoftwareOptions", "K8sGpuSoftwareArgs", "MigArgs"):
        from . import args as module
    elif name in ("InstallPlan", "Release", "plan", "startup_taints"):
        from . import install as module
    elif name == "K8sGpuSoftware":
        from . import component as module
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(module, name)
