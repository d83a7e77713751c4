"""The multi-node smoke's ComputeDomain: on a stack with ComputeDomains (NVL72 racks, ``install: dra`` with
``computeDomains: true``, stack output ``gpuComputeDomains``), each gang gets ONE ComputeDomain of its own, named
as its job, created before the job and deleted with it on every exit path (success, failure, timeout, Ctrl-C: it
is one more of the run's deletions). Its pods claim the domain's IMEX channel and must land on hosts of one NVLink
domain (:func:`gpuready_components.k8s_gpu.compute_domain.claim_channel`). Kept apart from the gang's own code:
:mod:`.kubernetes_multinode` calls :func:`plan`, :func:`create` and :func:`deletion`."""

from __future__ import annotations

from typing import Any, Callable, Mapping, Optional

from gpuready_components.k8s_gpu import compute_domain as cd

from ..errors import UserError
from ..probe import Check, ProbeReport, nvlink
from .outputs import StackOutputs

OUTPUT = "gpuComputeDomains"
"""The stack output that says the stack's jobs get ComputeDomains; its value: the node label naming each GPU node's
NVLink domain, which the gang's pods must share."""


def wanted(stack: StackOutputs) -> bool:
    """Whether the stack's multi-node jobs need a ComputeDomain each."""
    return bool(stack.get(OUTPUT))


def pod_templates(workload: dict) -> list[dict]:
    """The pod templates of an Indexed Job or a JobSet (the dicts themselves, to change in place)."""
    if workload["kind"] == "JobSet":
        return [r["template"]["spec"]["template"] for r in workload["spec"]["replicatedJobs"]]
    return [workload["spec"]["template"]]


def plan(workload: dict, name: str, namespace: str, nodes: int, domain_label: str = cd.CLIQUE_LABEL) -> dict:
    """The gang's ComputeDomain (named ``name``, ``nodes`` nodes); ``workload``'s pods are made to claim its channel
    and to share one NVLink domain, one value of ``domain_label`` (in place)."""
    for template in pod_templates(workload):
        labels = template.get("metadata", {}).get("labels") or {}
        template["spec"] = cd.claim_channel(template["spec"], name, same_clique=labels, domain_label=domain_label)
    labels = (workload["metadata"].get("labels") or {})
    return cd.compute_domain(name, namespace, nodes, labels=labels)


def create(custom: Any, calls: Any, namespace: str, domain: dict, deadline: float, client: Any = None) -> None:
    """Create ``domain`` (bounded like every call of the run: ``calls.create``). A cluster that serves no
    ComputeDomains (404: the DRA driver or its ComputeDomains not installed) is a UserError saying so."""
    try:
        calls.create(lambda ns, body, **kw: custom.create_namespaced_custom_object(cd.GROUP, cd.VERSION, ns,
                                                                                   cd.PLURAL, body, **kw),
                     namespace, domain, deadline)
    except Exception as error:  # noqa: BLE001 (only the API's 404 is explained; the rest goes on up)
        if client is None or not isinstance(error, client.exceptions.ApiException) or error.status != 404:
            raise
        raise UserError(f"the cluster serves no {cd.KIND}s ({cd.API_VERSION}), though the stack says its jobs get "
                        f"one: is NVIDIA's DRA driver installed with ComputeDomains (gpuready:install: dra, "
                        f"gpuready:computeDomains: true; pulumi up)?") from None


def deletion(custom: Any, client: Any, namespace: str, name: str) -> tuple[str, Callable[..., Any]]:
    """The ``(kind, delete)`` of the gang's ComputeDomain, as the run's cleanup takes it: deleted after the job (the
    driver keeps it until its pods are gone, then removes its channel's claim template)."""
    body = client.V1DeleteOptions(propagation_policy="Background")
    return (cd.KIND, lambda **kw: custom.delete_namespaced_custom_object(cd.GROUP, cd.VERSION, namespace, cd.PLURAL,
                                                                         name, body=body, **kw))


def kubectl(namespace: str, name: str) -> Optional[str]:
    """What deletes the ComputeDomain by hand."""
    return f"kubectl -n {namespace} delete {cd.PLURAL}.{cd.GROUP} {name}"


def nvlink_checks(report: Optional[dict], reports: Mapping[int, Optional[ProbeReport]]) -> list[Check]:
    """The multi-node NVLink verdicts on the gang's NCCL report (:mod:`gpuready.probe.nvlink`), the GPU named as
    the first node's probe saw it."""
    first = next((r for r in reports.values() if r and r.gpus), None)
    name = first.gpus[0].get("name") if first else None
    return [Check(**c) for c in nvlink.checks(report, gpu_name=name)]
