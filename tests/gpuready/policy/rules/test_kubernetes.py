"""The Kubernetes rules (gpuready.policy.rules.kubernetes) on the EKS and AKS reference stacks and edits of them:
the whole violation a user reads (the pool or release, the taint or software, the fix), and where each rule draws
its line (which taints count, which releases run daemonsets, what an unknown value leaves undecided)."""

from __future__ import annotations

import pytest
from pulumi_policy import proxy

from ..helpers import edited, render_stack, said, violations
from . import NODE_GROUP, RELEASE, setting

PLUGIN = "eks-gpu-software-device-plugin"
DCGM = "eks-gpu-software-dcgm-exporter"
PLUGIN_DAEMONSETS = (("device-plugin", "tolerations"), ("gpu-feature-discovery", "tolerations"),
                     ("nfd-worker", "nfd.worker.tolerations"))
"""The NVIDIA device plugin chart's daemonsets (as its values enable them in the reference stack) and where each
reads its tolerations."""


def _taints(*taints):
    return setting("taints", [{"key": k, "value": v, "effect": e} for k, v, e in taints])


GPU_TAINT = ("nvidia.com/gpu", "true", "NO_SCHEDULE")
UNTAINTED = ("mandatory", "eks-gpu", "eks-gpu: GPU nodes without the GPU taint: any pod lands on them and holds a GPU "
                                     "node for CPU work. Fix: taint the pool nvidia.com/gpu=true:NoSchedule")


def _untolerated(release, daemonset, where, taint, pool):
    key, value, effect = taint
    return ("mandatory", release, f"{release}: its {daemonset} daemonset does not tolerate {key}={value}:{effect} of "
                                  f"{pool}, so it never runs on those GPU nodes. Fix: add {{key: {key}, operator: "
                                  f"Exists, effect: {effect}}} to {where} in the release values")


def _each_daemonset(taint, pools):
    return [_untolerated(DCGM, "dcgm-exporter", "tolerations", taint, pool) for pool in pools] + [
        _untolerated(PLUGIN, name, where, taint, pool) for name, where in PLUGIN_DAEMONSETS for pool in pools]


def test_a_gpu_pool_without_a_no_schedule_gpu_taint_is_told_the_taint(eks):
    assert said(violations(eks), "gpu-taint-tolerated") == []
    assert said(violations(edited(eks, NODE_GROUP, "eks-gpu", _taints())), "gpu-taint-tolerated") == [UNTAINTED]
    # PreferNoSchedule keeps no pod off: not the GPU taint, and no daemonset needs to tolerate it
    prefer = edited(eks, NODE_GROUP, "eks-gpu", _taints(("nvidia.com/gpu", "true", "PREFER_NO_SCHEDULE")))
    assert said(violations(prefer), "gpu-taint-tolerated") == [UNTAINTED]


def test_a_no_execute_gpu_taint_is_not_the_gpu_taint_and_every_daemonset_must_tolerate_it(eks):
    taint = ("nvidia.com/gpu", "true", "NoExecute")
    report = violations(edited(eks, NODE_GROUP, "eks-gpu", _taints(("nvidia.com/gpu", "true", "NO_EXECUTE"))))
    assert said(report, "gpu-taint-tolerated") == [UNTAINTED, *_each_daemonset(taint, ["eks-gpu"])]


def test_every_daemonset_is_told_each_gpu_pools_taint_it_does_not_tolerate_pool_by_pool(eks):
    report = violations(edited(eks, NODE_GROUP, change=_taints(GPU_TAINT, ("dedicated", "ml", "NO_SCHEDULE"))))
    assert said(report, "gpu-taint-tolerated") == _each_daemonset(("dedicated", "ml", "NoSchedule"),
                                                                 ["eks-gpu", "eks-gpu-4x"])


def test_on_aks_either_its_sku_taint_or_nvidias_is_the_gpu_taint():
    aks = render_stack("aks")
    assert said(violations(aks), "gpu-taint-tolerated") == []
    nvidia = edited(aks, "azure-native:containerservice:AgentPool", "aks-gpu",
                    setting("nodeTaints", ["nvidia.com/gpu=present:NoSchedule"]))
    assert [(level, pool) for level, pool, _ in said(violations(nvidia), "gpu-taint-tolerated")
            if pool == "aks-gpu"] == []


def test_a_gpu_pool_of_unknown_types_leaves_the_taint_rule_undecided(eks):
    unknown = edited(eks, NODE_GROUP, "eks-gpu", setting("instanceTypes", proxy.UNKNOWN_STRING_VALUE))
    report = violations(edited(unknown, NODE_GROUP, "eks-gpu-4x", _taints()), decided=False)
    assert said(report, "gpu-taint-tolerated") == [
        ("mandatory", "eks-gpu-4x", UNTAINTED[2].replace("eks-gpu:", "eks-gpu-4x:"))]
    assert report.undecided["gpu-taint-tolerated"].startswith("eks-gpu: ")
    # Releases that run no NVIDIA daemonset wait for no pool.
    quiet = violations(edited(unknown, RELEASE, change=lambda inputs: None if inputs["chart"] in (
        "dcgm-exporter", "nvidia-device-plugin") else inputs), decided=False)
    assert quiet.undecided["gpu-taint-tolerated"].startswith("eks-gpu: ")


def test_unknown_taints_leave_the_pool_and_each_daemonsets_release_undecided(eks):
    report = violations(edited(eks, NODE_GROUP, "eks-gpu", setting("taints", proxy.UNKNOWN_STRING_VALUE)),
                        decided=False)
    assert said(report, "gpu-taint-tolerated") == []
    unknown = "eks-gpu: string value at .taints can't be known during preview"
    assert report.undecided["gpu-taint-tolerated"] == f"{unknown}; {DCGM}: {unknown}; {PLUGIN}: {unknown}"


def _operator(values):
    def change(inputs):
        inputs["chart"], inputs["values"] = "gpu-operator", values
        return inputs
    return change


def _twice(software, switch):
    return [("mandatory", PLUGIN, f"{PLUGIN}: installs the {software} that {pool}'s node image "
                                  f"(eks/AL2023_x86_64_NVIDIA) already ships: two of them fight over the GPUs. Fix: "
                                  f"set {switch}: false in the release values") for pool in ("eks-gpu", "eks-gpu-4x")]


def test_an_operator_installing_what_the_node_image_ships_is_told_what_to_switch_off(eks):
    everything = violations(edited(eks, RELEASE, PLUGIN, _operator({})))
    assert said(everything, "no-double-driver") == [*_twice("driver", "driver.enabled"),
                                                    *_twice("toolkit", "toolkit.enabled")]
    toolkit = violations(edited(eks, RELEASE, PLUGIN, _operator({"driver": {"enabled": False}})))
    assert said(toolkit, "no-double-driver") == _twice("toolkit", "toolkit.enabled")
    off = {"driver": {"enabled": False}, "toolkit": {"enabled": False}}
    assert said(violations(edited(eks, RELEASE, PLUGIN, _operator(off))), "no-double-driver") == []
    # an image gpuready knows nothing of (a custom AMI) ships nothing it knows of
    custom = edited(eks, NODE_GROUP, "eks-gpu", setting("amiType", "CUSTOM"))
    assert said(violations(edited(custom, RELEASE, PLUGIN, _operator({}))), "no-double-driver") == [
        *_twice("driver", "driver.enabled")[1:], *_twice("toolkit", "toolkit.enabled")[1:]]


def test_a_pool_of_unknown_image_leaves_only_the_installing_releases_undecided(eks):
    unknown = edited(eks, NODE_GROUP, "eks-gpu", setting("amiType", proxy.UNKNOWN_STRING_VALUE))
    installing = violations(edited(unknown, RELEASE, PLUGIN, _operator({"driver": {"enabled": False}})),
                            decided=False)
    assert said(installing, "no-double-driver") == _twice("toolkit", "toolkit.enabled")[1:]
    assert installing.undecided["no-double-driver"].startswith(f"{PLUGIN}: eks-gpu: ")
    # an operator with everything it could install twice switched off waits for no pool's image
    off = {"driver": {"enabled": False}, "toolkit": {"enabled": False}, "devicePlugin": {"enabled": False}}
    assert "no-double-driver" not in violations(edited(unknown, RELEASE, PLUGIN, _operator(off)),
                                                decided=False).undecided


def test_an_unpinned_chart_is_told_to_pin_it(eks):
    report = violations(edited(eks, RELEASE, PLUGIN, setting("version", None)))
    assert said(report, "helm-pinned-version") == [(
        "mandatory", PLUGIN, f"{PLUGIN}: chart nvidia-device-plugin without a version: each `pulumi up` may install a "
        "newer chart. Fix: pin version to the chart version you tested")]


def _no_dcgm(rendering):
    return edited(rendering, RELEASE, DCGM)


BLIND = ("mandatory", "stack", "stack: GPU nodes without GPU metrics: nobody sees idle, throttled or failing GPUs. "
                               "Fix: install the DCGM exporter (dcgmExporter: true) or, on GKE, enable managed DCGM "
                               "metrics")


def test_gpu_nodes_without_metrics_are_told_and_a_cluster_without_gpus_is_not(eks):
    assert said(violations(_no_dcgm(eks)), "gpu-metrics") == [BLIND]
    cpu_only = edited(_no_dcgm(eks), NODE_GROUP, change=lambda i: i if i["amiType"].endswith("STANDARD") else None)
    assert said(violations(cpu_only), "gpu-metrics") == []
    unknown = violations(edited(_no_dcgm(cpu_only), NODE_GROUP, change=setting("instanceTypes",
                                                                             proxy.UNKNOWN_STRING_VALUE)),
                         decided=False)
    assert said(unknown, "gpu-metrics") == [] and unknown.undecided["gpu-metrics"].startswith("eks-system: ")
    partly = violations(edited(_no_dcgm(eks), NODE_GROUP, "eks-gpu",
                               setting("instanceTypes", proxy.UNKNOWN_STRING_VALUE)), decided=False)
    assert said(partly, "gpu-metrics") == [BLIND]


def test_gkes_managed_dcgm_counts_as_metrics():
    gke = render_stack("gke")
    assert said(violations(gke), "gpu-metrics") == []
    unmanaged = edited(gke, "gcp:container/cluster:Cluster", change=lambda i: {**i, "monitoringConfig": {
        "enableComponents": ["SYSTEM_COMPONENTS"]}})
    assert said(violations(unmanaged), "gpu-metrics") == [BLIND]


def test_a_release_that_sets_no_tolerations_is_judged_on_its_pinned_charts_defaults(eks):
    def unset(inputs):
        inputs["values"].pop("tolerations")
        return inputs
    # the device plugin chart's own tolerations take nvidia.com/gpu (any value) on every daemonset it runs
    assert said(violations(edited(eks, RELEASE, PLUGIN, unset)), "gpu-taint-tolerated") == []
    # the DCGM exporter chart's tolerate only the control plane: without ours it never runs on a GPU node
    assert said(violations(edited(eks, RELEASE, DCGM, unset)), "gpu-taint-tolerated") == [
        _untolerated(DCGM, "dcgm-exporter", "tolerations", ("nvidia.com/gpu", "true", "NoSchedule"), pool)
        for pool in ("eks-gpu", "eks-gpu-4x")]


def test_the_dcgm_exporter_release_is_the_gpu_metrics_the_rule_asks_for(eks):
    assert said(violations(eks), "gpu-metrics") == []


REPAIR_OFF = ("eks-gpu: GPU nodes that fail (a fallen-off GPU, double-bit ECC errors, a dead NVLink) stay in the pool "
              "until someone notices. Fix: turn node repair on (nodeRepairConfig.enabled; gpuready:repair.enabled true "
              "in the reference stacks, EksGpuCluster node_group.repair)")
NEVER_STOPS = ("eks-gpu: node repair never stops: one cause that fails every node (a bad driver, an AMI) would reboot or "
               "replace the whole pool, and jobs with it. Fix: set nodeRepairConfig.maxUnhealthyNodeThresholdPercentage, "
               "e.g. to 20 (gpuready:repair.maxUnhealthyPercent in the reference stacks, whose default is 20)")
ALL_AT_ONCE = ("eks-gpu: node repair may take every node of the pool at once. Fix: set "
               "nodeRepairConfig.maxParallelNodesRepairedCount to 1, or a small share (gpuready:repair.maxParallel in "
               "the reference stacks)")


def _repair(**change):
    def edit(inputs):
        config = inputs["nodeRepairConfig"]
        for key, value in change.items():
            if value is None:
                config.pop(key, None)
            else:
                config[key] = value
        return inputs
    return edit


def test_a_gpu_pool_without_repair_or_with_repair_that_could_drain_it_is_told(eks):
    assert said(violations(eks), "gpu-pool-repair") == []
    off = edited(eks, NODE_GROUP, "eks-gpu", lambda i: {k: v for k, v in i.items() if k != "nodeRepairConfig"})
    assert said(violations(off), "gpu-pool-repair") == [("advisory", "eks-gpu", REPAIR_OFF)]
    disabled = edited(eks, NODE_GROUP, "eks-gpu", setting("nodeRepairConfig", {"enabled": False}))
    assert said(violations(disabled), "gpu-pool-repair") == [("advisory", "eks-gpu", REPAIR_OFF)]
    endless = edited(eks, NODE_GROUP, "eks-gpu", _repair(maxUnhealthyNodeThresholdPercentage=None))
    assert said(violations(endless), "gpu-pool-repair") == [("advisory", "eks-gpu", NEVER_STOPS)]
    whole = edited(eks, NODE_GROUP, "eks-gpu", _repair(maxUnhealthyNodeThresholdPercentage=None,
                                                        maxUnhealthyNodeThresholdCount=4))  # the group's max size
    assert said(violations(whole), "gpu-pool-repair") == [("advisory", "eks-gpu", NEVER_STOPS)]
    for parallel in ({"maxParallelNodesRepairedCount": None, "maxParallelNodesRepairedPercentage": 100},
                     {"maxParallelNodesRepairedCount": 4}):
        rushed = edited(eks, NODE_GROUP, "eks-gpu", _repair(**parallel))
        assert said(violations(rushed), "gpu-pool-repair") == [("advisory", "eks-gpu", ALL_AT_ONCE)]
    # a CPU group is not this rule's
    cpu = edited(eks, NODE_GROUP, "eks-system", lambda i: {k: v for k, v in i.items() if k != "nodeRepairConfig"})
    assert said(violations(cpu), "gpu-pool-repair") == []


@pytest.mark.parametrize("queued", [True, False])
def test_a_flex_start_pool_is_asked_no_repair_as_gkes_guides_turn_it_off(queued):
    """The docs' claim (docs/platforms/reservations.md): a flex-start pool's auto-repair is off, queued or not, and
    gpu-pool-repair says nothing of it; its nodes are GKE's node pools' all the same (auto-repair off)."""
    flex = render_stack("gke-flex-start", gpuready__flexStart={"queued": queued, "maxRunDurationSeconds": 86400})
    (pool,) = [r for r in flex.resources if r.type == "gcp:container/nodePool:NodePool" and r.name == "gke-gpu"]
    assert pool.inputs["management"]["autoRepair"] is False
    assert said(violations(flex), "gpu-pool-repair") == []


def test_a_gke_gpu_pool_without_auto_repair_is_told_and_its_pace_is_gkes():
    gke = render_stack("gke")
    assert said(violations(gke), "gpu-pool-repair") == []
    off = edited(gke, "gcp:container/nodePool:NodePool", change=lambda i: {
        **i, "management": {**(i.get("management") or {}), "autoRepair": False}})
    told = said(violations(off), "gpu-pool-repair")
    assert told and all(level == "advisory" and message.endswith(
        "stay in the pool until someone notices. Fix: turn auto-repair on (management.autoRepair; gpuready's node "
        "pools have it)") for level, _, message in told)
