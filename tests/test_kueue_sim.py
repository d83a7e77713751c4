"""The Kueue simulator (tests/kueue_sim.py) against Kueue's own documented examples and boundaries: borrowing capped
by ``borrowingLimit`` (0 included), by the others' ``lendingLimit`` and by the Cohort's own quota, hierarchical
cohorts, flavor fungibility, preemption (reclaim within the cohort, within the ClusterQueue) and fair sharing; every
Workload it writes valid against Kueue 0.19.2's CRD."""

from __future__ import annotations

import jsonschema
import pytest

from tests.components.k8s_gpu import kueue_schemas
from tests.kueue_sim import API, Kueue, quantity

CPU = "cpu"
FLAVOR = "default-flavor"


def flavor(name=FLAVOR):
    return {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": {}}


def resource(nominal, borrow=None, lend=None, name=CPU):
    return {"name": name, "nominalQuota": nominal, **({} if borrow is None else {"borrowingLimit": borrow}),
            **({} if lend is None else {"lendingLimit": lend})}


def cluster_queue(name, *resources, cohort="team-ab", flavors=None, **spec):
    groups = [{"coveredResources": [CPU], "flavors": flavors or [{"name": FLAVOR, "resources": list(resources)}]}]
    return {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": {**({"cohortName": cohort} if cohort else {}), "namespaceSelector": {},
                     "resourceGroups": groups, **spec}}


def cohort(name, *resources, parent=None):
    spec = {**({"parentName": parent} if parent else {}),
            **({"resourceGroups": [{"coveredResources": [CPU], "flavors": [{"name": FLAVOR,
                                                                            "resources": list(resources)}]}]}
               if resources else {})}
    return {"apiVersion": API, "kind": "Cohort", "metadata": {"name": name}, "spec": spec}


def local_queue(name):
    return {"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": name, "namespace": name},
            "spec": {"clusterQueue": name}}


def kueue(*objects, config=None):
    queues = [o["metadata"]["name"] for o in objects if o["kind"] == "ClusterQueue"]
    return Kueue([flavor(), *objects, *(local_queue(q) for q in queues)], config)


def fill(k, queue, n=30, cpus=1, priority=0):
    """Submit ``n`` workloads of ``cpus`` to ``queue``; the CPUs it then holds."""
    for i in range(n):
        k.submit(f"{queue}-{len(k.workloads)}", queue, queue, {CPU: cpus}, priority=priority)
    return k.admitted_in(queue, FLAVOR, CPU)


def test_quantities_are_read_as_kubernetes_writes_them():
    assert quantity("96Gi") == 96 * 2 ** 30 and quantity("500m") == quantity(0.5) and quantity(2.0) == 2
    with pytest.raises(ValueError):
        quantity("2 GPUs")


def test_borrowing_limit_caps_borrowing_as_the_cluster_queue_page_says():
    """team-a-cq: 9 CPUs, borrowingLimit 1; team-b-cq: 12. With team-b idle, team-a admits 9+1=10; team-b, with no
    limit, 12+9=21."""
    objects = (cluster_queue("team-a", resource(9, borrow=1)), cluster_queue("team-b", resource(12)))
    assert fill(kueue(*objects), "team-a") == 10
    assert fill(kueue(*objects), "team-b") == 21
    assert kueue(*objects).max_holdable("team-a", FLAVOR, CPU) == 10


def test_borrowing_limit_zero_means_no_borrowing():
    k = kueue(cluster_queue("team-a", resource(4, borrow=0)), cluster_queue("team-b", resource(12)))
    assert fill(k, "team-a") == 4
    (message,) = {w.message for w in k.workloads.values() if not w.admitted}
    assert message == "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor " \
                      "default-flavor, 1 more needed"


def test_the_others_lending_limit_caps_borrowing_and_keeps_the_rest_guaranteed():
    k = kueue(cluster_queue("team-a", resource(9)), cluster_queue("team-b", resource(12, lend=3)))
    assert fill(k, "team-a") == 12  # its 9 and the 3 team-b lends
    assert fill(k, "team-b", 9) == 9  # team-b's own 9 never left it: no preemption needed
    assert not [e for e in k.events if e[0] == "preempted"]


def test_a_lending_limit_equal_to_the_nominal_quota_lends_it_all():
    k = kueue(cluster_queue("team-a", resource(9)), cluster_queue("team-b", resource(12, lend=12)))
    assert fill(k, "team-a") == 21


def test_the_cohorts_own_quota_is_a_pool_its_members_borrow():
    """The Cohort page: a Cohort's nominalQuota is on top of its ClusterQueues'; a ClusterQueue with nominalQuota 0
    may use all of it, one without the flavor nothing."""
    k = kueue(cohort("hello-cohort", resource(12)), cluster_queue("my-cq", resource(0), cohort="hello-cohort"),
              cluster_queue("other", resource(0), cohort="hello-cohort",
                            flavors=[{"name": "other-flavor", "resources": [resource(0)]}]))
    assert fill(k, "my-cq") == 12
    assert k.max_holdable("other", FLAVOR, CPU) == 0 and fill(k, "other", 1) == 0


def test_the_cohorts_quota_and_its_members_guarantees_add_up_and_borrowing_stays_within_the_limit():
    objects = (cohort("pool", resource(12)), cluster_queue("a", resource(2, borrow=8), cohort="pool"),
               cluster_queue("b", resource(6, lend=0), cohort="pool"))
    assert kueue(*objects).max_holdable("a", FLAVOR, CPU) == 10  # 2 + min(8, 12 of the cohort + 0 b lends)
    assert kueue(*objects).max_holdable("b", FLAVOR, CPU) == 20  # 6 + 12 + the 2 a lends
    k = kueue(*objects)
    assert (fill(k, "a"), fill(k, "b")) == (10, 10)  # everything: 12 + 2 + 6 = 20


def test_a_child_cohort_lends_its_parent_no_more_than_its_lending_limit():
    k = kueue(cohort("root"), cohort("org", resource(10, lend=4), parent="root"),
              cluster_queue("x", resource(0), cohort="org"), cluster_queue("y", resource(0), cohort="root"))
    assert (k.max_holdable("x", FLAVOR, CPU), k.max_holdable("y", FLAVOR, CPU)) == (10, 4)
    assert fill(k, "y") == 4 and fill(k, "x") == 6


def test_flavors_are_tried_in_order_and_borrowing_stops_the_search_by_default():
    flavors = [{"name": FLAVOR, "resources": [resource(1)]}, {"name": "second", "resources": [resource(4)]}]
    for fungibility, second in (({}, 0), ({"whenCanBorrow": "TryNextFlavor"}, 1)):
        k = Kueue([flavor(), flavor("second"), local_queue("a"), local_queue("b"),
                   cluster_queue("a", flavors=flavors, flavorFungibility=fungibility),
                   cluster_queue("b", resource(4))])
        k.submit("one", "a", "a", {CPU: 1})
        k.submit("two", "a", "a", {CPU: 1})  # the first flavor only by borrowing from b
        assert k.admitted_in("a", "second", CPU) == second, fungibility


def test_a_flavor_whose_node_labels_the_pods_node_selector_contradicts_is_skipped():
    flavors = [{"name": "small", "resources": [resource(4)]}, {"name": "big", "resources": [resource(4)]}]
    objects = [{"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": n},
                "spec": {"nodeLabels": {"pool": n}}} for n in ("small", "big")]
    k = Kueue([*objects, local_queue("a"), cluster_queue("a", flavors=flavors)])
    assert k.submit("any", "a", "a", {CPU: 1}).flavors == {CPU: "small"}
    assert k.submit("pinned", "a", "a", {CPU: 4}, node_selector={"pool": "big"}).flavors == {CPU: "big"}
    assert k.submit("other-key", "a", "a", {CPU: 1}, node_selector={"zone": "b"}).flavors == {CPU: "small"}
    nowhere = k.submit("nowhere", "a", "a", {CPU: 1}, node_selector={"pool": "gone"})
    assert not nowhere.admitted and nowhere.message == ("couldn't assign flavors to pod set main: flavor small doesn't "
                                                        "match node affinity, flavor big doesn't match node affinity")
    full = k.submit("full", "a", "a", {CPU: 1}, node_selector={"pool": "big"})
    assert full.message == ("couldn't assign flavors to pod set main: flavor small doesn't match node affinity, "
                            "insufficient unused quota for cpu in flavor big, 1 more needed")


def test_a_flavor_where_preempting_stays_within_the_nominal_quota_beats_one_where_it_would_borrow():
    """Both flavors need preemption; in ``second`` the workload stays within its own quota (reclaim), in the first
    it would borrow too (borrowWithinCohort): Kueue prefers the reclaim."""
    preemption = {"reclaimWithinCohort": "Any", "borrowWithinCohort": {"policy": "LowerPriority",
                                                                       "maxPriorityThreshold": 100}}
    quotas = {"a": (0, 2), "b": (0, 0)}
    k = Kueue([flavor(), flavor("second"), local_queue("a"), local_queue("b"),
               {**cohort("team-ab"), "spec": {"resourceGroups": [{"coveredResources": [CPU], "flavors": [
                   {"name": FLAVOR, "resources": [resource(2)]}, {"name": "second", "resources": [resource(0)]}]}]}},
               *(cluster_queue(n, flavors=[{"name": FLAVOR, "resources": [resource(q[0])]},
                                           {"name": "second", "resources": [resource(q[1])]}], preemption=preemption)
                 for n, q in quotas.items())])
    for i in range(4):
        k.submit(f"b-{i}", "b", "b", {CPU: 1}, priority=10)
    assert (k.admitted_in("b", FLAVOR, CPU), k.admitted_in("b", "second", CPU)) == (2, 2)
    assert k.submit("urgent", "a", "a", {CPU: 1}, priority=1000).flavors == {CPU: "second"}
    (victim,) = [w for w in k.workloads.values() if w.evictions]
    assert victim.name in ("b-2", "b-3") and k.admitted_in("b", FLAVOR, CPU) == 2


def test_a_cluster_queue_admits_only_the_namespaces_its_selector_selects():
    team_ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a", "labels": {"team": "a"}}}
    for selector, admitted in (({"matchLabels": {"team": "a"}}, True), ({"matchLabels": {"team": "b"}}, False),
                               ({"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In",
                                                       "values": ["a"]}]}, True), (None, False), ({}, True)):
        queue = cluster_queue("a", resource(4))
        queue["spec"]["namespaceSelector"] = selector
        k = Kueue([flavor(), team_ns, local_queue("a"), queue])
        job = k.submit("job", "a", "a", {CPU: 1})
        assert job.admitted == admitted, selector
        if not admitted:
            assert job.message == "Workload namespace doesn't match ClusterQueue selector"


def reclaiming(policy="Any", priority=0):
    preemption = {"reclaimWithinCohort": policy, "withinClusterQueue": "LowerPriority"}
    k = kueue(cluster_queue("team-a", resource(4), preemption=preemption),
              cluster_queue("team-b", resource(4), preemption=preemption))
    assert fill(k, "team-a", 8, priority=priority) == 8  # team-b idle: team-a borrows all of it
    return k


def test_reclaim_evicts_the_borrower_until_the_owner_has_its_guarantee():
    k = reclaiming()
    assert fill(k, "team-b", 4, priority=0) == 4
    assert k.admitted_in("team-a", FLAVOR, CPU) == 4
    evicted = [w for w in k.workloads.values() if w.evictions]
    assert sorted(w.name for w in evicted) == ["team-a-4", "team-a-5", "team-a-6", "team-a-7"]  # newest first
    for w in evicted:
        conditions = {c["type"]: c for c in w.conditions}
        assert (conditions["Evicted"]["status"], conditions["Evicted"]["reason"]) == ("True", "Preempted")
        assert (conditions["Preempted"]["status"], conditions["Preempted"]["reason"]) == ("True",
                                                                                          "InCohortReclamation")
        assert "due to reclamation within the cohort; preemptor path: /team-ab/team-b; preemptee path: " \
               "/team-ab/team-a" in conditions["Preempted"]["message"]
        assert conditions["QuotaReserved"]["status"] == "False" and not w.admitted


def test_a_workload_both_admitted_and_evicted_is_what_kueue_writes():
    """Kueue marks a preempted Workload Evicted while it still holds its quota (its pods are being stopped), then
    releases it: both objects, and every other it wrote, valid against the CRD and its admission rule."""
    k = reclaiming()
    fill(k, "team-b", 4)
    both = [o for o in k.seen if _true(o, "Admitted") and _true(o, "Evicted")]
    assert both and all(_true(o, "Preempted") and o["status"]["admission"]["clusterQueue"] == "team-a" for o in both)
    requeued = [o for o in k.seen if _true(o, "Evicted") and not _true(o, "QuotaReserved")]
    assert requeued and all("admission" not in o["status"] and o["status"]["requeueState"]["count"] == 1
                            for o in requeued)
    check = jsonschema.Draft7Validator(kueue_schemas.schema("Workload"))  # compiled once: the CRD is large
    for obj in k.seen:
        check.validate(obj)
        # x-kubernetes-validations: podSetAssignments must have the same number of podSets as the spec
        if _true(obj, "QuotaReserved") and "admission" in obj["status"]:
            assert len(obj["spec"]["podSets"]) == len(obj["status"]["admission"]["podSetAssignments"])


def _true(obj, kind):
    return any(c["type"] == kind and c["status"] == "True" for c in obj["status"].get("conditions", ()))


def test_no_reclaim_without_the_policy_and_lower_priority_reclaims_only_lower_priority():
    k = reclaiming("Never")
    assert fill(k, "team-b", 4) == 0
    k = reclaiming("LowerPriority", priority=100)
    assert fill(k, "team-b", 4, priority=100) == 0
    assert fill(k, "team-b", 4, priority=1000) == 4


def test_a_borrowing_queue_does_not_reclaim():
    """Reclaim only for a workload that fits within its queue's nominal quota."""
    k = reclaiming()
    assert fill(k, "team-b", 1, cpus=5) == 0


def test_within_the_cluster_queue_a_higher_priority_preempts_a_lower_one():
    k = kueue(cluster_queue("solo", resource(4), cohort=None, preemption={"withinClusterQueue": "LowerPriority"}))
    assert fill(k, "solo", 4, priority=10) == 4
    k.submit("urgent", "solo", "solo", {CPU: 2}, priority=1000)
    assert k.workloads[("solo", "urgent")].admitted and len([w for w in k.workloads.values() if w.evictions]) == 2
    reasons = {c["reason"] for w in k.workloads.values() for c in w.conditions if c["type"] == "Preempted"}
    assert reasons == {"InClusterQueue"}


@pytest.mark.parametrize("weights, held", [((1, 1), (6, 6)), ((1, 2), (4, 8))])
def test_fair_sharing_preempts_until_the_shares_meet_by_weight(weights, held):
    """Both queues borrow all they hold from the Cohort's 12: a's 12 are taken back until the shares (borrowed over
    weight) meet, as LessThanOrEqualToFinalShare then LessThanInitialShare allow."""
    preemption = {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}
    k = kueue(cohort("pool", resource(12)),
              *(cluster_queue(n, resource(0), cohort="pool", preemption=preemption, fairSharing={"weight": w})
                for n, w in zip("ab", weights)),
              config={"fairSharing": {"preemptionStrategies": ["LessThanOrEqualToFinalShare",
                                                               "LessThanInitialShare"]}})
    assert fill(k, "a", 12) == 12
    assert fill(k, "b", 12) == held[1] and k.admitted_in("a", FLAVOR, CPU) == held[0]
    reasons = {c["reason"] for w in k.workloads.values() for c in w.conditions if c["type"] == "Preempted"}
    assert reasons == {"InCohortFairSharing"}
