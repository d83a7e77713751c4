"""The NVIDIA GPU software every Kubernetes platform shares: device plugin or GPU Operator, DCGM exporter, GPU
feature discovery, time-slicing and MIG, tolerating the platform's GPU taint and selecting its GPU nodes."""

from ..sdk import lazy_components
from .args import BurnInArgs, GpuSoftwareOptions, K8sGpuSoftwareArgs, MigArgs
from .install import InstallPlan, Release, plan, startup_taints

__all__ = ["BurnInArgs", "GpuSoftwareOptions", "InstallPlan", "K8sGpuSoftware", "K8sGpuSoftwareArgs", "MigArgs",
           "Release", "plan", "startup_taints"]

__getattr__ = lazy_components(__name__, "K8sGpuSoftware")
