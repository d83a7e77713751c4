"""The NVIDIA GPU software every Kubernetes platform shares: device plugin or GPU Operator, DCGM exporter, GPU
feature discovery, time-slicing and MIG, tolerating the platform's GPU taint and selecting its GPU nodes.

Every name is loaded on first use (:func:`~gpuready_components.sdk.lazy_exports`): importing ``k8s_gpu.facts``
loads neither Pulumi nor the install rules.
"""

from ..sdk import lazy_exports

__all__ = ["BurnInArgs", "ExtraInstanceTypeArgs", "GpuSoftwareOptions", "InstallPlan", "K8sGpuSoftware",
           "K8sGpuSoftwareArgs", "MigArgs", "Release", "plan", "startup_taints"]

__getattr__ = lazy_exports(__name__, component=("K8sGpuSoftware",),
                           args=("BurnInArgs", "ExtraInstanceTypeArgs", "GpuSoftwareOptions", "K8sGpuSoftwareArgs",
                                 "MigArgs"),
                           install=("InstallPlan", "Release", "plan", "startup_taints"))
