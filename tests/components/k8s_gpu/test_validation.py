"""Options that would leave GPU nodes without a usable GPU fail at construction, naming the field and the fix."""

from __future__ import annotations

import pytest

from gpuready_components.errors import ConfigError
from gpuready_components.k8s_gpu import GpuSoftwareOptions, K8sGpuSoftwareArgs, MigArgs, plan

H100 = (("H100", 80.0),)
A100_40 = (("A100", 40.0),)


def _plan(image="eks/AL2023_x86_64_NVIDIA", gpus=H100, **options):
    return plan(K8sGpuSoftwareArgs(platform=image.split("/")[0], node_image=image, gpu_models=gpus,
                                   options=GpuSoftwareOptions(**options)))


@pytest.mark.parametrize("kwargs,field,words", [
    ({"image": "aks/driver-none"}, "options.install", "use install 'gpu-operator'"),
    ({"image": "gke/driver-disabled"}, "options.install", "ships no driver or toolkit"),
    ({"install": "helm"}, "options.install", "not an install mode"),
    ({"time_slicing_replicas": 1}, "options.time_slicing_replicas", "between 2 and 64"),
    ({"time_slicing_replicas": 4, "mig": MigArgs(), "install": "gpu-operator"}, "options.time_slicing_replicas",
     "together with MIG"),
    ({"image": "eks/BOTTLEROCKET_x86_64_NVIDIA", "time_slicing_replicas": 4}, "options.time_slicing_replicas",
     "runs its own device plugin"),
    ({"image": "gke/driver-installed", "time_slicing_replicas": 4}, "options.time_slicing_replicas",
     "GPU sharing on the node pool"),
    ({"mig": MigArgs()}, "options.mig", "use install 'gpu-operator'"),
    ({"mig": MigArgs(), "install": "gpu-operator", "gpus": (("L4", 22.35),)}, "options.mig", "no MIG: L4"),
    ({"mig": MigArgs(strategy="none"), "install": "gpu-operator"}, "options.mig.strategy", "single or mixed"),
    ({"mig": MigArgs(config="all-1g.5gb"), "install": "gpu-operator"}, "options.mig.config", "no 1g.5gb profile"),
    ({"mig": MigArgs(config="all-1g.10gb"), "install": "gpu-operator", "gpus": A100_40}, "options.mig.config",
     "all-1g.5gb"),
    ({"mig": MigArgs(config="custom"), "install": "gpu-operator"}, "options.mig.config", "mig-parted"),
    ({"image": "eks/BOTTLEROCKET_x86_64_NVIDIA", "mig": MigArgs(), "install": "gpu-operator"}, "options.mig",
     "own device plugin"),
    ({"image": "gke/driver-installed", "gpu_feature_discovery": True}, "options.gpu_feature_discovery",
     "labels GPU nodes itself"),
    ({"prometheus_operator": True, "dcgm_exporter": False}, "options.prometheus_operator", "DCGM exporter"),
    ({"namespace": "NVIDIA_GPU"}, "options.namespace", "not a valid namespace"),
])
def test_impossible_options_are_refused(kwargs, field, words):
    with pytest.raises(ConfigError) as error:
        _plan(**kwargs)
    assert error.value.field == field
    assert words in str(error.value)


def test_platform_and_image_must_agree():
    with pytest.raises(ConfigError, match="not a eks GPU node image"):
        plan(K8sGpuSoftwareArgs(platform="eks", node_image="gke/driver-installed"))
    with pytest.raises(ConfigError, match="unknown platform"):
        plan(K8sGpuSoftwareArgs(platform="openshift", node_image="eks/AL2023_x86_64_NVIDIA"))


def test_valid_mig_configs_pass():
    for config in ("all-balanced", "all-1g.10gb", "all-7g.80gb"):
        _plan(mig=MigArgs(config=config), install="gpu-operator")
    _plan(image="aks/driver-installed", mig=MigArgs(config="ignored-here"), gpus=A100_40)
