"""The Kubernetes target on several nodes: its objects validate against the Kubernetes schemas (kubernetes-validate,
strict) and the JobSet CRD (kubernetes-sigs/jobset v0.12.0); its run, verdicts and cleanup are tested against the
fake API server (fake_kube.py), pods placed where each scenario says."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

from gpuready_components import platforms
from gpuready_components.k8s_gpu.scheduling import schedulable
from gpuready.errors import UserError
from gpuready.probe import core, nccl
from gpuready.smoke import kubernetes_multinode as target
from gpuready.smoke.batch_probe import probe_files
from tests.gpuready.conftest import H100

from .fault_proxy import KUBE_ERRORS, FaultProxy, kube_action

PLATFORMS = {p.name: p.node for p in platforms.every(kubernetes=True)}

DATA = Path(__file__).resolve().parents[2] / "data"
EKS = {"platform": "eks", "gpuTaint": {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
       "gpuNodeLabels": {"nvidia.com/gpu.present": "true"}, "maxGpusPerNode": 1, "maxGpus": 2}
VERSIONS = ("1.30.0", "1.33.0", "1.37.0")


def _objects(jobset=False, **extra):
    args = {"nodes": 2, "gpus": 8, "taints": [EKS["gpuTaint"]], "node_labels": EKS["gpuNodeLabels"],
            "timeout": 900, **extra}
    return target.manifests("gpuready-nccl-0123456789", "ml", jobset=jobset, **args)


def _strict(schema):
    """The CRD schema refusing unknown fields: the API server would drop them silently (pruning), so a misspelled
    field would never reach the controller."""
    if isinstance(schema, dict):
        if schema.get("type") == "object" and "properties" in schema and "additionalProperties" not in schema \
                and not schema.get("x-kubernetes-preserve-unknown-fields"):
            schema = {**schema, "additionalProperties": False}
        return {k: _strict(v) for k, v in schema.items()}
    return [_strict(v) for v in schema] if isinstance(schema, list) else schema


def _jobset_crd():
    return yaml.load((DATA / "jobset" / "jobset.x-k8s.io_jobsets.yaml").read_text(), Loader=yaml.CSafeLoader)


def _jobset_schema():
    (version,) = [v for v in _jobset_crd()["spec"]["versions"] if v.get("storage")]
    assert version["name"] == target.JOBSET[1]
    return _strict(version["schema"]["openAPIV3Schema"])


@pytest.mark.parametrize("version", VERSIONS)
def test_the_configmap_service_and_indexed_job_validate_strictly(version):
    for obj in _objects():
        kubernetes_validate.validate(obj, version, strict=True)
    for obj in _objects(transport="efa", efa_interfaces=32):
        kubernetes_validate.validate(obj, version, strict=True)


def test_the_jobset_validates_against_its_crd_and_a_misspelled_field_does_not():
    config_map, service, job_set = _objects(jobset=True, transport="ib")
    schema = _jobset_schema()
    jsonschema.validate(job_set, schema)
    for obj in (config_map, service):
        kubernetes_validate.validate(obj, VERSIONS[-1], strict=True)
    job_set["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["nodeSelectors"] = {}
    with pytest.raises(jsonschema.ValidationError, match="nodeSelectors"):
        jsonschema.validate(job_set, schema)


def test_a_gang_is_one_pod_per_node_with_every_gpu_and_a_memory_backed_shm():
    config_map, service, job = _objects()
    spec = job["spec"]
    assert (spec["completionMode"], spec["completions"], spec["parallelism"], spec["backoffLimit"]) == \
        ("Indexed", 2, 2, 0)
    assert spec["activeDeadlineSeconds"] == 900 and spec["ttlSecondsAfterFinished"] == target.TTL_SECONDS
    pod = spec["template"]["spec"]
    (term,) = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()
    assert service["spec"]["selector"].items() <= spec["template"]["metadata"]["labels"].items()
    assert service["spec"]["clusterIP"] == "None" and service["spec"]["publishNotReadyAddresses"] is True
    assert pod["subdomain"] == service["metadata"]["name"]
    (container,) = pod["containers"]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "8"}
    assert {"name": "NCCL_DEBUG", "value": "INFO"} in container["env"]
    shm = [m for m in container["volumeMounts"] if m["mountPath"] == "/dev/shm"][0]
    assert {"name": shm["name"], "emptyDir": {"medium": "Memory"}} in pod["volumes"]
    assert container["command"][:3] == ["python3", "/gpuready/nccl.py", "launch"]
    argv = container["command"][3:]
    assert argv[argv.index("--nodes") + 1] == "2" and argv[argv.index("--gpus-per-node") + 1] == "8"
    assert argv[argv.index("--transport") + 1] == "socket"
    # the launcher gives up, and says why, before the pods' 900 s deadline, waiting at most 600 s for a node
    assert (argv[argv.index("--timeout") + 1], argv[argv.index("--rendezvous-timeout") + 1]) == ("810", "600")
    # pod 0 of an Indexed Job is named <job>-0 and reached through the Service named as its subdomain
    assert argv[argv.index("--main-address") + 1] == \
        f"{job['metadata']['name']}-0.{service['metadata']['name']}.ml.svc"


def test_the_configmap_carries_the_probe_and_the_launcher_unchanged():
    config_map, _, job = _objects()
    assert {k: v.encode() for k, v in config_map["data"].items()} == probe_files()
    mount = job["spec"]["template"]["spec"]["containers"][0]["volumeMounts"][0]
    assert mount["mountPath"] == "/gpuready" and "nccl.py" in config_map["data"] and "core.py" in config_map["data"]
    assert len(json.dumps(config_map).encode()) <= 2 ** 20 / 2  # Kubernetes stores at most 1 MiB in a ConfigMap


def test_the_jobset_main_address_is_the_hostname_jobset_documents():
    _, service, job_set = _objects(jobset=True)
    network = _jobset_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
        "properties"]["network"]["properties"]
    documented = re.search(r"<jobSet\.name>-<spec\.replicatedJob\.name>-<job-index>-<pod-index>\.<subdomain>",
                           network["enableDNSHostnames"]["description"])
    assert documented
    (replicated,) = job_set["spec"]["replicatedJobs"]
    assert job_set["spec"]["network"]["subdomain"] == service["metadata"]["name"]
    host = f"{job_set['metadata']['name']}-{replicated['name']}-0-0.{service['metadata']['name']}"
    argv = replicated["template"]["spec"]["template"]["spec"]["containers"][0]["command"]
    assert argv[argv.index("--main-address") + 1] == f"{host}.ml.svc"


def test_an_efa_pool_asks_for_every_efa_interface_and_ipc_lock():
    _, _, job = _objects(transport="efa", efa_interfaces=32)
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"}
    assert container["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"]
    assert container["command"][container["command"].index("--transport") + 1] == "efa"


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_gang_pods_land_on_each_platforms_gpu_nodes(platform):
    facts = PLATFORMS[platform]
    taint = {"key": facts.taint.key, "value": facts.taint.value, "effect": facts.taint.effect}
    _, _, job = target.manifests("x", "default", nodes=2, gpus=1, taints=[taint], node_labels=dict(facts.boot_labels),
                                 timeout=60)
    assert schedulable(job["spec"]["template"]["spec"], dict(facts.boot_labels), [facts.taint])


@pytest.fixture
def nccl_checks(monkeypatch):
    """What the target asks of the real nccl.checks, recorded."""
    asked, real = [], nccl.checks

    def recorded(report, *, nodes, expected_transport, instance_type=None):
        asked.append({"report": report, "nodes": nodes, "expected_transport": expected_transport})
        return real(report, nodes=nodes, expected_transport=expected_transport, instance_type=instance_type)
    monkeypatch.setattr(nccl, "checks", recorded)
    return asked


NCCL_REPORT = {"version": 1, "nodes": 2, "world_size": 2, "hosts": ["a", "b"], "correct": True, "bytes": 1 << 30,
               "algbw_gbps": 1.0, "busbw_gbps": 1.0, "transport": "socket", "nccl_version": "2.21.5", "error": None}


def _gang_logs(fake_smi, nodes=2, report=NCCL_REPORT):
    """What each node prints: its probe report (the H100 capture, whose serials and UUIDs are zeroed, given a UUID
    of its own: each node its own GPU), and on node 0 the NCCL report."""
    logs = []
    for i in range(nodes):
        fake_smi(H100, uuid=f"GPU-{i}aa1c0de-0000-4000-8000-00000000000{i}")
        logs.append(f"node {i}\n{core.report_line(core.probe(gpus_expected=1))}\n")
    logs[0] += f"{nccl.REPORT_MARKER}{json.dumps(report)}\n"
    return logs


def _verdicts(result):
    return {c.name: c.verdict for c in result.checks}


def test_two_pods_on_two_nodes_pass_and_everything_is_deleted(kube, fake_smi, nccl_checks):
    server, outputs = kube(logs=_gang_logs(fake_smi), hosts=["ip-10-0-1-1", "ip-10-0-1-2"])
    progress = io.StringIO()
    result = target.run(outputs, nodes=2, timeout=30, progress=progress)
    assert result.verdict == "pass", result.checks
    name = result.job["name"]
    assert server.created == [("ConfigMap", name), ("Service", name), ("Job", name)]
    assert sorted(server.deleted) == [("ConfigMap", name), ("Job", name), ("Service", name)]
    verdicts = _verdicts(result)
    assert [verdicts[k] for k in ("pool_size", "pods_ran", "distinct_hosts", "node0.probe_report",
                                  "node1.probe_report", "nccl_hosts", "nccl_all_reduce_correct", "nccl_transport",
                                  "nccl_bus_bandwidth")] == ["pass"] * 9
    assert any(k.startswith("node1.gpu0.") for k in verdicts)
    assert [(n["index"], n["node"], n["phase"]) for n in result.job["nodes"]] == \
        [(0, "ip-10-0-1-1", "Succeeded"), (1, "ip-10-0-1-2", "Succeeded")]
    assert nccl_checks == [{"report": NCCL_REPORT, "nodes": 2, "expected_transport": "socket"}]
    assert "(node1) Succeeded on ip-10-0-1-2" in progress.getvalue()


def test_two_pods_on_one_node_fail_distinct_hosts(kube, fake_smi, nccl_checks):
    server, outputs = kube(logs=_gang_logs(fake_smi), hosts=["ip-10-0-1-1", "ip-10-0-1-1"])
    result = target.run(outputs, nodes=2, timeout=30, progress=io.StringIO())
    check = [c for c in result.checks if c.name == "distinct_hosts"][0]
    assert check.verdict == "fail" and result.verdict == "fail"
    assert "node0 and node1 ran on one node, ip-10-0-1-1" in check.detail and "anti-affinity" in check.detail


def test_the_same_gpu_seen_by_two_nodes_fails_distinct_hosts(kube, fake_smi, nccl_checks):
    fake_smi(H100, row=0)
    line = core.report_line(core.probe(gpus_expected=1))
    server, outputs = kube(logs=[line, line], hosts=["a", "b"])
    result = target.run(outputs, nodes=2, timeout=30, progress=io.StringIO())
    check = [c for c in result.checks if c.name == "distinct_hosts"][0]
    assert check.verdict == "fail" and "reported by more than one node" in check.detail


def test_a_failed_pod_fails_the_gang_and_is_named(kube, fake_smi, nccl_checks):
    logs = _gang_logs(fake_smi)
    server, outputs = kube(logs=[logs[0], "Traceback: NCCL error\n"], pod_phases={1: ("Pending", "Failed")})
    result = target.run(outputs, nodes=2, timeout=30, progress=io.StringIO())
    verdicts = _verdicts(result)
    assert verdicts["pods_ran"] == "fail" and verdicts["node1.probe_report"] == "fail"
    assert "node1 Failed" in [c for c in result.checks if c.name == "pods_ran"][0].detail
    assert len(server.deleted) == 3


def test_a_pending_pod_is_explained_and_all_is_deleted_at_timeout(kube, nccl_checks):
    events = [{"metadata": {"name": "e1", "namespace": "default"},
               "involvedObject": {"kind": "Pod", "name": "p"}, "reason": "FailedScheduling", "type": "Warning",
               "message": "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) had untolerated "
                          "taint {CriticalAddonsOnly: true}."}]
    server, outputs = kube(phases=("Pending",), events=events)
    result = target.run(outputs, nodes=2, timeout=1.5, explain_after=0.5, progress=io.StringIO())
    assert _verdicts(result)["job_finished"] == "fail" and "deleted" in \
        [c for c in result.checks if c.name == "job_finished"][0].detail
    assert "Insufficient nvidia.com/gpu" in "\n".join(result.diagnosis)
    assert server.objects == {} and len(server.deleted) == 3
    assert nccl_checks == []  # nothing ran: no NCCL verdict


@pytest.mark.parametrize("platform, key", [("eks", "gpuready:maxSize"), ("gke", "gpuready:maxNodes"),
                                           ("aks", "gpuready:maxCount")])
def test_a_pool_too_small_is_refused_before_anything_is_created(kube, platform, key):
    server, outputs = kube()
    outputs = {**outputs, "platform": platform, "maxGpusPerNode": 8, "maxGpus": 16}
    result = target.run(outputs, nodes=3, timeout=30, progress=io.StringIO())
    (check,) = result.checks
    assert (check.name, check.verdict) == ("pool_size", "fail") and result.verdict == "fail"
    assert f"pulumi config set {key} 3" in check.detail and "16 GPUs" in check.detail
    assert server.created == []
    result = target.run(outputs, nodes=2, gpus=16, timeout=30, progress=io.StringIO())
    assert "--gpus 8" in result.checks[0].detail and server.created == []


def test_jobset_is_used_when_the_cluster_serves_it(kube, fake_smi, nccl_checks):
    server, outputs = kube(logs=_gang_logs(fake_smi), jobset=True)
    result = target.run(outputs, nodes=2, timeout=30, progress=io.StringIO())
    name = result.job["name"]
    assert server.created == [("ConfigMap", name), ("Service", name), ("JobSet", name)]
    jsonschema.validate(server.bodies[("JobSet", name)], _jobset_schema())
    assert result.verdict == "pass", result.checks
    assert sorted(server.deleted) == [("ConfigMap", name), ("JobSet", name), ("Service", name)]
    assert result.job["nodes"][0]["pod"].startswith(f"{name}-node-0-0")


def test_a_forbidden_discovery_means_an_indexed_job(kube, fake_smi, nccl_checks):
    server, outputs = kube(logs=_gang_logs(fake_smi), jobset=True, forbidden=("/apis/jobset.x-k8s.io",))
    result = target.run(outputs, nodes=2, timeout=30, progress=io.StringIO())
    assert [kind for kind, _ in server.created] == ["ConfigMap", "Service", "Job"] and result.verdict == "pass"


def test_an_efa_stack_expects_efa_and_its_pods_ask_for_every_interface(kube, fake_smi, nccl_checks):
    server, outputs = kube(logs=_gang_logs(fake_smi))
    result = target.run({**outputs, "gpuFabric": "efa", "gpuEfaInterfaces": 4}, nodes=2, timeout=30,
                        progress=io.StringIO())
    assert nccl_checks[0]["expected_transport"] == "efa" and result.job["transport"] == "efa"
    (container,) = server.bodies[("Job", result.job["name"])]["spec"]["template"]["spec"]["containers"]
    assert container["resources"]["limits"]["vpc.amazonaws.com/efa"] == "4"


def test_ctrl_c_while_watching_deletes_the_job_the_service_and_the_configmap(kube, nccl_checks):
    server, outputs = kube(phases=("Pending", "Running"))
    proxy = FaultProxy(server.server.server_address[1], classify=kube_action, errors=KUBE_ERRORS)
    proxy.plan = {"watch-pods": ["interrupt"]}
    try:
        result = target.run({**outputs, "kubeconfig": outputs["kubeconfig"].replace(server.url, proxy.url)},
                            nodes=2, timeout=30, progress=io.StringIO())
    finally:
        proxy.close()
    assert "interrupted" in [c for c in result.checks if c.name == "job_finished"][0].detail
    assert server.objects == {} and {kind for kind, _ in server.deleted} == {"Job", "Service", "ConfigMap"}


def test_one_node_is_not_a_gang(kube):
    server, outputs = kube()
    with pytest.raises(UserError, match="2 nodes or more"):
        target.run(outputs, nodes=1, timeout=30, progress=io.StringIO())


def test_run_on_stack_takes_a_kubernetes_stack_with_several_nodes_here(kube, fake_smi, nccl_checks, tmp_path):
    from gpuready.smoke import run_on_stack

    server, outputs = kube(logs=_gang_logs(fake_smi))
    (tmp_path / "outputs.json").write_text(json.dumps(outputs))
    result = run_on_stack(stack=None, outputs_file=tmp_path / "outputs.json", gpus=None, timeout=30, keep=False,
                          nodes=2)
    assert result.verdict == "pass" and [n["index"] for n in result.job["nodes"]] == [0, 1]
    assert [kind for kind, _ in server.created] == ["ConfigMap", "Service", "Job"]


CD = "nvidia.com/gpu.clique"
"""``gpuComputeDomains``: a stack whose multi-node jobs get a ComputeDomain each (install dra, computeDomains), its
nodes' NVLink domain named by this label."""


def _domain_schema():
    crd = yaml.safe_load((DATA / "helm-charts" / "dra-driver-nvidia-gpu-0.4.1" / "crds"
                          / "resource.nvidia.com_computedomains.yaml").read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v.get("storage")]
    return _strict(version["schema"]["openAPIV3Schema"])


@pytest.mark.parametrize("jobset", [False, True])
def test_a_compute_domain_stack_gives_the_gang_one_domain_created_first_and_deleted_with_it(kube, fake_smi,
                                                                                            nccl_checks, jobset):
    server, outputs = kube(logs=_gang_logs(fake_smi, report={**NCCL_REPORT, "mnnvl_ranks": 2}), jobset=jobset)
    result = target.run({**outputs, "gpuComputeDomains": CD}, nodes=2, timeout=30, progress=io.StringIO())
    assert result.verdict == "pass", result.checks
    assert _verdicts(result)["nccl_nvlink"] == "pass" and "nccl_nvlink_bandwidth" in _verdicts(result)
    name, kind = result.job["name"], ("JobSet" if jobset else "Job")
    assert result.job["computeDomain"] == name
    assert server.created == [("ConfigMap", name), ("Service", name), ("ComputeDomain", name), (kind, name)]
    assert sorted(server.deleted) == sorted([("ConfigMap", name), ("Service", name), ("ComputeDomain", name),
                                             (kind, name)])
    assert server.objects == {}
    domain = server.bodies[("ComputeDomain", name)]
    jsonschema.validate({k: v for k, v in domain.items() if k != "metadata"} | {"metadata": {}}, _domain_schema())
    assert domain["spec"] == {"numNodes": 2, "channel": {"resourceClaimTemplate": {"name": f"{name}-channel"}}}
    body = server.bodies[(kind, name)]
    template = body["spec"]["replicatedJobs"][0]["template"]["spec"]["template"] if jobset else \
        body["spec"]["template"]
    pod = template["spec"]
    assert pod["resourceClaims"] == [{"name": "compute-domain-channel", "resourceClaimTemplateName":
                                      f"{name}-channel"}]
    assert pod["containers"][0]["resources"]["claims"] == [{"name": "compute-domain-channel"}]
    (term,) = pod["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "nvidia.com/gpu.clique"
    assert term["labelSelector"]["matchLabels"].items() <= template["metadata"]["labels"].items()
    if not jobset:
        kubernetes_validate.validate(body, VERSIONS[-1], strict=True)


def test_a_compute_domain_gang_whose_all_reduce_left_nvlink_fails(kube, fake_smi, nccl_checks):
    server, outputs = kube(logs=_gang_logs(fake_smi, report={**NCCL_REPORT, "mnnvl_ranks": 0}))
    result = target.run({**outputs, "gpuComputeDomains": CD}, nodes=2, timeout=30, progress=io.StringIO())
    check = [c for c in result.checks if c.name == "nccl_nvlink"][0]
    assert check.verdict == "fail" and result.verdict == "fail" and "ComputeDomain channel" in check.detail
    assert server.objects == {}


def test_a_stack_without_compute_domains_makes_none(kube, fake_smi, nccl_checks):
    server, outputs = kube(logs=_gang_logs(fake_smi))
    result = target.run(outputs, nodes=2, timeout=30, progress=io.StringIO())
    assert "nccl_nvlink" not in _verdicts(result)
    assert "computeDomain" not in result.job and "ComputeDomain" not in {k for k, _ in server.created}
    assert "resourceClaims" not in server.bodies[("Job", result.job["name"])]["spec"]["template"]["spec"]


def test_the_compute_domain_goes_at_timeout_and_on_failure(kube, fake_smi, nccl_checks):
    server, outputs = kube(phases=("Pending",))
    result = target.run({**outputs, "gpuComputeDomains": CD}, nodes=2, timeout=1.5, explain_after=0.5,
                        progress=io.StringIO())
    assert _verdicts(result)["job_finished"] == "fail"
    assert server.objects == {} and ("ComputeDomain", result.job["name"]) in server.deleted
    logs = _gang_logs(fake_smi)
    server, outputs = kube(logs=[logs[0], "Traceback: NCCL error\n"], pod_phases={1: ("Pending", "Failed")})
    result = target.run({**outputs, "gpuComputeDomains": CD}, nodes=2, timeout=30, progress=io.StringIO())
    assert result.verdict == "fail" and server.objects == {}
    assert ("ComputeDomain", result.job["name"]) in server.deleted


def test_ctrl_c_deletes_the_compute_domain_too(kube, nccl_checks):
    server, outputs = kube(phases=("Pending", "Running"))
    proxy = FaultProxy(server.server.server_address[1], classify=kube_action, errors=KUBE_ERRORS)
    proxy.plan = {"watch-pods": ["interrupt"]}
    try:
        result = target.run({**outputs, "gpuComputeDomains": CD,
                             "kubeconfig": outputs["kubeconfig"].replace(server.url, proxy.url)},
                            nodes=2, timeout=30, progress=io.StringIO())
    finally:
        proxy.close()
    assert "interrupted" in [c for c in result.checks if c.name == "job_finished"][0].detail
    assert server.objects == {} and {kind for kind, _ in server.deleted} == \
        {"Job", "Service", "ConfigMap", "ComputeDomain"}


def test_on_gke_the_gang_shares_one_reservation_sub_block(kube, fake_smi, nccl_checks):
    """GKE labels each node's sub-block (an NVL72 domain on A4X) itself: the stack's output names that label."""
    server, outputs = kube(logs=_gang_logs(fake_smi, report={**NCCL_REPORT, "mnnvl_ranks": 2}))
    result = target.run({**outputs, "gpuComputeDomains": "cloud.google.com/gce-topology-subblock"}, nodes=2,
                        timeout=30, progress=io.StringIO())
    pod = server.bodies[("Job", result.job["name"])]["spec"]["template"]["spec"]
    (term,) = pod["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "cloud.google.com/gce-topology-subblock" and result.verdict == "pass"


def test_a_cluster_without_compute_domains_is_told_what_to_install():
    """The ComputeDomain API answering 404 (no CRD: the DRA driver, or its ComputeDomains, not installed)."""
    import kubernetes

    from gpuready.smoke import compute_domains

    class Custom:
        def create_namespaced_custom_object(self, *args, **kw):
            raise kubernetes.client.exceptions.ApiException(status=404, reason="Not Found")

    class Calls:
        def create(self, method, namespace, body, deadline):
            method(namespace, body)

    domain = {"metadata": {"name": "x"}}
    with pytest.raises(UserError, match=r"serves no ComputeDomains \(resource.nvidia.com/v1beta1\).*"
                                        r"gpuready:computeDomains: true"):
        compute_domains.create(Custom(), Calls(), "ml", domain, 0.0, kubernetes.client)
    Custom.create_namespaced_custom_object = lambda *a, **k: (_ for _ in ()).throw(
        kubernetes.client.exceptions.ApiException(status=403))
    with pytest.raises(kubernetes.client.exceptions.ApiException):
        compute_domains.create(Custom(), Calls(), "ml", domain, 0.0, kubernetes.client)
