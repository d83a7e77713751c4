"""The NVIDIA GPU software every Kubernetes platform shares: device plugin or GPU Operator, DCGM exporter, GPU
feature discovery, time-slicing and MIG, tolerating the platform's GPU taint and selecting its GPU nodes.

:class:`K8sGpuSoftware` is loaded on first use: it imports the Kubernetes SDK, which the args, facts and install rules
do not need.
"""

from .args import BurnInArgs, ExtraInstanceTypeArgs, GpuSoftwareOptions, K8sGpuSoftwareArgs, MigArgs
from .install import InstallPlan, Release, plan, startup_taints

__all__ = ["BurnInArgs", "ExtraInstanceTypeArgs", "GpuSoftwareOptions", "InstallPlan", "K8sGpuSoftware",
           "K8sGpuSoftwareArgs", "MigArgs", "Release", "plan", "startup_taints"]


def __getattr__(name: str):
    if name == "K8sGpuSoftware":
        from .component import K8sGpuSoftware

        return K8sGpuSoftware
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
