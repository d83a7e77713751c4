"""Job queue rules (Kueue): a GPU queue counts GPUs, every LocalQueue leads to a ClusterQueue, every GPU pool is
reachable through a queue, and the quotas stay within the GPUs the pools reach unless overcommit is declared.

Flavors are matched to pools as Kueue places pods: a ResourceFlavor's ``nodeLabels`` become the pod's node selector,
so it stands for the pools whose nodes carry them (:func:`gpuready.resources.queues.selects`).
"""

from __future__ import annotations

from decimal import Decimal

from gpuready_components.queue_facts import GPU_RESOURCE, OVERCOMMIT_ANNOTATION
from gpuready.resources import quantity, queues
from gpuready.resources.kubernetes import ClusterQueue, Cohort, LocalQueue
from gpuready.resources.scaling import from_policy

from ..rule import ADVISORY, MANDATORY, stack_rule


def _state(resources):
    """(items, Kubernetes GPU pools, GPU flavors by name) of the stack, its resources read through the readers."""
    items = from_policy(resources)
    pools = queues.kubernetes_gpu_pools(queues.gpu_pools(items))
    flavors = {name: (item, flavor) for name, (item, flavor) in queues.flavors(items).items()
               if queues.is_gpu_flavor(flavor, pools)}
    return items, pools, flavors


def _by_urn(resources):
    return {r.urn: r for r in resources}


def _check_covers_gpu(resources, config):
    items, pools, gpu_flavors = _state(resources)
    by_urn = _by_urn(resources)
    for item in items:
        queue = item.facts
        if not isinstance(queue, ClusterQueue):
            continue
        for name in queue.flavors:
            if name in gpu_flavors and GPU_RESOURCE not in queue.covered(name):
                selected = [p.name for p in pools if queues.selects(gpu_flavors[name][1], p)]
                yield by_urn[item.urn], (
                    f"gives quota on GPU flavor {name} ({', '.join(selected) or 'tolerates the GPU taint'}) but its "
                    f"resource group covers only {', '.join(queue.covered(name))}, not {GPU_RESOURCE}: Kueue never "
                    f"admits a job asking for GPUs through it"), (
                    f"add {GPU_RESOURCE} to that resource group's coveredResources, with a nominalQuota for it in "
                    f"each of its flavors")


queue_covers_gpu = stack_rule(
    "queue-covers-gpu",
    f"A Kueue ClusterQueue that gives quota on a GPU flavor (a ResourceFlavor whose node labels select a GPU pool, or "
    f"whose tolerations tolerate its GPU taint) covers {GPU_RESOURCE} in that resource group.",
    MANDATORY, _check_covers_gpu)


def _check_local_queues(resources, config):
    items = from_policy(resources)
    by_urn = _by_urn(resources)
    names = {q.name for i in items if isinstance(q := i.facts, ClusterQueue) and q.name}
    external = set(config.get("externalClusterQueues") or ())
    unnamed = [i.name for i in items if isinstance(i.facts, ClusterQueue) and not i.facts.name]
    for item in items:
        local = item.facts
        if not isinstance(local, LocalQueue) or local.cluster_queue in names | external:
            continue
        target = local.cluster_queue
        named = f"names ClusterQueue {target}, which the stack does not create" if target else "names no ClusterQueue"
        note = f" (ClusterQueue {', '.join(unnamed)} sets no metadata.name: the provider names it with a random " \
               f"suffix)" if unnamed else ""
        yield by_urn[item.urn], (
            f"{named}{note}: Kueue keeps the LocalQueue inactive and every job sent to it pending"), (
            f"set spec.clusterQueue to one of {', '.join(sorted(names)) or '(none: create a ClusterQueue)'}, or list a "
            f"ClusterQueue made outside this stack in this rule's externalClusterQueues")


local_queue_target = stack_rule(
    "local-queue-target",
    "Every Kueue LocalQueue names a ClusterQueue that the stack creates (or one listed as made elsewhere in config).",
    MANDATORY, _check_local_queues,
    {"externalClusterQueues": {"type": "array", "items": {"type": "string"}, "default": []}})


def _gpu_quotas(items):
    """(queue item, flavor, nominal GPUs) of every ClusterQueue's and Cohort's GPU quota."""
    for item in items:
        holder = item.facts
        if isinstance(holder, (ClusterQueue, Cohort)):
            for quota in holder.quotas:
                if quota.resource == GPU_RESOURCE:
                    yield item, quota.flavor, quota.nominal


def _check_reachable(resources, config):
    items, pools, _ = _state(resources)
    if not any(isinstance(i.facts, ClusterQueue) for i in items):
        return
    allowed = set(config.get("allow") or ())
    _, flavors = queues.kueue_admission(items)
    admitted = {}
    for flavor in flavors:
        for pool in flavor.pools:
            admitted[pool.item.urn] = admitted.get(pool.item.urn, 0) + flavor.admissible
    by_urn = _by_urn(resources)
    for pool in pools:
        if pool.name in allowed or admitted.get(pool.item.urn, 0) > 0:
            continue
        reader = pool.item.facts
        label = getattr(reader, "NAME_LABEL", "")
        named = [f.name for f in flavors if f.listed and any(p.item.urn == pool.item.urn for p in f.pools)]
        why = (f"the flavors that select its nodes ({', '.join(named)}) admit 0 {GPU_RESOURCE} by Kueue's arithmetic "
               f"(no nominalQuota there, nor a Cohort's quota any queue of it may borrow)") if named else \
            f"no ClusterQueue or Cohort gives {GPU_RESOURCE} quota on a flavor whose node labels select its nodes"
        yield by_urn[pool.item.urn], (
            f"{why}: its {pool.capacity.max_gpus} GPUs are paid for at full scale but no queued job can land there "
            f"(and Kueue holds back jobs that name no queue)"), (
            f"give a ClusterQueue (or the Cohort of queues that list that flavor) {GPU_RESOURCE} quota on a "
            f"ResourceFlavor whose nodeLabels its nodes carry{f' ({label}: <its name>)' if label else ''}, or add "
            f"{pool.name} to this rule's allow list")


gpu_pool_queued = stack_rule(
    "gpu-pool-queued",
    "In a stack with Kueue ClusterQueues, every Kubernetes GPU pool is selected by a flavor on which the queues admit "
    f"{GPU_RESOURCE} by Kueue's arithmetic (quota 0 everywhere is not queued), unless the pool is allow-listed in "
    "config.",
    MANDATORY, _check_reachable,
    {"allow": {"type": "array", "items": {"type": "string"}, "default": []}})


def _overcommit_declared(items, holders):
    """Whether every ClusterQueue or Cohort in ``holders`` is marked, itself or through its cohort."""
    cohorts = {c.name: c for i in items if isinstance(c := i.facts, Cohort) and c.name}

    def marked(item):
        holder = item.facts
        cohort = cohorts.get(holder.cohort or "") if isinstance(holder, ClusterQueue) else None
        return holder.overcommit or bool(cohort and cohort.overcommit)

    return all(marked(item) for item in holders)


def _check_quotas(resources, config):
    items, pools, _ = _state(resources)
    all_flavors = queues.flavors(items)
    by_urn = _by_urn(resources)
    per_flavor: dict[str, list] = {}
    for item, flavor, nominal in _gpu_quotas(items):
        per_flavor.setdefault(flavor, []).append((item, nominal))
    over = False
    reached = {}
    for flavor, quotas in per_flavor.items():
        selected = [p for p in pools if flavor in all_flavors and queues.selects(all_flavors[flavor][1], p)]
        reached.update({p.item.urn: p for p in selected})
        quota = sum((n for _, n in quotas), Decimal(0))
        capacity = sum(p.capacity.max_gpus for p in selected)
        if quota > capacity and not _overcommit_declared(items, [i for i, _ in quotas]):
            over = True
            where = all_flavors[flavor][0] if flavor in all_flavors else quotas[0][0]
            yield by_urn[where.urn], (
                f"the ClusterQueues give {quantity.show(quota)} GPUs of quota on flavor {flavor} "
                f"({', '.join(i.name for i, _ in quotas)}), but the pools it selects "
                f"({', '.join(p.name for p in selected) or 'none'}) reach {capacity} at full scale: admitted jobs "
                f"wait for GPUs that never come"), (
                f"lower the nominalQuotas, raise the pools' maximum size, or declare the overcommit "
                f"(annotation {OVERCOMMIT_ANNOTATION}: \"true\" on the Cohort, or gpuready:overcommitQuotas: true)")
    total = sum((n for qs in per_flavor.values() for _, n in qs), Decimal(0))
    capacity = sum(p.capacity.max_gpus for p in reached.values())
    holders = [i for qs in per_flavor.values() for i, _ in qs]
    if not over and total > capacity and not _overcommit_declared(items, holders):
        yield None, (f"the ClusterQueues' GPU quotas add up to {quantity.show(total)}, but the pools their flavors "
                     f"select reach {capacity} at full scale"), (
            f"lower the nominalQuotas, raise the pools' maximum size, or declare the overcommit (annotation "
            f"{OVERCOMMIT_ANNOTATION}: \"true\" on the Cohort, or gpuready:overcommitQuotas: true)")


queue_quota_within_capacity = stack_rule(
    "queue-quota-within-capacity",
    f"The {GPU_RESOURCE} quotas Kueue ClusterQueues (and Cohorts) give on each flavor add up to no more GPUs than the "
    f"pools that flavor selects reach at full scale, unless the queues or their Cohort carry the annotation "
    f"{OVERCOMMIT_ANNOTATION}: \"true\".",
    MANDATORY, _check_quotas)

def _check_multinode_topology(resources, config):
    items, pools, gpu_flavors = _state(resources)
    by_urn = _by_urn(resources)
    for pool in pools:
        why = getattr(pool.item.facts, "multi_node", "")
        if not why:
            continue
        selecting = [flavor for _, flavor in gpu_flavors.values() if queues.selects(flavor, pool)]
        if any(flavor.topology_name for flavor in selecting):
            continue
        queued = f"its ResourceFlavor ({', '.join(f.name or '?' for f in selecting)}) names no Topology" if selecting \
            else "no Kueue queue places its jobs"
        yield by_urn[pool.item.urn], (
            f"is built for gangs across nodes ({why}) but {queued}: a gang's pods land wherever the scheduler puts "
            f"them, and its all-reduce crosses network links a placement by the cloud's topology labels would "
            f"spare"), (
            f"{'' if selecting else 'give the stack teams (gpuready:teams) and '}make the pool's nodes there when "
            "Kueue admits a job: a fixed size (its minimum nodes equal to its maximum, e.g. on a Capacity Block or "
            "reservation) or GKE's queued flex-start; gpuready then adds a Topology (docs/queues/topology.md: Kueue's "
            "topology-aware scheduling counts only Ready nodes, so none is made for a pool that scales from zero)")


gpu_multinode_topology = stack_rule(
    "gpu-multinode-topology",
    "A multi-node GPU pool (one its platform builds for gangs across nodes: EFA or UltraServers on EKS, GKE's RDMA "
    "machine types) is "
    "selected by a Kueue ResourceFlavor that names a Topology, so that Kueue places each gang in one network domain "
    "where it fits.",
    ADVISORY, _check_multinode_topology)


RULES = [queue_covers_gpu, local_queue_target, gpu_pool_queued, queue_quota_within_capacity, gpu_multinode_topology]
