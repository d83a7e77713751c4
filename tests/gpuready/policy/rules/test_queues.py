"""The job queue rules (gpuready.policy.rules.queues) on the Kueue program of :mod:`tests.gpuready.queue_programs`
and edits of its queues: the whole violation a user reads (the resource, what is wrong with the numbers and names,
the fix), in the cases the verdict tests leave open. Rendered once; each case edits what the engine would receive."""

from __future__ import annotations

import pytest

from gpuready.plan.render import run
from gpuready.resources import aws
from tests.gpuready.queue_programs import program

from ..helpers import edited, said, violations

KUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:"
CLUSTER_QUEUE, LOCAL_QUEUE, FLAVOR, COHORT = (KUEUE + kind for kind in
                                              ("ClusterQueue", "LocalQueue", "ResourceFlavor", "Cohort"))
COVER_FIX = ("Fix: add nvidia.com/gpu to that resource group's coveredResources, with a nominalQuota for it in each "
             "of its flavors")
QUOTA_FIX = ('Fix: lower the nominalQuotas, raise the pools\' maximum size, or declare the overcommit (annotation '
             'gpuready.io/overcommit: "true" on the Cohort, or gpuready:overcommitQuotas: true)')


@pytest.fixture(scope="module")
def queues():
    """Two EKS GPU pools (gpu-l4: 8 GPUs at full scale, gpu-l40s: 4), a flavor each, ClusterQueues research (6 on
    gpu-l4) and inference (2 on gpu-l4, 4 on gpu-l40s) in Cohort gpuready, a LocalQueue to each."""
    return run(program(), project="queues", stack="test", config={"aws:region": "us-east-1"})


def _spec(change):
    def edit(inputs):
        change(inputs["spec"])
        return inputs
    return edit


def _labels(labels):
    return _spec(lambda spec: spec.__setitem__("nodeLabels", labels))


def _uncovered(spec):
    spec["resourceGroups"][0]["coveredResources"] = ["cpu", "memory"]


def test_a_queue_not_covering_gpus_is_told_the_pools_its_flavor_selects_and_what_it_covers(queues):
    report = violations(edited(queues, CLUSTER_QUEUE, "research", _spec(_uncovered)))
    assert said(report, "queue-covers-gpu") == [(
        "mandatory", "research", "research: gives quota on GPU flavor gpu-l4 (gpu-l4) but its resource group covers "
        "only cpu, memory, not nvidia.com/gpu: Kueue never admits a job asking for GPUs through it. " + COVER_FIX)]
    both = edited(edited(queues, CLUSTER_QUEUE, "research", _spec(_uncovered)), FLAVOR, "gpu-l4",
                  _labels({"nvidia.com/gpu.present": "true"}))
    assert said(violations(both), "queue-covers-gpu")[0][2].startswith(
        "research: gives quota on GPU flavor gpu-l4 (gpu-l4, gpu-l40s) but its resource group covers only cpu, memory")


def test_a_flavor_that_only_tolerates_the_gpu_taint_is_a_gpu_flavor_too(queues):
    """Its labels select no pool of the stack, its tolerations tolerate the pools' GPU taint."""
    tolerating = edited(edited(queues, CLUSTER_QUEUE, "research", _spec(_uncovered)), FLAVOR, "gpu-l4",
                        _labels({"gpuready.io/pool": "h100"}))
    assert said(violations(tolerating), "queue-covers-gpu") == [(
        "mandatory", "research", "research: gives quota on GPU flavor gpu-l4 (tolerates the GPU taint) but its "
        "resource group covers only cpu, memory, not nvidia.com/gpu: Kueue never admits a job asking for GPUs through "
        "it. " + COVER_FIX)]


def _target(queue):
    return _spec(lambda spec: spec.__setitem__("clusterQueue", queue) if queue else spec.pop("clusterQueue"))


def test_a_local_queue_to_no_cluster_queue_is_told_the_ones_it_may_name(queues):
    missing = edited(queues, LOCAL_QUEUE, "inference-queue", _target("inferense"))
    assert said(violations(missing), "local-queue-target") == [(
        "mandatory", "inference-queue", "inference-queue: names ClusterQueue inferense, which the stack does not "
        "create: Kueue keeps the LocalQueue inactive and every job sent to it pending. Fix: set spec.clusterQueue to "
        "one of inference, research, or list a ClusterQueue made outside this stack in this rule's "
        "externalClusterQueues")]
    unset = edited(queues, LOCAL_QUEUE, "inference-queue", _target(None))
    assert said(violations(unset), "local-queue-target")[0][2].startswith(
        "inference-queue: names no ClusterQueue: Kueue keeps the LocalQueue inactive")


def test_a_local_queue_in_a_stack_without_cluster_queues_is_told_to_create_one(queues):
    alone = edited(edited(queues, CLUSTER_QUEUE), LOCAL_QUEUE, "research-queue")
    assert said(violations(alone), "local-queue-target") == [(
        "mandatory", "inference-queue", "inference-queue: names ClusterQueue inference, which the stack does not "
        "create: Kueue keeps the LocalQueue inactive and every job sent to it pending. Fix: set spec.clusterQueue to "
        "one of (none: create a ClusterQueue), or list a ClusterQueue made outside this stack in this rule's "
        "externalClusterQueues")]


def test_cluster_queues_the_provider_names_are_why_their_local_queues_find_none(queues):
    def unnamed(inputs):
        del inputs["metadata"]["name"]
        return inputs

    report = violations(edited(queues, CLUSTER_QUEUE, "research", unnamed))
    assert said(report, "local-queue-target") == [(
        "mandatory", "research-queue", "research-queue: names ClusterQueue research, which the stack does not create "
        "(ClusterQueue research sets no metadata.name: the provider names it with a random suffix): Kueue keeps the "
        "LocalQueue inactive and every job sent to it pending. Fix: set spec.clusterQueue to one of inference, or "
        "list a ClusterQueue made outside this stack in this rule's externalClusterQueues")]
    both = said(violations(edited(queues, CLUSTER_QUEUE, change=unnamed)), "local-queue-target")
    assert [(name, message.partition(": Kueue")[0]) for _, name, message in both] == [
        (f"{team}-queue", f"{team}-queue: names ClusterQueue {team}, which the stack does not create (ClusterQueue "
                          f"inference, research sets no metadata.name: the provider names it with a random suffix)")
        for team in ("inference", "research")]


def test_a_pool_no_queue_reaches_is_told_the_label_that_would_select_it(queues):
    def no_l40s(spec):
        spec["resourceGroups"][0]["flavors"] = [f for f in spec["resourceGroups"][0]["flavors"]
                                                if f["name"] != "gpu-l40s"]

    report = violations(edited(queues, CLUSTER_QUEUE, "inference", _spec(no_l40s)))
    assert said(report, "gpu-pool-queued") == [(
        "mandatory", "gpu-l40s", "gpu-l40s: no ClusterQueue or Cohort gives nvidia.com/gpu quota on a flavor whose "
        "node labels select its nodes: its 4 GPUs are paid for at full scale but no queued job can land there (and "
        "Kueue holds back jobs that name no queue). Fix: give a ClusterQueue (or the Cohort of queues that list that "
        "flavor) nvidia.com/gpu quota on a ResourceFlavor whose nodeLabels its nodes carry "
        "(eks.amazonaws.com/nodegroup: <its name>), or add gpu-l40s to this rule's allow list")]
    # a platform whose nodes carry no label naming their pool (a plug-in's may not): the flavors that select by that
    # label select nothing, and the fix names no label
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(aws.EksNodeGroup, "NAME_LABEL", "")
        report = violations(edited(queues, CLUSTER_QUEUE, "inference", _spec(no_l40s)))
    assert [(name, message.partition(". Fix: ")[2]) for _, name, message in said(report, "gpu-pool-queued")] == [
        (pool, "give a ClusterQueue (or the Cohort of queues that list that flavor) nvidia.com/gpu quota on a "
               f"ResourceFlavor whose nodeLabels its nodes carry, or add {pool} to this rule's allow list")
        for pool in ("gpu-l4", "gpu-l40s")]


def _l40s_quota(gpus):
    def change(spec):
        (l40s,) = [f for f in spec["resourceGroups"][0]["flavors"] if f["name"] == "gpu-l40s"]
        l40s["resources"][0]["nominalQuota"] = gpus
    return _spec(change)


def _cohort_quota(flavor, gpus):
    return _spec(lambda spec: spec.__setitem__("resourceGroups", [
        {"coveredResources": ["nvidia.com/gpu"], "flavors": [{"name": flavor, "resources": [
            {"name": "nvidia.com/gpu", "nominalQuota": gpus}]}]}]))


def test_a_pool_whose_flavor_admits_nothing_is_not_queued_and_the_cohort_quota_queues_it(queues):
    """Quota 0 on the only queue listing gpu-l40s: listed is not queued. The Cohort's own quota there, which
    inference may borrow, is."""
    zero = edited(queues, CLUSTER_QUEUE, "inference", _l40s_quota(0))
    assert said(violations(zero), "gpu-pool-queued") == [(
        "mandatory", "gpu-l40s", "gpu-l40s: the flavors that select its nodes (gpu-l40s) admit 0 nvidia.com/gpu by "
        "Kueue's arithmetic (no nominalQuota there, nor a Cohort's quota any queue of it may borrow): its 4 GPUs are "
        "paid for at full scale but no queued job can land there (and Kueue holds back jobs that name no queue). Fix: "
        "give a ClusterQueue (or the Cohort of queues that list that flavor) nvidia.com/gpu quota on a ResourceFlavor "
        "whose nodeLabels its nodes carry (eks.amazonaws.com/nodegroup: <its name>), or add gpu-l40s to this rule's "
        "allow list")]
    lent = edited(zero, COHORT, "gpuready", _cohort_quota("gpu-l40s", 4))
    assert said(violations(lent), "gpu-pool-queued") == []


def _quota(flavor, gpus):
    def change(spec):
        spec["resourceGroups"][0]["flavors"].append({"name": flavor, "resources": [
            {"name": "nvidia.com/gpu", "nominalQuota": gpus}]})
    return _spec(change)


def test_quota_on_a_flavor_the_stack_lacks_is_told_on_its_queue(queues):
    report = violations(edited(queues, CLUSTER_QUEUE, "research", _quota("gpu-h100", 2)))
    assert said(report, "queue-quota-within-capacity") == [(
        "mandatory", "research", "research: the ClusterQueues give 2 GPUs of quota on flavor gpu-h100 (research), "
        "but the pools it selects (none) reach 0 at full scale: admitted jobs wait for GPUs that never come. "
        + QUOTA_FIX)]


def test_quota_over_a_flavor_selecting_both_pools_names_both(queues):
    report = violations(edited(edited(queues, FLAVOR, "gpu-l4", _labels({"nvidia.com/gpu.present": "true"})),
                               CLUSTER_QUEUE, "research", _spec(lambda spec: spec["resourceGroups"][0]["flavors"][0][
                                   "resources"][0].__setitem__("nominalQuota", 11))))
    assert said(report, "queue-quota-within-capacity") == [(
        "mandatory", "gpu-l4", "gpu-l4: the ClusterQueues give 13 GPUs of quota on flavor gpu-l4 (inference, "
        "research), but the pools it selects (gpu-l4, gpu-l40s) reach 12 at full scale: admitted jobs wait for GPUs "
        "that never come. " + QUOTA_FIX)]


def test_quota_a_cohort_holds_counts_and_is_told(queues):
    """A Cohort may hold quota of its own (lent to its ClusterQueues): it counts, and its overcommit is its own."""
    report = violations(edited(queues, COHORT, "gpuready", _spec(lambda spec: spec.__setitem__("resourceGroups", [
        {"coveredResources": ["nvidia.com/gpu"], "flavors": [{"name": "gpu-l4", "resources": [
            {"name": "nvidia.com/gpu", "nominalQuota": 1}]}]}]))))
    assert said(report, "queue-quota-within-capacity") == [(
        "mandatory", "gpu-l4", "gpu-l4: the ClusterQueues give 9 GPUs of quota on flavor gpu-l4 (inference, "
        "research, gpuready), but the pools it selects (gpu-l4) reach 8 at full scale: admitted jobs wait for GPUs "
        "that never come. " + QUOTA_FIX)]


def test_a_cohort_declaring_the_overcommit_covers_its_own_quota_too(queues):
    def declared_with_quota(inputs):
        inputs["metadata"]["annotations"] = {"gpuready.io/overcommit": "true"}
        inputs["spec"]["resourceGroups"] = [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
            {"name": "gpu-l4", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 1}]}]}]
        return inputs

    assert said(violations(edited(queues, COHORT, "gpuready", declared_with_quota)),
                "queue-quota-within-capacity") == []
