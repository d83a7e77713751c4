"""GPUs claimed through Dynamic Resource Allocation: on a stack whose GPUs come from NVIDIA's DRA driver (``install:
dra``, output ``gpuDeviceClass``), the smoke's, multi-node smoke's and sweep's pods ask for GPUs with a
ResourceClaimTemplate of that DeviceClass instead of ``nvidia.com/gpu`` limits (no device plugin advertises those
there). Each run makes its templates before its Jobs and deletes them with them, on every way out (they hold no GPU:
the claim a pod gets from one is the pod's and goes with it).

A template asks for ``count`` whole GPUs of the class (``spec.devices.requests[].exactly``, allocation mode
``ExactCount``: the one form Kueue 0.19 charges to a queue's quota, through its ``deviceClassMappings``)."""

from __future__ import annotations

import copy
from typing import Any, Callable, Iterator, Mapping, Optional

from gpuready_components.k8s_gpu.facts import DRA_DRIVER_NAME
from gpuready_components.queue_facts import GPU_RESOURCE

RESOURCE_API = "resource.k8s.io/v1"
"""The DRA API a template is created in (GA since Kubernetes 1.34, which ``install: dra`` requires)."""
CLAIM = "gpus"
"""The name of the claim in the pod (``spec.resourceClaims[].name``, the containers' ``resources.claims[].name``)
and of the request in the template."""
KIND = "ResourceClaimTemplate"


def device_class(outputs: Any) -> Optional[str]:
    """The DeviceClass a stack's jobs claim GPUs of (its ``gpuDeviceClass`` output), or ``None``: they ask for
    ``nvidia.com/gpu``. ``outputs``: the run's :class:`~gpuready.smoke.outputs.StackOutputs`."""
    return outputs.get("gpuDeviceClass") or None


def template_name(owner: str, gpus: int) -> str:
    """The template of ``gpus`` GPUs of the run's object ``owner`` (a Job or JobSet name, unique to the run)."""
    return f"{owner}-{CLAIM}-{gpus}"


def claim_template(name: str, namespace: str, gpus: int, device_class: str,
                   labels: Mapping[str, str]) -> dict[str, Any]:
    """A ResourceClaimTemplate of ``gpus`` whole GPUs of ``device_class`` (``resource.k8s.io/v1``)."""
    return {"apiVersion": RESOURCE_API, "kind": KIND,
            "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
            "spec": {"spec": {"devices": {"requests": [{"name": CLAIM, "exactly": {
                "deviceClassName": device_class, "allocationMode": "ExactCount", "count": gpus}}]}}}}


def pod_specs(obj: Any) -> Iterator[dict[str, Any]]:
    """Every pod spec in a Job, JobSet or other manifest (each dict holding ``containers``), outermost first."""
    if isinstance(obj, dict):
        if isinstance(obj.get("containers"), list):
            yield obj
            return
        for value in obj.values():
            yield from pod_specs(value)
    elif isinstance(obj, list):
        for value in obj:
            yield from pod_specs(value)


def _gpus(container: Mapping[str, Any]) -> int:
    return int(((container.get("resources") or {}).get("limits") or {}).get(GPU_RESOURCE, 0))


def claiming(manifest: dict[str, Any], device_class: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``manifest`` (a copy) whose containers claim their GPUs instead of asking for ``nvidia.com/gpu``, and the
    templates they claim from (one per GPU count, named after the manifest: :func:`template_name`), to create in its
    namespace before it. A pod with no GPU limit is left alone; so is the rest of each container's resources (EFA
    devices, InfiniBand)."""
    manifest = copy.deepcopy(manifest)
    meta = manifest["metadata"]
    templates: dict[str, dict[str, Any]] = {}
    for spec in pod_specs(manifest):
        counts = [_gpus(c) for c in spec["containers"]]
        if not any(counts):
            continue
        if sum(1 for n in counts if n) > 1:
            raise ValueError("one container of a pod asks for the GPUs")  # every gpuready pod has one
        gpus = max(counts)
        name = template_name(meta["name"], gpus)
        templates.setdefault(name, claim_template(name, meta.get("namespace", "default"), gpus, device_class,
                                                  meta.get("labels") or {}))
        for container in spec["containers"]:
            if not _gpus(container):
                continue
            resources = container["resources"]
            del resources["limits"][GPU_RESOURCE]
            if not resources["limits"]:
                del resources["limits"]
            resources["claims"] = [{"name": CLAIM}]
        spec["resourceClaims"] = [{"name": CLAIM, "resourceClaimTemplateName": name}]
    return manifest, list(templates.values())


def claimed_gpus(pod_spec: Mapping[str, Any], templates: Mapping[str, Mapping[str, Any]]) -> int:
    """The GPUs a pod claims through ``templates`` (by name), as Kueue counts them: each request's ``count`` of a
    template the pod names (``exactly``, default 1)."""
    total = 0
    for claim in pod_spec.get("resourceClaims") or ():
        template = templates[claim["resourceClaimTemplateName"]]
        for request in template["spec"]["spec"]["devices"]["requests"]:
            total += int(request["exactly"].get("count", 1))
    return total


def create(calls: Any, client: Any, api: Any, namespace: str, templates: list[dict[str, Any]], deadline: float,
           created: Callable[[str, Callable[..., Any]], None]) -> None:
    """Create each of ``templates`` in ``namespace`` through ``calls`` (:class:`~.kubernetes.BoundedCalls`), telling
    ``created`` each one's ``(name, delete)`` before its create is sent (so the cleanup deletes it whatever
    happens)."""
    resource_api = client.ResourceV1Api(api)
    for template in templates:
        name = template["metadata"]["name"]
        created(name, lambda name=name, **kw: resource_api.delete_namespaced_resource_claim_template(
            name, namespace, **kw))
        calls.create(resource_api.create_namespaced_resource_claim_template, namespace, template, deadline)


def node_gpus(slices: list[Mapping[str, Any]], driver: str = DRA_DRIVER_NAME) -> dict[str, int]:
    """GPUs each node publishes through the DRA driver: the devices of type ``gpu`` in ``slices`` (ResourceSlices,
    plain dicts) of ``driver``, by ``spec.nodeName``, counting each pool at its newest generation only (a driver
    publishes a new generation of a pool and removes the old one after)."""
    newest: dict[tuple[str, str], int] = {}
    for item in slices:
        spec = item.get("spec") or {}
        if spec.get("driver") != driver or not spec.get("nodeName"):
            continue
        pool = spec.get("pool") or {}
        key = (spec["nodeName"], pool.get("name", ""))
        newest[key] = max(newest.get(key, 0), int(pool.get("generation", 0)))
    gpus: dict[str, int] = {}
    for item in slices:
        spec = item.get("spec") or {}
        pool = spec.get("pool") or {}
        key = (spec.get("nodeName"), pool.get("name", ""))
        if spec.get("driver") != driver or key not in newest or int(pool.get("generation", 0)) != newest[key]:
            continue
        count = sum(1 for device in spec.get("devices") or ()
                    if ((device.get("attributes") or {}).get("type") or {}).get("string") == "gpu")
        gpus[spec["nodeName"]] = gpus.get(spec["nodeName"], 0) + count
    return gpus


def list_node_gpus(calls: Any, client: Any, api: Any, deadline: float, driver: str = DRA_DRIVER_NAME) -> dict[str, int]:
    """:func:`node_gpus` of the cluster's ResourceSlices of ``driver`` (listed by field selector, through
    ``calls``)."""
    resource_api = client.ResourceV1Api(api)
    found = calls(resource_api.list_resource_slice, field_selector=f"spec.driver={driver}", deadline=deadline)
    plain = api.sanitize_for_serialization
    return node_gpus([plain(item) for item in found.items], driver)
