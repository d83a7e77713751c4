"""The DRA rules (gpuready.policy.rules.kubernetes: gpu-dra-kubernetes-version, gpu-dra-no-device-plugin) on the
eks, gke and aks reference stacks with ``install: dra``, and edits of them a hand-written program could make: each
rule quiet on the stack as gpuready renders it, and the whole violation a user reads when it is broken."""

from __future__ import annotations

import pytest

from ..helpers import edited, render_stack, said, violations
from . import NODE_GROUP, RELEASE, setting

EKS_CLUSTER = "aws:eks/cluster:Cluster"
GKE_CLUSTER = "gcp:container/cluster:Cluster"
AKS_CLUSTER = "azure-native:containerservice:ManagedCluster"
DRA = "eks-gpu-software-dra-driver"
VERSION_RULE, PLUGIN_RULE = "gpu-dra-kubernetes-version", "gpu-dra-no-device-plugin"


@pytest.fixture(scope="module")
def eks_dra():
    return render_stack("eks", **{"gpuready:install": "dra"})


@pytest.fixture(scope="module")
def gke_dra():
    return render_stack("gke", **{"gpuready:install": "dra", "gpuready:kubernetesVersion": "1.34"})


@pytest.fixture(scope="module")
def aks_dra():
    return render_stack("aks", **{"gpuready:install": "dra", "gpuready:kubernetesVersion": "1.34.2"})


def test_the_stacks_gpuready_renders_with_dra_break_neither_rule(eks_dra, gke_dra, aks_dra):
    for rendering in (eks_dra, gke_dra, aks_dra):
        report = violations(rendering)
        assert said(report, VERSION_RULE) == [] and said(report, PLUGIN_RULE) == []


@pytest.mark.parametrize("version", ["1.33", "1.34.1", "1.30.7"])
def test_a_cluster_below_1_34_2_with_dra_is_told_the_version(eks_dra, version):
    report = violations(edited(eks_dra, EKS_CLUSTER, "eks", setting("version", version)))
    assert said(report, VERSION_RULE) == [(
        "mandatory", "eks", f"eks: Kubernetes {version} with NVIDIA's DRA driver, which needs 1.34.2 or later "
        "(resource.k8s.io/v1): its DeviceClasses and ResourceClaims are refused. Fix: set version to 1.34 or later "
        "(gpuready:kubernetesVersion)")]


@pytest.mark.parametrize("version", ["1.34", "1.34.2", "1.35.0"])
def test_1_34_2_and_later_pass(eks_dra, version):
    assert said(violations(edited(eks_dra, EKS_CLUSTER, "eks", setting("version", version))), VERSION_RULE) == []


def test_a_version_left_to_the_platform_is_not_enough(gke_dra, aks_dra):
    def unset(key):
        def change(inputs):
            inputs.pop(key, None)
            return inputs
        return change
    gke = said(violations(edited(gke_dra, GKE_CLUSTER, "gke", unset("minMasterVersion"))), VERSION_RULE)
    assert gke == [("mandatory", "gke", "gke: NVIDIA's DRA driver needs Kubernetes 1.34.2 or later "
                    "(resource.k8s.io/v1), and the cluster's version is left to the platform's default. Fix: set "
                    "minMasterVersion to 1.34 or later (gpuready:kubernetesVersion)")]
    aks = said(violations(edited(aks_dra, AKS_CLUSTER, None, unset("kubernetesVersion"))), VERSION_RULE)
    assert len(aks) == 1 and "set kubernetesVersion to 1.34 or later" in aks[0][2]


def test_without_dra_an_old_cluster_is_none_of_the_rules_business():
    old = render_stack("eks", **{"gpuready:kubernetesVersion": "1.31"})
    assert said(violations(old), VERSION_RULE) == [] and said(violations(old), PLUGIN_RULE) == []


def test_a_device_plugin_beside_the_dra_driver_is_named(eks_dra):
    def plugin_on(inputs):
        inputs["values"] = {**inputs["values"], "devicePlugin": {"enabled": True}}
        return inputs
    report = violations(edited(eks_dra, RELEASE, "eks-gpu-software-device-plugin", plugin_on))
    assert said(report, PLUGIN_RULE) == [(
        "mandatory", "eks-gpu-software-device-plugin", "eks-gpu-software-device-plugin: runs NVIDIA's device plugin "
        "on the GPU nodes where the DRA driver gives out the same GPUs: both hand them to pods, and a GPU goes to two "
        "pods at once. Fix: set devicePlugin.enabled: false in the release values (gpuready:install: dra does)")]


def test_a_node_image_with_its_own_device_plugin_beside_the_dra_driver_is_named(eks_dra):
    bottlerocket = edited(eks_dra, NODE_GROUP, "eks-gpu", setting("amiType", "BOTTLEROCKET_x86_64_NVIDIA"))
    found = said(violations(bottlerocket), PLUGIN_RULE)
    assert [(level, name) for level, name, _ in found] == [("mandatory", "eks-gpu")]
    assert "(eks/BOTTLEROCKET_x86_64_NVIDIA) runs its own device plugin" in found[0][2]


def test_without_the_dra_driver_a_device_plugin_is_fine(eks_dra):
    without = edited(eks_dra, RELEASE, DRA, None)
    assert said(violations(without), PLUGIN_RULE) == []
    old = edited(without, EKS_CLUSTER, "eks", setting("version", "1.30"))
    assert said(violations(old), VERSION_RULE) == []


ZERO_RULE = "gpu-dra-scale-from-zero"


def test_a_dra_pool_at_zero_nodes_is_told_to_keep_one(eks_dra):
    found = said(violations(eks_dra), ZERO_RULE)
    assert [(level, name) for level, name, _ in found] == [("advisory", "eks-gpu"), ("advisory", "eks-gpu-4x")]
    assert found[0][2] == (
        "eks-gpu: at scalingConfig.minSize 0 its GPUs are claimed through DRA, and a claim is matched against the "
        "ResourceSlices of running nodes: with none running, an autoscaler may never add the first node, and GPU pods "
        "wait. Fix: keep 1 node or more (gpuready:minSize), and check with gpuready smoke")


def test_a_dra_pool_that_keeps_a_node_and_a_device_plugin_pool_at_zero_pass(eks_dra):
    kept = render_stack("eks", **{"gpuready:install": "dra", "gpuready:minSize": 1})
    assert said(violations(kept), ZERO_RULE) == []
    assert said(violations(edited(eks_dra, RELEASE, DRA, None)), ZERO_RULE) == []
