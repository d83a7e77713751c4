"""The platform registry (``components/platforms.py``) through its public calls only: a name means one platform,
and the Kubernetes platforms are told from the others. A throw-away platform is a built-in one renamed, so these
tests hold whatever fields the descriptor has."""

from __future__ import annotations

import dataclasses

import pytest

from gpuready_components import platforms

BUILTIN = ("aks", "aws-batch", "eks", "gke")  # by name, whatever the order they were registered in


def test_a_second_different_platform_under_a_taken_name_is_refused_and_the_first_kept():
    eks = platforms.require("eks")
    impostor = dataclasses.replace(platforms.require("aws-batch"), name="eks")
    try:
        with pytest.raises(ValueError, match="'eks' is registered already"):
            platforms.register(impostor)
        assert platforms.require("eks") is eks and platforms.require("eks").kubernetes
    finally:  # where the registry took it, the built-in back, so no other test sees the impostor
        if platforms.get("eks") is not eks:
            platforms.unregister("eks")
            platforms.register(eks)
    assert platforms.register(eks) is eks  # the same one again: nothing changes
    assert platforms.names()[:len(BUILTIN)] == BUILTIN


def test_a_new_platform_registers_once_and_is_forgotten_when_asked():
    spare = dataclasses.replace(platforms.require("eks"), name="guard-test-k8s")
    platforms.register(spare)
    try:
        assert platforms.get("guard-test-k8s") is spare and "guard-test-k8s" in platforms.names()
        assert spare in platforms.every(kubernetes=True) and spare not in platforms.every(kubernetes=False)
        with pytest.raises(ValueError):
            platforms.register(dataclasses.replace(platforms.require("aws-batch"), name="guard-test-k8s"))
    finally:
        platforms.unregister("guard-test-k8s")
    assert platforms.get("guard-test-k8s") is None
    with pytest.raises(KeyError, match="unknown platform 'guard-test-k8s': gpuready knows aks, aws-batch, eks, gke"):
        platforms.require("guard-test-k8s")


def test_every_kubernetes_platform_and_only_those():
    kubernetes = [p.name for p in platforms.every(kubernetes=True)]
    others = [p.name for p in platforms.every(kubernetes=False)]
    assert {"eks", "gke", "aks"} <= set(kubernetes) and "aws-batch" not in kubernetes
    assert "aws-batch" in others and not {"eks", "gke", "aks"} & set(others)
    assert sorted(kubernetes + others) == sorted(p.name for p in platforms.every()) == sorted(platforms.names())


@pytest.mark.parametrize("name", [None, 3, ["eks"], "EKS", "batch"])
def test_get_answers_none_for_anything_but_a_registered_name(name):
    assert platforms.get(name) is None
