"""The reserved-capacity rules (gpuready.policy.rules.reservations) and gpu-scale-to-zero's exemption, on the
eks-capacity-block reference stack (eks-gpu: a Capacity Block of 2 p5.48xlarge, minSize 0) and on edits of it and of
the eks stack. The whole violation a user reads, and where each rule draws its line."""

from __future__ import annotations

import datetime

import pytest

from ..helpers import edited, render_stack, said, violations
from . import LAUNCH_TEMPLATE, NODE_GROUP, setting

BLOCK = "cr-0123456789abcdef0"
GROUP_ARN = "arn:aws:resource-groups:us-east-1:123456789012:group/gpus"
ONLY = "reservations-only.gpuready.io"


def _when(days: int) -> str:
    return (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=days)).strftime("%Y-%m-%d")


@pytest.fixture(scope="module")
def block():
    return render_stack("eks-capacity-block")


def _reserved(**changes):
    return {"kind": "capacity-block", "id": BLOCK, "instanceType": "p5.48xlarge", "count": 2, **changes}


IDLE = ("eks-gpu: scales to zero (scalingConfig.minSize 0) on a prepaid reservation (capacity-block {0}): the reserved "
        "GPUs are paid for every hour whether a node runs on them or not, and a job waits for a node to boot. Fix: set "
        "scalingConfig.minSize to {1} (gpuready:minSize in the reference stacks) while the reservation is active, or "
        "add the name to this rule's allow list")


def test_a_capacity_block_group_at_zero_is_told_to_keep_its_paid_nodes(block):
    assert said(violations(block), "gpu-reservation-idle") == [("advisory", "eks-gpu", IDLE.format(BLOCK, "2"))]
    assert said(violations(block, {"gpu-reservation-idle": {"allow": ["eks-gpu"]}}), "gpu-reservation-idle") == []


def test_a_reservation_not_started_yet_or_ended_may_sit_at_zero():
    later = render_stack("eks-capacity-block", gpuready__reservation=_reserved(start=_when(3), end=_when(17)))
    assert said(violations(later), "gpu-reservation-idle") == []
    now = render_stack("eks-capacity-block", gpuready__reservation=_reserved(start=_when(-1), end=_when(13)))
    assert [v[1] for v in said(violations(now), "gpu-reservation-idle")] == ["eks-gpu"]


def test_a_reserved_group_kept_warm_passes_both_scaling_rules(block):
    warm = edited(block, NODE_GROUP, "eks-gpu", setting("minSize", 2, "scalingConfig"))
    report = violations(warm)
    assert said(report, "gpu-reservation-idle") == []
    assert said(report, "gpu-scale-to-zero") == []  # prepaid: running it costs nothing more


def test_an_on_demand_group_kept_warm_is_still_told_to_scale_to_zero(block):
    on_demand = edited(block, LAUNCH_TEMPLATE, "eks-gpu", lambda i: {k: v for k, v in i.items() if k not in (
        "capacityReservationSpecification", "instanceMarketOptions")})
    on_demand = edited(on_demand, NODE_GROUP, "eks-gpu",
                       lambda i: {**i, "capacityType": "ON_DEMAND", "scalingConfig": {**i["scalingConfig"], "minSize": 2}})
    assert [v[1] for v in said(violations(on_demand), "gpu-scale-to-zero")] == ["eks-gpu"]
    assert said(violations(on_demand), "gpu-reservation-idle") == []


def test_an_open_odcr_group_the_stack_said_reservations_only_is_told_it_falls_back(block):
    odcr = edited(block, LAUNCH_TEMPLATE, "eks-gpu", lambda i: {
        **{k: v for k, v in i.items() if k != "instanceMarketOptions"},
        "capacityReservationSpecification": {"capacityReservationPreference": "open"}})
    odcr = edited(odcr, NODE_GROUP, "eks-gpu", lambda i: {**i, "capacityType": "ON_DEMAND", "tags": {
        **i.get("tags", {}), ONLY: "true"}})
    assert said(violations(odcr), "gpu-reservation-fallback") == [(
        "advisory", "eks-gpu", "eks-gpu: the stack said reservations only, but it launches on-demand nodes past odcr open "
        "(billed at their own rates, and jobs run where the reservation's network and placement were not bought). Fix: "
        "target the reservation alone in the launch template (a reservation id, or a resource group with preference "
        "capacity-reservations-only) on capacity type ON_DEMAND or CAPACITY_BLOCK, or drop reservations-only")]


def test_reservations_only_is_kept_by_a_block_and_by_a_group_with_capacity_reservations_only():
    for reservation in (_reserved(only=True), {"kind": "odcr", "resourceGroupArn": GROUP_ARN, "only": True}):
        rendering = render_stack("eks-capacity-block", gpuready__reservation=reservation)
        ng = next(r for r in rendering.resources if r.type == NODE_GROUP and r.name == "eks-gpu")
        assert ng.inputs["tags"][ONLY] == "true"
        assert said(violations(rendering), "gpu-reservation-fallback") == []
    group = render_stack("eks-capacity-block", gpuready__reservation={"kind": "odcr", "resourceGroupArn": GROUP_ARN})
    assert said(violations(group), "gpu-reservation-fallback") == []  # not said: falling back is what was asked


def test_a_spot_group_stamped_reservations_only_is_told(block):
    spot = edited(block, LAUNCH_TEMPLATE, "eks-gpu", lambda i: {k: v for k, v in i.items() if k not in (
        "capacityReservationSpecification", "instanceMarketOptions")})
    spot = edited(spot, NODE_GROUP, "eks-gpu", lambda i: {**i, "capacityType": "SPOT", "tags": {ONLY: "true"}})
    assert [m for _, _, m in said(violations(spot), "gpu-reservation-fallback")] == [
        "eks-gpu: the stack said reservations only, but it launches spot nodes with no reservation named (billed at "
        "their own rates, and jobs run where the reservation's network and placement were not bought). Fix: target the "
        "reservation alone in the launch template (a reservation id, or a resource group with preference "
        "capacity-reservations-only) on capacity type ON_DEMAND or CAPACITY_BLOCK, or drop reservations-only"]


def test_an_auto_mode_pool_on_a_block_keeps_reservations_only_and_is_told_when_it_admits_more():
    """Auto Mode's NodePool is read with the custom NodeClass it names, as Karpenter's is with its EC2NodeClass."""
    pool_type = "kubernetes:karpenter.sh/v1:NodePool"
    rendering = render_stack("eks-capacity-block", gpuready__autoscaler="auto-mode",
                             gpuready__reservation=_reserved(only=True))
    assert said(violations(rendering), "gpu-reservation-fallback") == []

    def admit_on_demand(inputs):
        for req in inputs["spec"]["template"]["spec"]["requirements"]:
            if req["key"] == "karpenter.sh/capacity-type":
                req["values"] = ["reserved", "on-demand"]
        return inputs

    falls = edited(rendering, pool_type, "eks-gpu-nodepool", admit_on_demand)
    assert [m for _, _, m in said(violations(falls), "gpu-reservation-fallback")] == [
        f"eks-gpu-nodepool: the stack said reservations only, but it launches on-demand nodes past "
        f"capacity-reservation {BLOCK} (billed at their own rates, and jobs run where the reservation's network and "
        "placement were not bought). Fix: require karpenter.sh/capacity-type In [reserved] alone (gpuready: "
        "reservation only: true), or drop reservations-only"]
