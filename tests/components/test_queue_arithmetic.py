"""Kueue's quota arithmetic (gpuready_components.queue_arithmetic) worked by hand on the eks reference stack's
numbers and at the boundaries of each limit: ``borrowingLimit`` 0, a ``lendingLimit`` equal to the quota, a queue
outside any cohort, a Cohort's own quota, a queue with quota 0 and no limit (an operators' queue)."""

from __future__ import annotations

from decimal import Decimal

from gpuready_components.queue_arithmetic import Capacity, Limits, Queue, admission

CAPACITY = {"gpu": Capacity(4, 1), "gpu-4x": Capacity(16, 4)}
EKS = [Queue("research", "c", {"gpu": Limits(1, 1), "gpu-4x": Limits(3, 7)}),
       Queue("inference", "c", {"gpu": Limits(1, None, 0), "gpu-4x": Limits(3, None, 0)})]
EKS_COHORT = {"c": {"gpu": Limits(2), "gpu-4x": Limits(10)}}


def test_the_eks_stack_worked_by_hand():
    """gpu: the cohort lends 2 + research's 1 = 3; research keeps 0 and may reach 1 + 1; inference keeps its 1 and
    borrows all 3. gpu-4x: 10 + 3 = 13; research 3 + 7, inference 3 + 13."""
    found = admission(EKS, EKS_COHORT, CAPACITY)
    assert found.pools == {"c": {"gpu": 3, "gpu-4x": 13}}
    assert {f: (s.guaranteed, s.most) for f, s in found.shares["research"].items()} == {"gpu": (1, 2),
                                                                                          "gpu-4x": (3, 10)}
    assert {f: (s.guaranteed, s.most) for f, s in found.shares["inference"].items()} == {"gpu": (1, 4),
                                                                                           "gpu-4x": (3, 16)}
    assert (found.guaranteed("research"), found.most("research"), found.most_in_one("research")) == (4, 12, 10)
    assert (found.guaranteed("inference"), found.most("inference")) == (4, 20)
    assert found.admissible == {"gpu": 4, "gpu-4x": 16} and found.unadmittable == {"gpu": 0, "gpu-4x": 0}
    assert found.largest == {"gpu": 4, "gpu-4x": 16}


def test_borrowing_limit_zero_is_no_borrowing_and_no_cohort_quota_is_left_unadmitted():
    queues = [Queue("a", "c", {"gpu": Limits(1, 0)}), Queue("b", "c", {"gpu": Limits(1, 0)})]
    found = admission(queues, {"c": {"gpu": Limits(2)}}, {"gpu": Capacity(4)})
    assert found.most("a") == found.guaranteed("a") == 1
    assert found.admissible == {"gpu": 2} and found.unadmittable == {"gpu": 2}


def test_a_lending_limit_equal_to_the_quota_lends_it_all_and_zero_keeps_it_all():
    lends_all = [Queue("a", "c", {"gpu": Limits(3, None, 3)}), Queue("b", "c", {"gpu": Limits(1)})]
    assert admission(lends_all, {}, {"gpu": Capacity(4)}).most("b") == 4
    keeps = [Queue("a", "c", {"gpu": Limits(3, None, 0)}), Queue("b", "c", {"gpu": Limits(1)})]
    found = admission(keeps, {}, {"gpu": Capacity(4)})
    assert (found.most("a"), found.most("b")) == (4, 1)
    assert found.admissible == {"gpu": 4}


def test_borrowing_is_capped_by_what_the_cohort_holds_and_by_the_limit():
    queues = [Queue("a", "c", {"gpu": Limits(2, 5)}), Queue("b", "c", {"gpu": Limits(2, None, 1)})]
    found = admission(queues, {"c": {"gpu": Limits(1)}}, {"gpu": Capacity(5)})
    assert found.pools["c"]["gpu"] == 4  # 1 own + 2 lent by a + 1 by b
    assert found.most("a") == 4  # 0 kept + min(4, 2 + 5)
    assert found.most("b") == 1 + 4  # 1 kept + the pool
    assert found.admissible == {"gpu": 5}


def test_a_queue_outside_any_cohort_has_its_quota_only_and_a_decimal_reads_the_same():
    found = admission([Queue("a", None, {"gpu": Limits(Decimal(2), None)})], {"c": {"gpu": Limits(8)}},
                      {"gpu": Capacity(8, 8)})
    assert found.most("a") == 2 and found.unadmittable == {"gpu": 6} and found.largest == {"gpu": 2}


def test_a_queue_with_quota_zero_and_no_limit_borrows_whatever_is_idle():
    """An operators' queue: nominalQuota 0 in every flavor, no borrowingLimit."""
    found = admission([*EKS, Queue("operators", "c", {"gpu": Limits(0), "gpu-4x": Limits(0)})], EKS_COHORT,
                      CAPACITY)
    assert found.most("operators") == 3 + 13 and found.guaranteed("operators") == 0
    assert found.most("research") == 12  # unchanged: it lends nothing


def test_a_flavor_no_queue_lists_is_all_unadmitted():
    found = admission(EKS, EKS_COHORT, {**CAPACITY, "gpu-8x": Capacity(8, 8)})
    assert found.unadmittable["gpu-8x"] == 8 and found.largest["gpu-8x"] == 0


def test_queues_outside_a_cohort_and_each_cohort_add_up_in_a_flavor():
    """gpu: 2 of the queue alone + research-b's 2 kept + the 1 it lends in its own cohort = 5 of 8; the first cohort
    lists no gpu and adds none. gpu-4x: only the first cohort's 4."""
    queues = [Queue("solo", None, {"gpu": Limits(2)}), Queue("research-a", "c1", {"gpu-4x": Limits(4)}),
              Queue("research-b", "c2", {"gpu": Limits(3, None, 1)})]
    found = admission(queues, {}, {"gpu": Capacity(8), "gpu-4x": Capacity(8)})
    assert found.pools == {"c1": {"gpu-4x": 4}, "c2": {"gpu": 1}}
    assert found.admissible == {"gpu": 5, "gpu-4x": 4} and found.unadmittable == {"gpu": 3, "gpu-4x": 4}
    assert (found.most("solo"), found.most("research-a"), found.most("research-b")) == (2, 4, 3)


def test_a_cohort_quota_in_a_flavor_no_member_lists_is_in_its_pool_and_admitted_by_none():
    found = admission(EKS, {"c": {**EKS_COHORT["c"], "gpu-8x": Limits(8)}}, {**CAPACITY, "gpu-8x": Capacity(8, 8)})
    assert found.pools == {"c": {"gpu": 3, "gpu-4x": 13, "gpu-8x": 8}}
    assert found.admissible["gpu-8x"] == 0 and found.unadmittable["gpu-8x"] == 8 and found.largest["gpu-8x"] == 0


def test_a_queue_listing_no_flavor_holds_nothing_and_its_largest_job_is_zero():
    found = admission([*EKS, Queue("idle", "c", {})], EKS_COHORT, CAPACITY)
    assert (found.guaranteed("idle"), found.most("idle"), found.most_in_one("idle")) == (0, 0, 0)
    assert found.most("research") == 12 and found.admissible == {"gpu": 4, "gpu-4x": 16}
