"""NVIDIA's DRA driver's ComputeDomains: multi-node NVLink (IMEX) for ONE job on a GB200/GB300 NVL72 rack.

A GB200 or GB300 NVL72 rack joins 18 four-GPU hosts in one NVLink domain, but a pod on one host reaches another
host's GPU memory over NVLink only through an IMEX channel, and the driver (``dra-driver-nvidia-gpu`` v0.4.1, group
``resource.nvidia.com``) hands IMEX channels out through a ComputeDomain: the job's pods claim the channel through the
ResourceClaimTemplate the ComputeDomain names, and the driver starts an IMEX daemon on each node a claiming pod lands
on. One ComputeDomain per job, created with it and deleted with it (the driver's docs: a ComputeDomain is tied to one
workload's lifetime; a node serves one ComputeDomain at a time). The objects here are exactly the shape of the
driver's own demo (``demo/specs/imex/nvbandwidth-test-job.yaml``, ``channel-injection.yaml``): tests validate them
against the chart's CRD and Kubernetes' schemas (tests/data/helm-charts/dra-driver-nvidia-gpu-0.4.1/, the demos in
tests/data/dra-driver-nvidia-gpu-0.4.1-demo/).

Pure data: no Kubernetes client, no Pulumi; the multi-node smoke creates and deletes the objects, ``gpuready plan``
prints them."""

from __future__ import annotations

import copy
from typing import Any, Mapping, Optional

from .facts import GFD_CLIQUE_LABEL

GROUP, VERSION, PLURAL, KIND = "resource.nvidia.com", "v1beta1", "computedomains", "ComputeDomain"
"""The ComputeDomain API of the driver's chart v0.4.1 (``crds/resource.nvidia.com_computedomains.yaml``, the only
served version)."""
API_VERSION = f"{GROUP}/{VERSION}"
CHANNEL_CLAIM = "compute-domain-channel"
"""The name the pods give their claim of the channel (the demo's)."""
CLIQUE_LABEL = GFD_CLIQUE_LABEL
"""GPU feature discovery's NVLink-domain label, the default of a platform's ``NodeFacts.nvlink_domain_label``: a gang
that must share NVLink asks for one value of its platform's."""
MIN_DRIVER = "570.158.01"
"""The NVIDIA driver ComputeDomains need at least (the DRA driver's prerequisites)."""
RACK_MODELS = ("GB200", "GB300")
"""GPU models (the catalog's names) sold only as NVL72 rack members: multi-node NVLink across their hosts works only
through a ComputeDomain."""


def channel_template(name: str) -> str:
    """The ResourceClaimTemplate the driver makes for ComputeDomain ``name`` (the demo's ``<name>-channel``)."""
    return f"{name}-channel"


def compute_domain(name: str, namespace: str, nodes: int, labels: Optional[Mapping[str, str]] = None) -> dict:
    """The ComputeDomain of one job on ``nodes`` nodes. ``numNodes`` is the job's node count, as the demo sets it:
    with the chart's default ``IMEXDaemonsWithDNSNames`` gate it only drives the ComputeDomain's ``status``
    (``Ready`` once that many IMEX daemons are), never holds a pod back."""
    if nodes < 1:
        raise ValueError(f"a ComputeDomain spans 1 node or more, not {nodes}")
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = dict(labels)
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata,
            "spec": {"numNodes": nodes, "channel": {"resourceClaimTemplate": {"name": channel_template(name)}}}}


def claim_channel(pod_spec: Mapping[str, Any], name: str, *, same_clique: Optional[Mapping[str, str]] = None,
                  domain_label: str = CLIQUE_LABEL) -> dict:
    """``pod_spec`` (a copy) with every container claiming ComputeDomain ``name``'s channel: the pod's
    ``resourceClaims`` names the template, each container's ``resources.claims`` the claim, next to whatever it
    claims or asks for already. ``same_clique``: the gang's pods' labels, to require that they all land on hosts of
    one NVLink domain (pod affinity on ``domain_label``, the platform's NVLink-domain label): a ComputeDomain spanning
    two racks has no NVLink between them."""
    spec = copy.deepcopy(dict(pod_spec))
    claims = [c for c in spec.get("resourceClaims", []) if c.get("name") != CHANNEL_CLAIM]
    spec["resourceClaims"] = [*claims, {"name": CHANNEL_CLAIM, "resourceClaimTemplateName": channel_template(name)}]
    for container in spec.get("containers", []):
        resources = container.setdefault("resources", {})
        resources["claims"] = [*(c for c in resources.get("claims", []) if c.get("name") != CHANNEL_CLAIM),
                               {"name": CHANNEL_CLAIM}]
    if same_clique:
        affinity = spec.setdefault("affinity", {}).setdefault("podAffinity", {})
        affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(
            {"labelSelector": {"matchLabels": dict(same_clique)}, "topologyKey": domain_label})
    return spec


def needs_compute_domains(gpu_models: tuple[str, ...]) -> bool:
    """Whether a pool of these GPU models is an NVL72 rack's (:data:`RACK_MODELS`)."""
    return any(model in RACK_MODELS for model in gpu_models)
