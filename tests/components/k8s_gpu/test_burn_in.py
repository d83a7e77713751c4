"""Burn-in admission: its Kubernetes objects against the OpenAPI schemas, the NVIDIA daemonsets tolerating its
taint, the admission script's verdict and node patch, and what is refused."""

from __future__ import annotations

import dataclasses
import json

import kubernetes_validate
import pytest

from gpuready_components.errors import ConfigError
from gpuready_components.k8s_gpu import BurnInArgs, GpuSoftwareOptions, K8sGpuSoftwareArgs, plan
from gpuready_components.k8s_gpu import burn_in_agent as agent
from gpuready_components.k8s_gpu import facts
from gpuready_components.k8s_gpu.burn_in import manifests
from gpuready_components.k8s_gpu.scheduling import schedulable, tolerates
from gpuready_components import platforms

PLATFORMS = {p.name: p.node for p in platforms.every(kubernetes=True)}

BURN_IN = BurnInArgs(probe_files={"core.py": "print('probe')\n"})
TAINT = facts.BURN_IN_TAINT


def _objects(platform="eks", level=2):
    return {o["kind"]: o for o in manifests("nvidia-gpu", PLATFORMS[platform], (TAINT,),
                                           dataclasses.replace(BURN_IN, dcgm_level=level))}


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_objects_are_valid_kubernetes_objects(platform):
    for obj in _objects(platform).values():
        kubernetes_validate.validate(obj, "1.34.0", strict=True)


def test_the_daemonset_runs_on_pending_gpu_nodes_only_and_diagnoses_at_the_level_asked():
    objects = _objects(level=3)
    pod = objects["DaemonSet"]["spec"]["template"]["spec"]
    gpu = PLATFORMS["eks"]
    assert schedulable(pod, dict(gpu.boot_labels), [gpu.taint, TAINT])
    assert not schedulable(pod, {"kubernetes.io/os": "linux"}, [])  # CPU nodes: not selected
    diag = next(c for c in pod["initContainers"] if c["name"] == "dcgm-diag")
    assert "dcgmi diag -r 3 " in diag["command"][-1] and diag["image"] == facts.DCGM_IMAGE
    assert [c["name"] for c in pod["initContainers"]] == ["check", "dcgm-diag", "probe"]
    assert set(objects["ConfigMap"]["data"]) == {"core.py", "burn_in_agent.py", "gpus.json"}


def test_rbac_gets_and_patches_nodes_and_nothing_else():
    objects = _objects()
    assert objects["ClusterRole"]["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}]
    binding = objects["ClusterRoleBinding"]
    assert binding["roleRef"]["name"] == objects["ClusterRole"]["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": objects["ServiceAccount"]["metadata"]["name"],
                                    "namespace": "nvidia-gpu"}]


@pytest.mark.parametrize("install", ["device-plugin", "gpu-operator"])
def test_every_nvidia_daemonset_tolerates_the_burn_in_taint(install):
    """Else the burn-in would wait for a device plugin that never comes."""
    args = K8sGpuSoftwareArgs(platform="eks", node_image="eks/AL2023_x86_64_NVIDIA",
                              options=GpuSoftwareOptions(install=install, burn_in=BURN_IN))
    for release in plan(args).releases:
        values = release.values
        lists = [values.get("tolerations"), (values.get("daemonsets") or {}).get("tolerations")]
        assert any(tolerates(t, TAINT) for t in lists if t), release.key
    without = plan(dataclasses.replace(args, options=GpuSoftwareOptions(install=install)))
    assert not any(tolerates(r.values.get("tolerations"), TAINT) for r in without.releases)


@pytest.mark.parametrize("burn_in,field", [
    (dataclasses.replace(BURN_IN, dcgm_level=5), "options.burn_in.dcgm_level"),
    (BurnInArgs(probe_files={}), "options.burn_in.probe_files"),
])
def test_impossible_burn_ins_are_refused(burn_in, field):
    with pytest.raises(ConfigError) as error:
        plan(K8sGpuSoftwareArgs(platform="eks", node_image="eks/AL2023_x86_64_NVIDIA",
                                options=GpuSoftwareOptions(burn_in=burn_in)))
    assert error.value.field == field


@pytest.mark.parametrize("report,status,output,passed,words", [
    ({"verdict": "pass", "checks": []}, 0, "", True, ""),
    ({"verdict": "warn", "checks": []}, 0, "", True, ""),
    ({"verdict": "fail", "checks": [{"name": "gpu0.xid", "verdict": "fail", "required": True}]}, 0, "", False,
     "probe failed: gpu0.xid"),
    ({"verdict": "pass", "checks": []}, 226, "| Memory | Fail - GPU 3 |\n| PCIe | Pass |", False,
     "dcgmi diag exited 226: | Memory | Fail - GPU 3 |"),
    (None, 0, "", False, "no report"),
    ({"verdict": "pass", "checks": []}, 124, "", False, "dcgmi diag exited 124 (did not finish in time: killed)"),
])
def test_the_verdict_names_what_failed(report, status, output, passed, words):
    ok, reason = agent.verdict(report, status, output)
    assert ok is passed and words in reason


def test_a_pass_removes_only_the_burn_in_taint_and_a_fail_keeps_it(monkeypatch):
    sent = []
    monkeypatch.setattr(agent, "_api", lambda method, path, body=None, kind="": sent.append((method, path, body)))
    node = {"metadata": {"resourceVersion": "7"}, "spec": {"taints": [
        {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
        {"key": TAINT.key, "value": TAINT.value, "effect": TAINT.effect}]}}
    agent.patch("n1", node, True, "")
    agent.patch("n1", node, False, "dcgmi diag exited 226")
    (_, path, passed), (_, _, failed) = sent
    assert path == "/api/v1/nodes/n1"
    assert passed["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
    assert passed["metadata"]["labels"] == {"gpuready.io/burn-in": "passed"}
    assert passed["metadata"]["resourceVersion"] == "7"  # a concurrent change is a conflict, retried
    assert "spec" not in failed
    assert failed["metadata"]["labels"] == {"gpuready.io/burn-in": "failed"}
    assert failed["metadata"]["annotations"] == {"gpuready.io/burn-in-reason": "dcgmi diag exited 226"}


@pytest.mark.parametrize("labels,status,expected", [
    ({"node.kubernetes.io/instance-type": "p5.48xlarge"}, {"capacity": {"nvidia.com/gpu": "7"}}, 8),
    ({"node.kubernetes.io/instance-type": "x9.new"}, {"capacity": {"nvidia.com/gpu": "4"}}, 4),
    ({"nvidia.com/gpu.count": "2"}, {"capacity": {"nvidia.com/gpu": "8"}}, 2),
    ({"nvidia.com/gpu.replicas": "4"}, {"capacity": {"nvidia.com/gpu": "8"}}, 2),  # time-slicing: 2 GPUs x 4
    ({}, {}, 0),
])
def test_the_expected_gpu_count_comes_from_the_catalog_before_what_the_node_advertises(labels, status, expected):
    """A node that lost a GPU advertises one fewer: the catalog's count of its type is what it must show."""
    shipped = json.loads(_objects()["ConfigMap"]["data"]["gpus.json"])
    assert shipped["p5.48xlarge"] == 8 and shipped["g6.12xlarge"] == 4
    assert agent.expected_gpus({"metadata": {"labels": labels}, "status": status}, shipped) == expected


def test_the_probe_is_asked_for_the_expected_gpus_and_killed_at_its_time_limit(tmp_path, monkeypatch):
    probe = tmp_path / "core.py"
    probe.write_text("import json, sys, time\n"
                     "if sys.argv[2] == 'hang':\n    print('warming up', flush=True); time.sleep(60)\n"
                     "print('GPUREADY_PROBE_REPORT ' + json.dumps({'verdict': 'pass', 'gpus': sys.argv[1:]}))\n")
    monkeypatch.setattr(agent, "PROBE", str(probe))
    report, _, missing = agent.run_probe(8)
    assert report["gpus"] == ["--gpus", "8"] and missing == ""
    report, output, missing = agent.run_probe("hang", timeout=1)
    assert report is None and "did not finish in 1 s" in missing and "warming up" in output
    assert agent.verdict(report, 0, "", missing) == (False, missing)


def test_gke_mounts_its_own_driver_from_the_host_and_every_platform_names_its_taint():
    """GKE's own driver reaches a container only through its device plugin, for pods that ask for GPUs (a
    daemonset that asked would hold them for good): the burn-in mounts it from the host instead."""
    gke = {o["kind"]: o for o in manifests("nvidia-gpu", PLATFORMS["gke"], (PLATFORMS["gke"].burn_in_taint,),
                                           BURN_IN, driver_root="/home/kubernetes/bin/nvidia")}
    for obj in gke.values():
        kubernetes_validate.validate(obj, "1.34.0", strict=True)
    pod = gke["DaemonSet"]["spec"]["template"]["spec"]
    host = {"path": "/home/kubernetes/bin/nvidia", "type": "Directory"}
    assert {"name": "driver", "hostPath": host} in pod["volumes"]
    by_name = {c["name"]: c for c in pod["initContainers"]}
    for name in ("dcgm-diag", "probe"):
        assert {"name": "LD_LIBRARY_PATH", "value": "/usr/local/nvidia/lib64"} in by_name[name]["env"]
        assert {"name": "driver", "mountPath": "/usr/local/nvidia", "readOnly": True} in by_name[name]["volumeMounts"]
        assert not any(c.get("resources") for c in (by_name[name],))  # no GPU asked for: none held
    for platform, container in (("gke", by_name["check"]), ("eks", _objects()["DaemonSet"]["spec"]["template"]
                                                            ["spec"]["initContainers"][0])):
        assert {"name": "BURN_IN_TAINT_KEY", "value": PLATFORMS[platform].burn_in_taint.key} in container["env"]
    assert "driver" not in {v["name"] for v in _objects()["DaemonSet"]["spec"]["template"]["spec"]["volumes"]}


def test_the_agent_removes_the_taint_its_daemonset_names(tmp_path):
    import os
    import subprocess
    import sys

    key = PLATFORMS["aks"].burn_in_taint.key
    code = ("import json, runpy, sys; agent = runpy.run_path(sys.argv[1]); sent = []\n"
            "agent['_api'].__globals__['_api'] = lambda *a, **k: sent.append(a)\n"
            "node = {'metadata': {'resourceVersion': '1'}, 'spec': {'taints': [\n"
            "    {'key': 'sku', 'value': 'gpu', 'effect': 'NoSchedule'},\n"
            "    {'key': sys.argv[2], 'effect': 'NoSchedule'}]}}\n"
            "agent['patch']('n1', node, True, '')\n"
            "print(json.dumps([agent['TAINT_KEY'], agent['tainted'](node), sent[0][2]['spec']['taints']]))\n")
    done = subprocess.run([sys.executable, "-c", code, agent.__file__, key], capture_output=True, text=True,
                          env={**os.environ, "BURN_IN_TAINT_KEY": key}, check=True)
    assert json.loads(done.stdout) == [key, True, [{"key": "sku", "value": "gpu", "effect": "NoSchedule"}]]


def test_the_probe_finds_a_driver_mounted_from_the_host(tmp_path, monkeypatch):
    probe = tmp_path / "core.py"
    probe.write_text("import json, os\nprint('GPUREADY_PROBE_REPORT ' + json.dumps({'path': os.environ['PATH']}))\n")
    driver_bin = tmp_path / "nvidia" / "bin"
    driver_bin.mkdir(parents=True)
    monkeypatch.setattr(agent, "PROBE", str(probe))
    monkeypatch.setattr(agent, "DRIVER_BIN", str(driver_bin))
    report, _, _ = agent.run_probe(1)
    assert report["path"].split(":")[0] == str(driver_bin)
    monkeypatch.setattr(agent, "DRIVER_BIN", str(tmp_path / "absent"))
    assert agent.run_probe(1)[0]["path"].split(":")[0] != str(tmp_path / "absent")
