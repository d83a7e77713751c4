"""The NVIDIA GPU software every Kubernetes platform shares: device plugin or GPU Operator, DCGM exporter, GPU
feature discovery, time-slicing and MIG, tolerating the platform's GPU taint and selecting its GPU nodes."""

from .args import GpuSoftwareOptions, K8sGpuSoftwareArgs, MigArgs
from .install import InstallPlan, Release, plan

__all__ = ["GpuSoftwareOptions", "InstallPlan", "K8sGpuSoftware", "K8sGpuSoftwareArgs", "MigArgs", "Release", "plan"]


def __getattr__(name: str):
    # The component imports pulumi_kubernetes; args and the install plan do not need it.
    if name == "K8sGpuSoftware":
        from .component import K8sGpuSoftware

        return K8sGpuSoftware
    raise AttributeError(name)
