"""Why a GPU pod waits on a reservation (gpuready.smoke.scaler.reservations): the stack's gpuReservations output
against the clock and the GPU nodes running; then the same findings through a smoke run on the fake API server."""

from __future__ import annotations

import io
from datetime import datetime, timezone

import pytest

from gpuready.smoke import kubernetes as target
from gpuready.smoke.scaler import Context
from gpuready.smoke.scaler import reservations

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
EKS = {"gpuTaint": {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
       "gpuNodeLabels": {"nvidia.com/gpu.present": "true"}, "platform": "eks", "autoscaler": "cluster-autoscaler"}
"""The outputs the fake API server's kubeconfig is added to (the ``kube`` fixture)."""
BLOCK = {"pool": "eks-gpu", "kind": "capacity-block", "target": "cr-0123456789abcdef0", "only": True, "count": 2,
         "start": "2026-12-03T11:30:00Z", "end": "2026-12-17T11:30:00Z"}


def _node(name, **labels):
    return {"metadata": {"name": name, "labels": {"nvidia.com/gpu.present": "true", **labels}},
            "status": {"allocatable": {"nvidia.com/gpu": "8"}}}


def _said(res, nodes=(), now=NOW):
    return [(f.kind, f.text()) for f in reservations.explain(Context(platform="eks", reservations=(res,)),
                                                            list(nodes), now)]


def test_a_block_not_started_says_when_it_starts():
    assert _said(BLOCK) == [("reservation-not-active", "eks-gpu's reservation (capacity-block cr-0123456789abcdef0) "
                             "starts at 2026-12-03T11:30:00Z, in 47.5 h: no node launches into it before then"
                             "\n    fix: wait for the start (the autoscaler retries), or run the job on capacity you "
                             "can get now")]
    assert [_said({**BLOCK, "start": s})[0][1].split(", in ")[1].split(":")[0] for s in (
        "2026-12-01T13:00:00Z", "2026-12-01T12:20:00Z", "2026-12-10")] == ["1.0 h", "20 min", "8.5 days"]


def test_an_ended_block_says_so():
    (kind, text), = _said(BLOCK, now=datetime(2026, 12, 18, tzinfo=timezone.utc))
    assert kind == "reservation-ended" and "ended at 2026-12-17T11:30:00Z" in text and "gpuready:reservation" in text


def test_a_full_block_names_the_nodes_holding_it():
    during = datetime(2026, 12, 5, tzinfo=timezone.utc)
    group = {"eks.amazonaws.com/capacityType": "CAPACITY_BLOCK", "eks.amazonaws.com/nodegroup": "eks-gpu"}
    karpenter = {"karpenter.sh/capacity-type": "reserved",
                 "karpenter.k8s.aws/capacity-reservation-id": "cr-0123456789abcdef0"}
    full = [_node("ip-1", **group), _node("ip-2", **karpenter), _node("ip-3", **{"eks.amazonaws.com/nodegroup": "x"})]
    (kind, text), = _said(BLOCK, full, during)
    assert kind == "reservation-full" and "already a node (ip-1, ip-2)" in text
    auto_mode = {"karpenter.sh/capacity-type": "reserved", "eks.amazonaws.com/capacity-reservation-id": BLOCK["target"]}
    (kind, text), = _said(BLOCK, [full[0], _node("ip-4", **auto_mode)], during)
    assert kind == "reservation-full" and "already a node (ip-1, ip-4)" in text
    assert _said(BLOCK, full[:1], during) == []  # one of two in use: a node can still come
    assert _said({**BLOCK, "count": None}, full, during) == []  # count unknown: nothing said


@pytest.mark.parametrize("res", [{"pool": "g", "kind": "odcr", "target": "open", "only": False},
                                 {**BLOCK, "start": "soon", "end": None}])
def test_nothing_is_said_without_the_facts(res):
    assert _said(res) == []


def test_a_pending_smoke_pod_is_told_the_block_has_not_started(kube):
    server, outputs = kube(phases=("Pending",), nodes=[])
    outputs = {**outputs, "gpuReservations": [{**BLOCK, "start": "2999-01-01T00:00:00Z", "end": "2999-02-01"}]}
    result = target.run(outputs, timeout=3, explain_after=0.5, progress=io.StringIO())
    kinds = [f["kind"] for f in result.findings]
    assert kinds[0] == "reservation-not-active", kinds
    assert "starts at 2999-01-01T00:00:00Z" in result.diagnosis[0]


@pytest.mark.parametrize("platform, labels, said", [
    ("eks", {"eks.amazonaws.com/capacityType": "CAPACITY_BLOCK"}, "reserved"),
    ("eks", {"karpenter.sh/capacity-type": "on-demand"}, "on-demand"),
    # an EKS Auto Mode node on a Capacity Block (auto-odcr's scheduling labels)
    ("eks", {"karpenter.sh/capacity-type": "reserved", "eks.amazonaws.com/capacity-reservation-type": "capacity-block",
             "eks.amazonaws.com/capacity-reservation-id": "cr-0123456789abcdef0"},
     "reserved (capacity-block cr-0123456789abcdef0)"),
    ("eks", {"karpenter.sh/capacity-type": "reserved", "eks.amazonaws.com/capacity-reservation-type": "default",
             "eks.amazonaws.com/capacity-reservation-id": "cr-0123456789abcdef0"},
     "reserved (odcr cr-0123456789abcdef0)"),
    ("gke", {"cloud.google.com/reservation-name": "my-h100-reservation",
             "cloud.google.com/reservation-affinity": "specific"}, "reserved (my-h100-reservation)"),
    ("gke", {"cloud.google.com/gke-flex-start": "true", "cloud.google.com/gke-queued": "true"}, "flex-start"),
    ("gke", {"cloud.google.com/gke-spot": "true"}, "spot"),
    ("aks", {"kubernetes.azure.com/scalesetpriority": "spot"}, "spot"),
    ("aks", {"kubernetes.azure.com/agentpool": "gpu"}, None),  # AKS labels no capacity reservation group
    ("aws-batch", {"eks.amazonaws.com/capacityType": "SPOT"}, None),  # not a Kubernetes platform
])
def test_each_platform_reads_its_own_capacity_labels(platform, labels, said):
    assert target.node_capacity(platform, labels) == said


def test_a_reservation_in_a_zone_none_of_the_pools_subnets_is_in_says_so():
    res = {**BLOCK, "start": "2026-11-30", "zone": "us-east-1c", "subnetZones": ["us-east-1a", "us-east-1b"]}
    assert _said(res) == [("reservation-wrong-zone", "eks-gpu's reservation (capacity-block cr-0123456789abcdef0) is "
                           "in us-east-1c, and the pool's subnets are in us-east-1a, us-east-1b: no instance of the "
                           "pool launches into it\n    fix: give the pool a subnet in us-east-1c and run pulumi up")]


@pytest.mark.parametrize("known", [{"zone": "us-east-1a", "subnetZones": ["us-east-1a", "us-east-1b"]},
                                   {"zone": "us-east-1c"}, {"subnetZones": ["us-east-1a"]}])
def test_a_zone_is_said_wrong_only_when_both_zones_are_known_and_differ(known):
    assert _said({**BLOCK, "start": "2026-11-30", **known}) == []
