"""What ``gpuready plan`` says of a stack's NVL72 pools: per GB200/GB300 pool, the ComputeDomain each multi-node job
gets (the object :mod:`gpuready_components.k8s_gpu.compute_domain` builds, which the multi-node smoke creates), or
that the stack has none (the policy pack's gpu-nvl72-compute-domains says the same as a violation)."""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from gpuready_components import catalog
from gpuready_components.k8s_gpu import compute_domain as cd
from gpuready_components.k8s_gpu import facts as k8s_facts

OUTPUT = "gpuComputeDomains"
JOB = "my-job"
"""The name a job's ComputeDomain takes in the plan (the smoke names it as its job, ``gpuready-nccl-...``)."""


def rack_models(pool: Any) -> list[str]:
    """The NVL72 GPU models (:data:`cd.RACK_MODELS`) of a plan pool's instance types."""
    rows = [catalog.find(pool.cloud, name) for name in pool.instance_types]
    return sorted({r.gpu_model for r in rows if r and r.gpu_model in cd.RACK_MODELS})


def lines(outputs: Mapping[str, Any], pools: Sequence[Any]) -> list[str]:
    """The plan's lines on multi-node NVLink: one paragraph per NVL72 pool (none without one)."""
    racks = [(pool, rack_models(pool)) for pool in pools]
    racks = [(pool, models) for pool, models in racks if models]
    if not racks:
        return []
    on = bool(outputs.get(OUTPUT))
    found = ["", "Multi-node NVLink (GB200/GB300 NVL72):"]
    for pool, models in racks:
        per_node = max((r.gpus for r in (catalog.find(pool.cloud, t) for t in pool.instance_types) if r), default=0)
        nodes = pool.max_gpus // per_node if per_node else 0
        if not on:
            found.append(f"  {pool.resource} ({'/'.join(models)}): no ComputeDomains: jobs across its {nodes} nodes "
                         "talk over the network, not NVLink (set gpuready:install: dra and gpuready:computeDomains: "
                         "true)")
            continue
        namespace = (outputs.get("metaflowProfile") or {}).get("METAFLOW_KUBERNETES_NAMESPACE") or "default"
        domain = cd.compute_domain(JOB, namespace, nodes)
        found += [f"  {pool.resource} ({'/'.join(models)}, up to {nodes} nodes x {per_node} GPUs): each multi-node job "
                  f"gets one ComputeDomain, created with it and deleted with it (the multi-node smoke does), numNodes "
                  f"= its nodes; its pods claim the domain's IMEX channel ({cd.channel_template(JOB)}, DeviceClass "
                  f"{k8s_facts.DRA_COMPUTE_DOMAIN_CLASS}) and share one {outputs[OUTPUT]} (one NVLink domain); "
                  f"NVIDIA driver {cd.MIN_DRIVER} or later",
                  f"    {json.dumps(domain, separators=(', ', ': '))}"]
    return found
