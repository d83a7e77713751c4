"""Why a pod waits, from the autoscalers' own words: the events and objects in tests/data/k8s-events are shaped as
cluster-autoscaler and Karpenter write them (see its PROVENANCE.md)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from gpuready.smoke import scaler

DATA = Path(__file__).resolve().parents[2] / "data" / "k8s-events"
GPU = "eks-gpu-1x-20261122095512345600000001-a6c9b3e2-5d0f-8c41-77e1-2b9f0c4d1e38"
SINCE = datetime(2026, 11, 22, 10, 0, tzinfo=timezone.utc)
UPDATED = datetime(2026, 11, 22, 10, 3, 10, tzinfo=timezone.utc)
EKS = scaler.Context(gpus=1, node_labels={"nvidia.com/gpu.present": "true"},
                     taints=({"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},),
                     autoscaler="cluster-autoscaler", platform="eks")


def scenario(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def explain(name: str, context: scaler.Context = EKS, pending_for: float = 60, **overrides):
    data = scenario(name)
    events = data["events"]
    on = lambda kind: [e for e in events if e["involvedObject"]["kind"] == kind]  # noqa: E731
    claims = {c["metadata"]["name"]: c for c in data.get("nodeclaims", ())}
    for claim in scaler.nominated(on("Pod")):
        claims.setdefault(claim, None)
    arguments = dict(pending_for=pending_for, status=(data.get("configmaps") or [None])[0],
                     status_events=on("ConfigMap"), nodeclaims=claims, nodeclaim_events=on("NodeClaim"), since=SINCE,
                     now=UPDATED + timedelta(seconds=20))
    return scaler.explain(on("Pod"), context, **{**arguments, **overrides})


def kinds(findings) -> list[str]:
    return [f.kind for f in findings]


def test_triggered_scale_up_says_which_group_and_to_keep_waiting():
    findings = explain("ca-triggered-scale-up.json", pending_for=600)
    assert kinds(findings) == ["scaling-up"] and findings[0].waiting
    assert f"{GPU} (0->1 of at most 2)" in findings[0].summary and "3-5 min" in findings[0].summary
    assert findings[0].quote == f"pod triggered scale-up: [{{{GPU} 0->1 (max: 2)}}]"


def test_not_triggered_is_quoted_and_each_reason_mapped_to_its_fix():
    finding, = explain("ca-not-triggered.json", context=scaler.Context(**{**EKS.__dict__, "gpus": 4}))
    assert finding.kind == "no-scale-up" and not finding.waiting
    assert finding.quote == ("pod didn't trigger scale-up: 1 Insufficient nvidia.com/gpu, 1 node(s) didn't match "
                             "Pod's node affinity/selector, 1 max node group size reached")
    gpu, labels, size = finding.fixes
    assert gpu.startswith("1 Insufficient nvidia.com/gpu -> ") and "offers 4 nvidia.com/gpu" in gpu
    assert "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu" in gpu
    assert "k8s.io/cluster-autoscaler/node-template/label/nvidia.com/gpu.present=true" in labels
    assert size.startswith("1 max node group size reached -> ") and "gpuready:maxSize" in size


def test_untolerated_taint_names_the_template_tags_and_what_the_pod_tolerates():
    finding, = explain("ca-not-triggered-templates.json")
    taint, labels = finding.fixes
    assert taint.startswith("1 node(s) had untolerated taint(s) -> ")
    assert "node-template/taint/" in taint and "nvidia.com/gpu:NoSchedule" in taint
    assert "node-template/label/nvidia.com/gpu.present=true" in labels


def test_the_latest_word_counts_whatever_the_list_order():
    data = scenario("ca-backoff.json")
    pods = [e for e in data["events"] if e["involvedObject"]["kind"] == "Pod"]
    for events in (pods, pods[::-1]):
        assert kinds(scaler.cluster_autoscaler.explain(events, EKS)) == ["no-scale-up"]


def test_backoff_is_ec2_capacity_or_quota_and_old_failures_are_ignored():
    findings = explain("ca-backoff.json")
    assert kinds(findings) == ["no-scale-up", "capacity"]
    assert "in backoff after failed scale-up -> " in findings[0].fixes[1]
    capacity = findings[1]
    assert f"group {GPU}" in capacity.summary and "or the account's vCPU quota" in capacity.summary
    assert capacity.quote.startswith("ScaleUpFailed: Failed adding 1 nodes to group")
    assert "describe-scaling-activities --auto-scaling-group-name " + GPU in capacity.fixes[0]
    yesterday = [e for e in scenario("ca-backoff.json")["events"] if e["reason"] == "FailedToScaleUpGroup"]
    assert "iam" not in kinds(explain("ca-backoff.json", status=None, status_events=yesterday))
    assert "iam" in kinds(explain("ca-backoff.json", status=None, status_events=yesterday, since=None))


def test_a_backoff_in_the_status_alone_is_reported():
    data = scenario("ca-backoff.json")
    findings = scaler.cluster_autoscaler.explain([], EKS, data["configmaps"][0], (), SINCE, UPDATED)
    assert kinds(findings) == ["capacity"] and "AWS cannot provision any more instances" in findings[0].quote


def test_denied_scale_up_is_iam():
    findings = explain("ca-iam.json")
    assert kinds(findings) == ["scaling-up", "iam"]
    assert "autoscaling:SetDesiredCapacity" in findings[1].fixes[0] and GPU in findings[1].summary


@pytest.mark.parametrize("age, stale", [(30, False), (600, True)])
def test_a_status_not_updated_for_minutes_means_cluster_autoscaler_is_down(age, stale):
    findings = explain("ca-triggered-scale-up.json", now=UPDATED + timedelta(seconds=age))
    assert ("no-autoscaler" in kinds(findings)) == stale


def test_the_readable_status_of_older_releases_is_read():
    state = scaler.read_status(scenario("ca-legacy-status.json")["configmaps"][0])
    assert state["health"] == "Healthy" and state["updated"] == UPDATED
    assert state["groups"] == [{"name": GPU, "health": "Healthy", "scaleUp": "Backoff", "error": ""}]
    assert kinds(explain("ca-legacy-status.json")) == ["scale-up-failed"]


def test_karpenter_node_without_gpus_points_at_the_device_plugin():
    finding, = explain("karpenter-no-gpu-allocatable.json", pending_for=600)
    assert finding.kind == "device-plugin" and "ip-10-42-17-201.ec2.internal" in finding.summary
    assert "device plugin" in finding.summary
    assert finding.quote == 'ResourceNotRegistered: Resource "nvidia.com/gpu" was requested but not registered'


def test_karpenter_node_not_yet_registered_is_a_wait():
    finding, = explain("karpenter-launching.json", pending_for=600)
    assert finding.waiting and "gpu-8xq2m (g6.xlarge)" in finding.summary


def test_karpenter_insufficient_capacity_on_a_deleted_nodeclaim():
    finding, = explain("karpenter-insufficient-capacity.json")
    assert finding.kind == "capacity" and finding.source == "karpenter"
    assert "InsufficientInstanceCapacity: We currently do not have sufficient g6.12xlarge" in finding.quote
    assert "quota" not in finding.summary


def test_karpenter_nominated_claim_not_looked_up_is_a_launch_in_progress():
    events = [e for e in scenario("karpenter-launching.json")["events"] if e["reason"] == "Nominated"]
    assert kinds(scaler.karpenter.explain(events, EKS)) == ["launching"]


def test_karpenter_refusals_per_nodepool():
    finding, = explain("karpenter-no-nodepool.json", context=scaler.Context(**{**EKS.__dict__, "gpus": 8}))
    assert finding.kind == "no-scale-up" and finding.quote.startswith('Failed to schedule pod, incompatible with')
    system, gpu = finding.fixes
    assert system.startswith("nodepool system: ") and "taint" in system
    assert gpu.startswith("nodepool gpu: ") and "8 nvidia.com/gpu" in gpu and "gpuready:instanceTypes" in gpu
    limit = explain("karpenter-nodepool-limit.json")[0]
    assert limit.fixes[-1].startswith("nodepool gpu: ") and "gpuready:maxSize" in limit.fixes[-1]


@pytest.mark.parametrize("autoscaler, platform, hint", [
    ("cluster-autoscaler", "eks", "kubectl -n kube-system get deploy -l app.kubernetes.io/name=aws-cluster-autoscaler"),
    ("karpenter", "eks", "app.kubernetes.io/name=karpenter"),
    ("auto-mode", "eks", "computeConfig"),
    ("none", "eks", "gpuready:autoscaler=none"),
    (None, "gke", "autoscaling enabled on the GPU node pool"),
    (None, "eks", "cluster-autoscaler or Karpenter"),
])
def test_silence_after_two_minutes_asks_for_the_autoscaler(autoscaler, platform, hint):
    context = scaler.Context(node_labels=EKS.node_labels, autoscaler=autoscaler, platform=platform)
    scheduler_only = scenario("ca-triggered-scale-up.json")["events"][:1]
    assert scaler.explain(scheduler_only, context, pending_for=scaler.QUIET_AFTER_S - 1) == []
    finding, = scaler.explain(scheduler_only, context, pending_for=scaler.QUIET_AFTER_S + 1)
    assert finding.kind == "no-autoscaler" and hint in finding.fixes[0]


def test_scheduler_and_karpenter_failed_scheduling_are_told_apart():
    events = scenario("karpenter-nodepool-limit.json")["events"]
    said = scaler.scheduler(events, [], EKS)
    assert [f.quote for f in said if f.kind == "scheduler"] == [events[0]["message"]]
    assert kinds(scaler.karpenter.explain(events[:1], EKS)) == []


def test_go_and_rfc3339_times():
    assert scaler.parse_time("2026-11-22 10:03:10.482913377 +0000 UTC") == UPDATED
    assert scaler.parse_time("2026-11-22T10:03:10.482913Z") == UPDATED + timedelta(microseconds=482913)


def test_a_failure_followed_by_an_accepted_scale_up_is_over():
    events = [e for e in scenario("ca-backoff.json")["events"] if e["involvedObject"]["kind"] == "ConfigMap"]
    retried = {**events[1], "lastTimestamp": "2026-11-22T10:05:02Z",
               "message": events[1]["message"].replace("setting group", "group").replace("size to", "size set to")}
    assert kinds(scaler.cluster_autoscaler.explain([], EKS, None, events, SINCE)) == ["capacity"]
    assert kinds(scaler.cluster_autoscaler.explain([], EKS, None, events + [retried], SINCE)) == []


def test_gke_and_aks_get_their_own_words():
    for platform, key, cloud in (("gke", "gpuready:maxNodes", "Compute Engine"), ("aks", "gpuready:maxCount", "Azure")):
        context = scaler.Context(**{**EKS.__dict__, "platform": platform})
        finding, = explain("ca-not-triggered.json", context=context)
        assert "node-template" not in str(finding.fixes) and key in finding.fixes[2]
        capacity = explain("ca-backoff.json", context=context)[1]
        assert capacity.summary.startswith(cloud) and "aws" not in capacity.fixes[0]


@pytest.mark.parametrize("reason, message, kind", [
    ("InsufficientCapacity", "creating instance, insufficient capacity, with fleet error(s), "
                             "InsufficientInstanceCapacity: We currently do not have sufficient g6.xlarge capacity",
     "capacity"),
    ("VCPULimitExceeded", "An instance was requested that would exceed your VCPU quota", "quota"),
    ("LaunchTemplateNotFound", "Launch templates not found when creating fleet request", "launch-failed"),
    ("AwaitingReconciliation", "object is awaiting reconciliation", "launching"),
])
def test_karpenter_launched_condition(reason, message, kind):
    claim = scenario("karpenter-launching.json")["nodeclaims"][0]
    claim["status"]["conditions"][0].update(status="Unknown", reason=reason, message=message)
    assert scaler.karpenter.nodeclaim_state("gpu-8xq2m", claim).kind == kind
