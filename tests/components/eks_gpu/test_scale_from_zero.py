"""The offline scale-from-zero check: the node each scaler imagines for an empty GPU group, and the smoke pod on it."""

from __future__ import annotations

from gpuready_components import catalog
from gpuready_components.k8s_gpu import scalers as sf
from gpuready_components.k8s_gpu.scale_from_zero import ScaleGroup, check, split, template_tags
from gpuready_components.eks_gpu.facts import NODES
from gpuready_components.k8s_gpu.facts import Taint

TAINT = NODES.taint
LABELS = {"nvidia.com/gpu.present": "true", "workload": "gpu"}
TOLERATE = [{"key": "nvidia.com/gpu", "operator": "Exists"}]


def _groups(types, tags=True, labels=LABELS):
    rows = [catalog.find("aws", t) for t in types]
    groups = []
    for g in split(rows):
        node_labels = {**labels, sf.ACCELERATOR_LABEL: sf.accelerator(g.gpu_model)}
        groups.append(ScaleGroup(f"gpu{g.suffix}", g.instance_types, node_labels, (TAINT,),
                                 template_tags(g.gpus, node_labels, [TAINT]) if tags else {}))
    return groups


def test_split_groups_gives_one_template_per_gpu_count_and_the_smoke_pod_fits_at_1_and_4():
    result = check(sf.CLUSTER_AUTOSCALER, _groups(["g6.xlarge", "g6.2xlarge", "g6.12xlarge"]), LABELS, TOLERATE, 4)
    assert result.ok, result.problems
    assert result.summary() == ("scale from zero: cluster-autoscaler adds gpu (g6.xlarge, 1 GPU) or "
                                "gpu-4x (g6.12xlarge, 4 GPUs)")
    assert result.fits == {1: ("gpu", "gpu-4x"), 4: ("gpu-4x",)}


def test_mixed_gpu_counts_in_one_group_are_caught():
    labels = {**LABELS, sf.ACCELERATOR_LABEL: "nvidia-l4"}
    mixed = ScaleGroup("gpu", ("g6.xlarge", "g6.12xlarge"), labels, (TAINT,), template_tags(1, labels, [TAINT]))
    result = check(sf.CLUSTER_AUTOSCALER, [mixed], LABELS, TOLERATE, 4)
    assert not result.ok
    assert any("g6.12xlarge have other GPU counts" in p for p in result.problems)
    assert result.fits[4] == () and any("asking for 4 GPU(s)" in p for p in result.problems)


def test_a_missing_label_template_is_caught():
    (group,) = _groups(["g6.xlarge"])
    tags = {k: v for k, v in group.tags.items() if not k.endswith("label/workload")}
    result = check(sf.CLUSTER_AUTOSCALER, [ScaleGroup(group.name, group.instance_types, group.labels, group.taints,
                                                      tags)], LABELS, TOLERATE, 1)
    assert any("label workload=gpu has no template tag" in p for p in result.problems)
    assert result.fits[1] == ()  # the pod selects workload=gpu, unknown at zero nodes


def test_a_missing_taint_template_is_caught():
    (group,) = _groups(["g6.xlarge"])
    tags = {k: v for k, v in group.tags.items() if "/taint/" not in k}
    result = check(sf.CLUSTER_AUTOSCALER, [ScaleGroup(group.name, group.instance_types, group.labels, group.taints,
                                                      tags)], LABELS, TOLERATE, 1)
    assert any("taint nvidia.com/gpu=true:NoSchedule has no template tag" in p for p in result.problems)


def test_an_untolerated_taint_is_caught():
    groups = _groups(["g6.xlarge"])
    result = check(sf.CLUSTER_AUTOSCALER, groups, LABELS, [], 1)
    assert result.fits[1] == () and "fits no node cluster-autoscaler can add" in result.problems[0]
    spot = Taint("spot", "true", "NoSchedule")
    labels = groups[0].labels
    tainted = ScaleGroup("gpu", ("g6.xlarge",), labels, (TAINT, spot), template_tags(1, labels, [TAINT, spot]))
    assert not check(sf.CLUSTER_AUTOSCALER, [tainted], LABELS, TOLERATE, 1).ok


def test_without_template_tags_nothing_is_known_at_zero():
    result = check(sf.CLUSTER_AUTOSCALER, _groups(["g6.xlarge"], tags=False), LABELS, TOLERATE, 1)
    assert not result.ok


def test_nodepools_offer_every_admitted_type_and_auto_mode_refuses_a_plugin():
    pool = ScaleGroup("gpu", ("g6.xlarge", "g6.12xlarge"), LABELS, (TAINT,))
    result = check(sf.KARPENTER, [pool], LABELS, TOLERATE, 4)
    assert result.ok and result.fits == {1: ("gpu", "gpu"), 4: ("gpu",)}
    assert check(sf.AUTO_MODE, [pool], LABELS, TOLERATE, 4).ok
    with_plugin = check(sf.AUTO_MODE, [pool], LABELS, TOLERATE, 4, plugins=["nvidia-device-plugin"])
    assert any("two plugins" in p for p in with_plugin.problems)


def test_none_has_nothing_to_check_and_says_so():
    result = check(sf.NONE, _groups(["g6.xlarge"]), LABELS, TOLERATE, 1)
    assert result.ok and "rely on your own" in result.summary()
