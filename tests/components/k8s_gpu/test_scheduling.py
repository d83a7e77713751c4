"""Taint/toleration and node-affinity semantics, as the Kubernetes scheduler documents them."""

from __future__ import annotations

from gpuready_components.k8s_gpu.facts import Taint
from gpuready_components.k8s_gpu.scheduling import schedulable, selects, tolerates

GPU = Taint("nvidia.com/gpu", "true", "NoSchedule")


def test_exists_tolerates_any_value_equal_only_its_own():
    assert tolerates([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}], GPU)
    assert tolerates([{"key": "nvidia.com/gpu", "operator": "Equal", "value": "true"}], GPU)
    assert not tolerates([{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present",
                           "effect": "NoSchedule"}], GPU)
    assert tolerates([{"key": "nvidia.com/gpu", "value": "true"}], GPU)  # operator defaults to Equal


def test_effect_must_match_when_given_and_empty_key_exists_tolerates_everything():
    assert not tolerates([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}], GPU)
    assert tolerates([{"operator": "Exists"}], GPU)
    assert not tolerates([], GPU) and not tolerates(None, GPU)


def test_affinity_terms_are_ored_and_expressions_anded():
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "a", "operator": "In", "values": ["1"]},
                              {"key": "b", "operator": "Exists"}]},
        {"matchExpressions": [{"key": "c", "operator": "DoesNotExist"}, {"key": "d", "operator": "NotIn",
                                                                          "values": ["x"]}]}]}}}
    assert selects({"a": "1", "b": ""}, affinity=affinity)
    assert not selects({"a": "1", "c": "y"}, affinity=affinity)
    assert selects({"d": "y"}, affinity=affinity)
    assert not selects({"c": "1", "d": "x"}, affinity=affinity)


def test_node_selector_and_gt():
    assert selects({"a": "1"}, node_selector={"a": "1"}) and not selects({}, node_selector={"a": "1"})
    gt = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "gpus", "operator": "Gt", "values": ["3"]}]}]}}}
    assert selects({"gpus": "4"}, affinity=gt) and not selects({"gpus": "3"}, affinity=gt)


def test_prefer_no_schedule_does_not_keep_pods_off():
    assert schedulable({}, {}, [Taint("x", "", "PreferNoSchedule")])
    assert not schedulable({}, {}, [GPU])
