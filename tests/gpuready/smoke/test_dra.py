"""GPUs claimed through DRA on a stack whose install is dra (output ``gpuDeviceClass``): the smoke's, multi-node
smoke's and sweep's pods claim GPUs through ResourceClaimTemplates of DeviceClass gpu.nvidia.com, valid for Kubernetes
1.34 (strict), counted as Kueue counts them; the templates are created before the Jobs and deleted with them, against
the local fake API server."""

from __future__ import annotations

import io
import json

import kubernetes_validate
import pytest

from gpuready.probe import core, nccl
from gpuready.smoke import dra, kubernetes, kubernetes_multinode, sweep_kubernetes
from tests.gpuready.conftest import H100

from .test_kubernetes import _report_logs

K8S = "1.34.0"
"""The oldest Kubernetes ``install: dra`` accepts, whose schemas carry resource.k8s.io/v1."""
EKS = {"platform": "eks", "gpuTaint": {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
       "gpuNodeTaints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}],
       "gpuNodeLabels": {"nvidia.com/gpu.present": "true"}, "maxGpusPerNode": 4, "maxGpus": 8,
       "gpuDeviceClass": "gpu.nvidia.com"}
TAINTS, LABELS = EKS["gpuNodeTaints"], EKS["gpuNodeLabels"]


def _by_name(templates):
    return {t["metadata"]["name"]: t for t in templates}


@pytest.mark.parametrize("gpus", [1, 4])
def test_the_smoke_job_claims_its_gpus_and_both_objects_are_valid(gpus):
    _, job = kubernetes.manifests("gpuready-smoke-abc", "ml", gpus, TAINTS, LABELS, 900)
    claimed, templates = dra.claiming(job, "gpu.nvidia.com")
    (template,) = templates
    kubernetes_validate.validate(template, K8S, strict=True)
    kubernetes_validate.validate(claimed, K8S, strict=True)
    spec = claimed["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    assert "limits" not in container["resources"] and container["resources"]["claims"] == [{"name": dra.CLAIM}]
    assert spec["resourceClaims"] == [{"name": dra.CLAIM, "resourceClaimTemplateName": template["metadata"]["name"]}]
    request = template["spec"]["spec"]["devices"]["requests"][0]
    assert request["exactly"] == {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": gpus}
    assert template["metadata"]["namespace"] == "ml"
    assert dra.claimed_gpus(spec, _by_name(templates)) == gpus  # what Kueue charges the queue, per pod
    assert job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": str(gpus)}


def test_a_template_the_schema_refuses_is_caught():
    _, job = kubernetes.manifests("x", "ml", 1, TAINTS, LABELS, 900)
    (template,) = dra.claiming(job, "gpu.nvidia.com")[1]
    template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["cont"] = 1
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(template, K8S, strict=True)


@pytest.mark.parametrize("jobset", [False, True])
def test_every_gang_pod_claims_its_gpus_and_keeps_its_efa_devices(jobset):
    _, _, workload = kubernetes_multinode.manifests(
        "gpuready-nccl-0123456789", "ml", nodes=2, gpus=4, taints=TAINTS, node_labels=LABELS, timeout=900,
        transport="efa", efa_interfaces=4, jobset=jobset)
    claimed, templates = dra.claiming(workload, "gpu.nvidia.com")
    specs = list(dra.pod_specs(claimed))
    assert specs and len(templates) == 1
    for spec in specs:
        (container,) = spec["containers"]
        assert container["resources"]["limits"] == {"vpc.amazonaws.com/efa": "4"}
        assert dra.claimed_gpus(spec, _by_name(templates)) == 4
    if not jobset:
        kubernetes_validate.validate(claimed, K8S, strict=True)


def test_the_smoke_creates_the_template_before_the_job_and_deletes_it_with_it(kube, fake_smi):
    fake_smi(H100, row=0)
    server, outputs = kube(logs=_report_logs())
    progress = io.StringIO()
    result = kubernetes.run(outputs, timeout=30, progress=progress)
    assert result.verdict == "pass", result.checks
    name = result.job["name"]
    template = dra.template_name(name, 1)
    assert server.created == [("ConfigMap", name), ("ResourceClaimTemplate", template), ("Job", name)]
    assert sorted(server.deleted) == [("ConfigMap", name), ("Job", name), ("ResourceClaimTemplate", template)]
    pod = server.bodies[("Job", name)]["spec"]["template"]["spec"]
    assert pod["resourceClaims"] == [{"name": dra.CLAIM, "resourceClaimTemplateName": template}]
    assert server.bodies[("ResourceClaimTemplate", template)]["spec"]["spec"]["devices"]["requests"][0][
        "exactly"]["deviceClassName"] == "gpu.nvidia.com"


def test_without_dra_the_smoke_asks_for_gpus_as_before(kube, fake_smi):
    fake_smi(H100, row=0)
    server, outputs = kube(logs=_report_logs())
    outputs.pop("gpuDeviceClass")
    result = kubernetes.run(outputs, timeout=30, progress=io.StringIO())
    name = result.job["name"]
    assert server.created == [("ConfigMap", name), ("Job", name)]
    limits = server.bodies[("Job", name)]["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits == {"nvidia.com/gpu": "1"}


def test_an_interrupted_smoke_still_deletes_its_template(kube):
    server, outputs = kube(phases=("Pending",) * 50)
    result = kubernetes.run(outputs, timeout=1.5, explain_after=5, progress=io.StringIO())
    assert result.verdict != "pass"
    templates = [n for kind, n in server.created if kind == "ResourceClaimTemplate"]
    assert templates and ("ResourceClaimTemplate", templates[0]) in server.deleted


def test_the_gang_claims_its_gpus_and_leaves_no_template(kube, fake_smi):
    logs = []
    for i in range(2):
        fake_smi(H100, uuid=f"GPU-{i}aa1c0de-0000-4000-8000-00000000000{i}")
        logs.append(f"node {i}\n{core.report_line(core.probe(gpus_expected=1))}\n")
    logs[0] += nccl.REPORT_MARKER + json.dumps({
        "version": 1, "nodes": 2, "world_size": 2, "hosts": ["a", "b"], "correct": True, "bytes": 1 << 30,
        "algbw_gbps": 1.0, "busbw_gbps": 1.0, "transport": "socket", "nccl_version": "2.21.5", "error": None}) + "\n"
    server, outputs = kube(logs=logs, hosts=["ip-10-0-1-1", "ip-10-0-1-2"])
    result = kubernetes_multinode.run(outputs, nodes=2, gpus=1, timeout=30, progress=io.StringIO())
    name = result.job["name"]
    template = dra.template_name(name, 1)
    assert server.created == [("ConfigMap", name), ("Service", name), ("ResourceClaimTemplate", template),
                              ("Job", name)]
    assert ("ResourceClaimTemplate", template) in server.deleted


def _slice(node, gpus, generation=1, driver="gpu.nvidia.com"):
    """A ResourceSlice as the DRA driver's kubelet plugin publishes a node's GPUs (one pool per node)."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-{driver}-{generation}"},
            "spec": {"driver": driver, "nodeName": node,
                     "pool": {"name": node, "generation": generation, "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{i}", "attributes": {
                         "type": {"string": "gpu"}, "productName": {"string": "NVIDIA H100 80GB HBM3"}}}
                         for i in range(gpus)]}}


def test_gpus_per_node_are_read_from_the_newest_resource_slices():
    slices = [_slice("a", 8, generation=1), _slice("a", 4, generation=2), _slice("b", 8),
              _slice("b", 2, driver="compute-domain.nvidia.com")]
    for item in slices:
        kubernetes_validate.validate(item, K8S, strict=True)
    assert dra.node_gpus(slices) == {"a": 4, "b": 8}


def _node(name, gpus="0"):
    labels = {"kubernetes.io/hostname": name, "node.kubernetes.io/instance-type": "p5.48xlarge",
              "nvidia.com/gpu.present": "true"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels, "resourceVersion": "1"},
            "spec": {"taints": [dict(EKS["gpuTaint"])]}, "status": {"allocatable": {"cpu": "48",
                                                                                   "nvidia.com/gpu": gpus}}}


def test_the_sweep_reads_gpus_from_resource_slices_claims_them_and_deletes_the_templates(kube, fake_smi):
    fake_smi(H100, row=0)
    healthy = _report_logs()
    stage = {"nodes": [_node("gpu-a"), _node("gpu-b"), _node("gpu-c")],
             "resourceslices": [_slice("gpu-a", 8), _slice("gpu-b", 4)]}
    server, outputs = kube(stages=[stage], node_logs={"gpu-a": healthy, "gpu-b": healthy})
    result = sweep_kubernetes.run(outputs, timeout=30, progress=io.StringIO())
    rows = {r.node: r for r in result.rows}
    assert rows["gpu-c"].verdict == "fail" and "no ResourceSlice of gpu.nvidia.com" in rows["gpu-c"].detail
    run = result.job["name"]
    templates = sorted(n for kind, n in server.created if kind == "ResourceClaimTemplate")
    assert templates == sorted([dra.template_name(run, 8), dra.template_name(run, 4)])
    jobs = [server.bodies[("Job", n)] for kind, n in server.created if kind == "Job"]
    claimed = {j["metadata"]["annotations"]["gpuready.io/node"]: j["spec"]["template"]["spec"]["resourceClaims"][0][
        "resourceClaimTemplateName"] for j in jobs}
    assert claimed == {"gpu-a": dra.template_name(run, 8), "gpu-b": dra.template_name(run, 4)}
    assert all(("ResourceClaimTemplate", t) in server.deleted for t in templates)


def _failed_scheduling(message):
    """A FailedScheduling event of the default scheduler, shaped as those in tests/data/k8s-events."""
    return {"apiVersion": "v1", "kind": "Event", "reason": "FailedScheduling", "message": message, "type": "Warning",
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": "gpuready-smoke-x"},
            "source": {"component": "default-scheduler"}, "count": 1,
            "firstTimestamp": "2026-11-22T10:00:01Z", "lastTimestamp": "2026-11-22T10:00:02Z"}


def test_a_pending_claim_is_explained_by_the_claims_not_the_device_plugin():
    from gpuready.smoke import scaler

    node = _node("gpu-a")  # a DRA node advertises no nvidia.com/gpu
    plugin = scaler.Context(node_labels=LABELS)
    claims = scaler.Context(node_labels=LABELS, device_class="gpu.nvidia.com")
    event = _failed_scheduling("0/3 nodes are available: 1 cannot allocate all claims, 2 node(s) didn't match Pod's "
                               "node affinity/selector.")
    assert "device-plugin" in [f.kind for f in scaler.scheduler([event], [node], plugin)]
    found = {f.kind: f for f in scaler.scheduler([event], [node], claims)}
    assert set(found) == {"scheduler", "dra-claims"}
    assert "kubectl get resourceslices" in found["dra-claims"].summary
    assert found["dra-claims"].quote.endswith("didn't match Pod's node affinity/selector.")
    other = _failed_scheduling("0/3 nodes are available: 3 Insufficient cpu.")
    assert [f.kind for f in scaler.scheduler([other], [node], claims)] == ["scheduler"]


def test_the_claim_is_the_one_the_drivers_own_example_shows_the_scheduler_making():
    """The driver's demo (extended-resources/gpu-full.yaml) shows the ResourceClaim the scheduler makes for one
    whole GPU of gpu.nvidia.com; the smoke's template claims exactly that."""
    import yaml

    from tests.conftest import DATA

    text = (DATA / "dra-driver-nvidia-gpu-0.4.1-demo" / "extended-resources" / "gpu-full.yaml").read_text()
    commented = text.split("# apiVersion: resource.k8s.io/v1", 1)[1].split("# status:", 1)[0]
    shown = yaml.safe_load("apiVersion: resource.k8s.io/v1" + "\n".join(
        line.removeprefix("# ").split("  #")[0] for line in commented.splitlines()))
    _, job = kubernetes.manifests("x", "ml", 1, TAINTS, LABELS, 900)
    (template,) = dra.claiming(job, "gpu.nvidia.com")[1]
    (theirs,), (ours,) = shown["spec"]["devices"]["requests"], template["spec"]["spec"]["devices"]["requests"]
    assert ours["exactly"] == theirs["exactly"]
    assert shown["kind"] == "ResourceClaim" and shown["apiVersion"] == template["apiVersion"]
