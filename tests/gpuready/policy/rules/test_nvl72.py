"""The NVL72 rule (gpuready.policy.rules.nvl72) on the NVL72 reference stacks and edits of them: a GB200/GB300 pool
without ComputeDomains, or without a label that names each node's NVLink domain, is told so with the stack keys that
fix it; the reference stacks and stacks without a rack pass."""

from __future__ import annotations

import pytest

from ..helpers import edited, render_stack, said, violations
from . import RELEASE, setting

RULE = "gpu-nvl72-compute-domains"
NO_DOMAINS = ("GB200 NVL72 pool without the DRA driver's ComputeDomains: a job across its hosts gets no IMEX channel, "
              "so NCCL crosses the network instead of the rack's NVLink. Fix: set gpuready:install: dra and "
              "gpuready:computeDomains: true (Kubernetes 1.34 or later)")
NO_CLIQUES = ("GB200 NVL72 pool whose nodes nobody labels nvidia.com/gpu.clique: a gang cannot be kept on one NVLink "
              "domain (gpuready's multi-node smoke requires one and would never schedule). Fix: set "
              "gpuready:gpuFeatureDiscovery: true (GPU feature discovery labels it)")


@pytest.fixture(scope="module")
def eks_nvl72():
    return render_stack("eks-nvl72")


@pytest.fixture(scope="module")
def gke_nvl72():
    return render_stack("gke-nvl72")


def test_the_reference_nvl72_stacks_pass(eks_nvl72, gke_nvl72):
    """GKE's stack runs no GPU feature discovery: GKE labels each node's sub-block (its NVLink domain) itself."""
    assert said(violations(eks_nvl72), RULE) == []
    assert said(violations(gke_nvl72), RULE) == []


def test_a_rack_without_compute_domains_is_told_how_to_get_them(eks_nvl72):
    off = edited(eks_nvl72, RELEASE, "eks-gpu-software-dra-driver",
                 change=lambda inputs: {**inputs, "values": {**inputs["values"], "resources": {
                     "gpus": {"enabled": True}, "computeDomains": {"enabled": False}}}})
    assert said(violations(off), RULE) == [("mandatory", "eks-gpu", f"eks-gpu: {NO_DOMAINS}")]


def test_a_rack_without_the_dra_driver_is_told_too():
    plugin = render_stack("eks-nvl72", gpuready__install="device-plugin", gpuready__computeDomains=None)
    assert said(violations(plugin), RULE) == [("mandatory", "eks-gpu", f"eks-gpu: {NO_DOMAINS}")]


def test_a_rack_whose_nodes_nobody_labels_with_their_nvlink_domain_is_told(eks_nvl72):
    unlabelled = edited(eks_nvl72, RELEASE, "eks-gpu-software-device-plugin", change=setting("values", {
        "devicePlugin": {"enabled": False}, "gfd": {"enabled": False}}))
    assert said(violations(unlabelled), RULE) == [("mandatory", "eks-gpu", f"eks-gpu: {NO_CLIQUES}")]
    gone = edited(eks_nvl72, RELEASE, "eks-gpu-software-device-plugin")
    assert said(violations(gone), RULE) == [("mandatory", "eks-gpu", f"eks-gpu: {NO_CLIQUES}")]


def test_pools_of_other_gpus_are_not_racks():
    assert said(violations(render_stack("eks")), RULE) == []
