"""The Kubernetes target: its Job validates against the Kubernetes schemas; its wait, logs, cleanup and diagnosis are
tested against a small local server that answers the API calls as the real API server does."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import kubernetes_validate
import pytest

from gpuready_components import platforms
from gpuready_components.k8s_gpu.scheduling import schedulable
from gpuready.probe import core
from gpuready.smoke import kubernetes as target
from gpuready.smoke.result import render_text
from tests.gpuready.conftest import H100

PLATFORMS = {p.name: p.node for p in platforms.every(kubernetes=True)}


EKS = {"gpuTaint": {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
       "gpuNodeLabels": {"nvidia.com/gpu.present": "true"}, "platform": "eks"}


@pytest.mark.parametrize("version", ["1.30.0", "1.33.0", "1.37.0"])
def test_manifests_validate_strictly(version):
    config_map, job = target.manifests("gpuready-smoke-abc", "default", 2, [EKS["gpuTaint"]], EKS["gpuNodeLabels"],
                                       900)
    kubernetes_validate.validate(config_map, version, strict=True)
    kubernetes_validate.validate(job, version, strict=True)
    assert job["spec"]["ttlSecondsAfterFinished"] == target.TTL_SECONDS and job["spec"]["backoffLimit"] == 0
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "2"}


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_job_pod_lands_on_each_platforms_gpu_nodes(platform):
    facts = PLATFORMS[platform]
    taint = {"key": facts.taint.key, "value": facts.taint.value, "effect": facts.taint.effect}
    _, job = target.manifests("x", "default", 1, [taint], dict(facts.boot_labels), 60)
    assert schedulable(job["spec"]["template"]["spec"], dict(facts.boot_labels), [facts.taint])


def test_job_tolerates_every_taint_the_stack_reports_aks_spot_included(render):
    from gpuready_components.aks_gpu import AksGpuCluster, AksGpuClusterArgs, ClusterArgs, GpuAgentPoolArgs
    from gpuready_components.k8s_gpu.facts import Taint
    from tests.conftest import render_component

    _, aks = render_component(render, lambda: AksGpuCluster("ml", AksGpuClusterArgs(
        resource_group_name="rg", location="eastus", cluster=ClusterArgs(),
        node_pool=GpuAgentPoolArgs(vm_size="Standard_NC4as_T4_v3", spot=True))))
    _, job = target.manifests("x", "default", 1, aks.gpu_node_taints, aks.gpu_node_labels, 60)
    taints = [Taint(**t) for t in aks.gpu_node_taints]
    assert len(taints) == 2
    assert schedulable(job["spec"]["template"]["spec"], {**aks.gpu_node_labels,
                                                         "kubernetes.azure.com/scalesetpriority": "spot"}, taints)


def test_the_configmap_probe_runs_as_the_container_runs_it(tmp_path, fake_smi):
    fake_smi(H100, row=0)
    config_map, job = target.manifests("x", "default", 1, [], {}, 60)
    (tmp_path / "probe.py").write_text(config_map["data"]["probe.py"])
    command = job["spec"]["template"]["spec"]["containers"][0]["command"]
    done = subprocess.run([sys.executable, str(tmp_path / "probe.py"), *command[2:]], capture_output=True, text=True)
    assert core.find_report(done.stdout)["verdict"] == "pass"


def test_a_stack_that_shares_gpus_tells_the_probe(tmp_path, fake_smi):
    """Time-slicing: another pod's memory on the same GPU is expected, so the probe warns instead of failing."""
    fake_smi(H100, row=0, **{"memory.used": "30000 MiB"})
    config_map, job = target.manifests("x", "default", 1, [], {}, 60, sharing="time-slicing")
    for name, text in config_map["data"].items():
        (tmp_path / name).write_text(text)
    command = job["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[-2:] == ["--sharing", "time-slicing"]
    done = subprocess.run([sys.executable, str(tmp_path / "probe.py"), *command[2:]], capture_output=True, text=True)
    held = {c["name"]: c for c in core.find_report(done.stdout)["checks"]}["gpu0.memory_in_use"]
    assert held["verdict"] == "warn" and "time-slicing" in held["detail"]
    _, alone = target.manifests("x", "default", 1, [], {}, 60)
    assert "--sharing" not in alone["spec"]["template"]["spec"]["containers"][0]["command"]


CONFIGMAP_LIMIT = 2 ** 20
"""Kubernetes stores at most 1 MiB of data in a ConfigMap."""


def test_the_configmap_holds_the_whole_probe_file_in_half_its_size_limit():
    config_map, _ = target.manifests("gpuready-smoke-0123456789ab", "default", 8, [EKS["gpuTaint"]],
                                     EKS["gpuNodeLabels"], 1800, full=True)
    with open(core.__file__) as f:
        assert config_map["data"]["probe.py"] == f.read()  # unchanged: docstrings and all
    assert len(json.dumps(config_map).encode()) <= CONFIGMAP_LIMIT / 2


def test_the_configmaps_probe_reaches_its_sustained_tier_under_the_name_it_is_given(tmp_path):
    """The ConfigMap names the probe ``probe.py``, not ``core.py``: its ``--full`` tier (``burn.py`` beside it) must
    load all the same and reach the GPU load (a stand-in ``torch`` stops it there: the loop itself needs CUDA)."""
    config_map, _ = target.manifests("x", "default", 1, [], {}, 60, full=True)
    for name, text in config_map["data"].items():
        (tmp_path / name).write_text(text)
    (tmp_path / "torch.py").write_text("def __getattr__(name):\n    raise SystemExit('the GPU load started')\n")
    done = subprocess.run([sys.executable, "-c", "import probe; print(probe._burn(1, 1, None, None))"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert "the GPU load started" in done.stderr, done.stdout + done.stderr


def _report_logs():
    """What the probe prints on a GPU node (here: the replayed H100)."""
    return f"starting probe\n{core.report_line(core.probe(gpus_expected=1))}\n"


def test_succeeded_pod_with_report_passes_and_everything_is_deleted(kube, fake_smi):
    fake_smi(H100, row=0)
    server, outputs = kube(logs=_report_logs())
    progress = io.StringIO()
    result = target.run(outputs, timeout=30, progress=progress)
    assert result.verdict == "pass", result.checks
    name = result.job["name"]
    assert server.created == [("ConfigMap", name), ("Job", name)]
    assert sorted(server.deleted) == [("ConfigMap", name), ("Job", name)]
    assert "Succeeded after" in progress.getvalue()


def test_succeeded_pod_without_report_fails(kube):
    server, outputs = kube(logs="hello\n")
    result = target.run(outputs, timeout=30, progress=io.StringIO())
    assert {c.name: c.verdict for c in result.checks}["probe_report"] == "fail" and result.verdict == "fail"


def test_pending_pod_is_explained_and_deleted_at_timeout(kube):
    events = [{"metadata": {"name": "e1", "namespace": "default"},
               "involvedObject": {"kind": "Pod", "name": "p"}, "reason": "FailedScheduling", "type": "Warning",
               "message": "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) had untolerated "
                          "taint {CriticalAddonsOnly: true}."}]
    nodes = [{"metadata": {"name": "ip-10-42-1-7", "labels": {"nvidia.com/gpu.present": "true"}},
              "status": {"allocatable": {"cpu": "4", "nvidia.com/gpu": "0"}}}]
    server, outputs = kube(phases=("Pending",), events=events, nodes=nodes)
    result = target.run(outputs, timeout=1.5, explain_after=0.5, progress=io.StringIO())
    assert {c.name: c.verdict for c in result.checks}["job_finished"] == "fail"
    text = "\n".join(result.diagnosis)
    assert "Insufficient nvidia.com/gpu" in text and "untolerated taint" in text
    assert "ip-10-42-1-7 advertises 0 nvidia.com/gpu" in text and "device plugin is not running" in text
    assert ("Job", result.job["name"]) in server.deleted


def test_keep_leaves_the_job(kube):
    server, outputs = kube(phases=("Pending",))
    target.run(outputs, timeout=1, explain_after=0.5, keep=True, progress=io.StringIO())
    assert server.deleted == []


def test_failed_pod_fails(kube):
    server, outputs = kube(phases=("Pending", "Failed"), logs="Traceback: CUDA error\n")
    result = target.run(outputs, timeout=30, progress=io.StringIO())
    checks = {c.name: c.verdict for c in result.checks}
    assert checks["job_status"] == "fail" and checks["probe_report"] == "fail"


def test_cli_on_a_kubernetes_stack(kube, tmp_path, capsys):
    server, outputs = kube(logs="no report\n")
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(outputs))
    from gpuready.cli import main

    assert main(["smoke", "--outputs", str(path), "--timeout", "30"]) == 1
    assert "FAIL     probe_report" in capsys.readouterr().out


DATA = Path(__file__).resolve().parents[2] / "data" / "k8s-events"


def scenario(name: str, **extra) -> dict:
    """A recorded scenario, cluster-autoscaler's status stamped as just written (it rewrites it every 10 s)."""
    data = json.loads((DATA / name).read_text())
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f000 +0000 UTC")
    for config_map in data.get("configmaps", ()):
        config_map["metadata"]["annotations"]["cluster-autoscaler.kubernetes.io/last-updated"] = now
    return {**data, **extra}


def test_the_user_sees_the_scale_up_then_why_it_stopped(kube):
    server, outputs = kube(phases=("Pending",), stages=[scenario("ca-triggered-scale-up.json"),
                                                        scenario("ca-not-triggered.json")])
    progress = io.StringIO()
    result = target.run({**outputs, "autoscaler": "cluster-autoscaler"}, timeout=2.5, explain_after=0.5,
                        progress=progress)
    said = progress.getvalue()
    adding = said.index("cluster-autoscaler is adding a node to group eks-gpu-1x-")
    refused = said.index("cluster-autoscaler said: pod didn't trigger scale-up: 1 Insufficient nvidia.com/gpu")
    assert adding < refused and said.count("is adding a node") == 1  # printed when it changes, not at every poll
    assert "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu" in said and "gpuready:maxSize" in said
    assert [f["kind"] for f in result.findings][:1] == ["no-scale-up"]  # the final report: the latest word
    assert any("max node group size reached" in d for d in result.diagnosis)
    assert {c.name: c.verdict for c in result.checks}["job_finished"] == "fail"
    assert ("Job", result.job["name"]) in server.deleted


def test_a_failed_scale_up_is_read_from_cluster_autoscaler_status(kube):
    server, outputs = kube(phases=("Pending",), stages=[scenario("ca-backoff.json")])
    result = target.run(outputs, timeout=1.5, explain_after=0.5, progress=io.StringIO())
    assert [f["kind"] for f in result.findings][:2] == ["no-scale-up", "capacity"]
    assert "iam" not in [f["kind"] for f in result.findings]  # yesterday's failure on the ConfigMap is old news
    assert "AWS cannot provision any more instances for this node group" in "\n".join(result.diagnosis)


def test_pod_events_are_enough_when_kube_system_is_forbidden(kube):
    server, outputs = kube(phases=("Pending",), stages=[scenario("ca-backoff.json")], forbidden=("/configmaps/",))
    result = target.run(outputs, timeout=1.5, explain_after=0.5, progress=io.StringIO())
    assert [f["kind"] for f in result.findings] == ["no-scale-up", "scheduler", "no-gpu-node"]


def test_karpenter_launch_then_a_node_without_gpus(kube):
    server, outputs = kube(phases=("Pending",), stages=[scenario("karpenter-launching.json"),
                                                        scenario("karpenter-no-gpu-allocatable.json")])
    progress = io.StringIO()
    result = target.run({**outputs, "autoscaler": "karpenter"}, timeout=5, explain_after=0.5, progress=progress)
    said = progress.getvalue()
    assert said.index("nodeclaim gpu-8xq2m (g6.xlarge) is running; waiting for it to join") < \
        said.index("node ip-10-42-17-201.ec2.internal joined but has no allocatable nvidia.com/gpu yet: is the "
                   "NVIDIA device plugin running on it?")
    assert result.findings[0]["kind"] == "device-plugin" and not result.findings[0]["waiting"]


def test_karpenter_capacity_on_a_nodeclaim_it_deleted(kube):
    server, outputs = kube(phases=("Pending",), stages=[scenario("karpenter-insufficient-capacity.json")])
    result = target.run(outputs, timeout=1.5, explain_after=0.5, progress=io.StringIO())
    assert result.findings[0]["kind"] == "capacity"
    assert "InsufficientInstanceCapacity" in result.findings[0]["quote"]


def test_silence_from_every_autoscaler_asks_whether_it_runs(kube):
    events = scenario("ca-triggered-scale-up.json")["events"][:1]  # the scheduler only
    server, outputs = kube(phases=("Pending",), events=events)
    started = time.monotonic()
    progress = io.StringIO()
    result = target.run({**outputs, "autoscaler": "cluster-autoscaler"}, timeout=400, explain_after=20,
                        progress=progress, clock=lambda: (time.monotonic() - started) * 200)  # 1 s here: 200 s
    said = progress.getvalue()
    assert said.index("the scheduler found no node") < said.index("no autoscaler reacted to the pod in 2 min")
    assert said.count("no autoscaler reacted") == 1  # said once, not at every poll
    assert "kubectl -n kube-system get deploy -l app.kubernetes.io/name=aws-cluster-autoscaler" in said
    assert result.findings[0]["kind"] == "no-autoscaler" and ("Job", result.job["name"]) in server.deleted


def test_cli_json_carries_the_findings(kube, tmp_path, capsys):
    server, outputs = kube(phases=("Pending",), stages=[scenario("ca-triggered-scale-up.json")])
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(outputs))
    from gpuready.cli import main

    assert main(["smoke", "--outputs", str(path), "--timeout", "1", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["findings"][0]["kind"] == "scaling-up" and report["findings"][0]["waiting"] is True
    assert report["findings"][0]["quote"].startswith("pod triggered scale-up: [{eks-gpu-1x-")


def _labelled_node(name, **labels):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {
        "node.kubernetes.io/instance-type": "p5.48xlarge", "nvidia.com/gpu.present": "true", **labels}},
        "status": {"allocatable": {"nvidia.com/gpu": "8"}}}


@pytest.mark.parametrize("labels, capacity", [
    ({"eks.amazonaws.com/capacityType": "CAPACITY_BLOCK"}, "reserved"),
    ({"karpenter.sh/capacity-type": "reserved", "karpenter.k8s.aws/capacity-reservation-type": "default",
      "karpenter.k8s.aws/capacity-reservation-id": "cr-0123456789abcdef0"}, "reserved (odcr cr-0123456789abcdef0)"),
    ({"karpenter.sh/capacity-type": "spot"}, "spot"),
    ({}, None),
])
def test_the_result_says_which_node_ran_the_probe_and_where_its_capacity_came_from(kube, fake_smi, labels, capacity):
    fake_smi(H100, row=0)
    server, outputs = kube(logs=_report_logs(), nodes=[_labelled_node("node-0", **labels)])
    result = target.run(outputs, timeout=30, progress=io.StringIO())
    assert result.verdict == "pass", result.checks
    assert (result.job["node"], result.job["instance_type"], result.job.get("capacity")) == \
        ("node-0", "p5.48xlarge", capacity)
    shown = ", ".join(filter(None, ("p5.48xlarge", capacity)))
    assert f"Ran on node node-0 ({shown})" in render_text(result).splitlines()


def test_a_node_gone_before_it_is_read_leaves_the_verdict_alone(kube, fake_smi):
    fake_smi(H100, row=0)
    server, outputs = kube(logs=_report_logs())  # no node named node-0: the API server answers 404
    result = target.run(outputs, timeout=30, progress=io.StringIO())
    assert result.verdict == "pass" and "node" not in result.job
