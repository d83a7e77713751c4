"""The sweep on Kubernetes: its Jobs validate against the Kubernetes schemas, each pinned to its node; the run is
tested against the local fake API server (fake_kube.py): one watch for all pods, a row per node, every object
deleted, failing nodes tainted. Each node's logs are what the real probe prints against a replayed nvidia-smi."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET

import kubernetes_validate
import pytest

from gpuready.cli import main
from gpuready.probe import core
from gpuready.smoke import sweep, sweep_kubernetes as target
from tests.gpuready.conftest import H100


EKS = {"gpuTaint": {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
       "gpuNodeTaints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}],
       "gpuNodeLabels": {"nvidia.com/gpu.present": "true"}, "platform": "eks"}
ECC = {"ecc.errors.uncorrected.volatile.total": "3"}


def _node(name, gpus="4", gpu=True, **spec):
    labels = {"kubernetes.io/hostname": name, "node.kubernetes.io/instance-type": "g6.12xlarge",
              **({"nvidia.com/gpu.present": "true"} if gpu else {})}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels, "resourceVersion": "41"},
            "spec": {"taints": [dict(EKS["gpuTaint"])], **spec},
            "status": {"allocatable": {"cpu": "48", "nvidia.com/gpu": gpus}}}


def _probe_logs(fake_smi, **overrides):
    """What the probe prints on a node with the replayed H100 (with ``overrides`` to nvidia-smi's answer)."""
    fake_smi(H100, row=0, **overrides)
    return f"starting probe\n{core.report_line(core.probe(gpus_expected=1))}\n"


@pytest.mark.parametrize("version", ["1.30.0", "1.37.0"])
def test_manifests_validate_strictly_and_pin_each_job_to_its_node(version):
    config_map, jobs = target.manifests("gpuready-sweep-abc", "default", [("ip-10-0-0-1", 8), ("ip-10-0-0-2", 4)],
                                        EKS["gpuNodeTaints"], EKS["gpuNodeLabels"], 900)
    kubernetes_validate.validate(config_map, version, strict=True)
    for job in jobs:
        kubernetes_validate.validate(job, version, strict=True)
    specs = [job["spec"]["template"]["spec"] for job in jobs]
    assert [s["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
            ["matchFields"][0]["values"] for s in specs] == [["ip-10-0-0-1"], ["ip-10-0-0-2"]]
    assert [s["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] for s in specs] == ["8", "4"]
    assert {s["volumes"][0]["configMap"]["name"] for s in specs} == {config_map["metadata"]["name"]}
    assert all({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in s["tolerations"] and
               {"key": "gpuready.io/sweep", "operator": "Exists", "effect": "NoSchedule"} in s["tolerations"]
               for s in specs)
    assert len({j["metadata"]["name"] for j in jobs}) == 2


def test_every_gpu_node_gets_a_row_one_watch_and_everything_is_deleted(kube, fake_smi):
    healthy, broken = _probe_logs(fake_smi), _probe_logs(fake_smi, **ECC)
    nodes = [_node("gpu-a"), _node("gpu-b"), _node("gpu-c", gpus="0"), _node("cpu-1", gpu=False)]
    server, outputs = kube(nodes=nodes, node_logs={"gpu-a": healthy, "gpu-b": broken})
    progress = io.StringIO()
    result = target.run(outputs, timeout=30, progress=progress)
    rows = {r.node: r for r in result.rows}
    assert sorted(rows) == ["gpu-a", "gpu-b", "gpu-c"]  # the CPU node is not a GPU node
    assert rows["gpu-a"].verdict == "pass" and rows["gpu-a"].gpu_model == "NVIDIA H100 80GB HBM3"
    assert rows["gpu-a"].health == "pass" and rows["gpu-a"].instance_type == "g6.12xlarge"
    assert rows["gpu-b"].verdict == "fail" and rows["gpu-b"].health == "fail"
    assert "ecc_uncorrected" in rows["gpu-b"].detail
    assert rows["gpu-c"].verdict == "fail" and "no allocatable nvidia.com/gpu" in rows["gpu-c"].detail
    assert result.verdict == "fail" and server.watches == 1
    run = result.job["name"]
    jobs = [name for kind, name in server.created if kind == "Job"]
    assert server.created[0] == ("ConfigMap", run) and len(jobs) == 2  # none for the node without GPUs
    assert sorted(server.deleted) == sorted([("ConfigMap", run)] + [("Job", j) for j in jobs])
    assert {p["spec"]["nodeName"] for p in server.pods} == {"gpu-a", "gpu-b"}
    assert server.patched == []  # no --quarantine: nodes untouched
    assert "2 Succeeded after" in progress.getvalue()


def test_quarantine_takes_only_the_failing_nodes_out_of_service_and_says_so(kube, fake_smi):
    healthy, broken = _probe_logs(fake_smi), _probe_logs(fake_smi, **ECC)
    server, outputs = kube(nodes=[_node("gpu-a"), _node("gpu-b")], node_logs={"gpu-a": healthy, "gpu-b": broken})
    progress = io.StringIO()
    result = target.run(outputs, timeout=30, quarantine=True, progress=progress)
    ((node, patch),) = server.patched
    assert node == "gpu-b" and patch[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": "41"}
    nodes = {n["metadata"]["name"]: n for n in server.now()["nodes"]}
    assert nodes["gpu-b"]["spec"]["taints"] == [EKS["gpuTaint"], target.TAINT]
    assert nodes["gpu-a"]["spec"]["taints"] == [EKS["gpuTaint"]]
    assert nodes["gpu-b"]["metadata"]["labels"]["gpuready.io/sweep"] == "failed"
    assert "gpuready.io/sweep" not in nodes["gpu-a"]["metadata"]["labels"]
    reason = nodes["gpu-b"]["metadata"]["annotations"]["gpuready.io/sweep-reason"]
    assert "ecc_uncorrected on gpu0" in reason
    assert nodes["gpu-b"]["metadata"]["labels"] == {**_node("gpu-b")["metadata"]["labels"],
                                                    "gpuready.io/sweep": "failed"}  # the node's own labels kept
    assert "gpu-b tainted gpuready.io/sweep=failed:NoSchedule and labelled gpuready.io/sweep=failed" in \
        progress.getvalue()
    assert any("gpu-b tainted" in n for n in result.notes)
    again = target.run(outputs, timeout=30, quarantine=True, progress=io.StringIO())  # its pod tolerates the taint
    assert len(server.patched) == 1 and any("(it was already)" in n for n in again.notes)


def test_a_pod_that_never_starts_fails_its_row_and_is_deleted_but_its_node_is_not_tainted(kube, fake_smi):
    server, outputs = kube(nodes=[_node("gpu-a"), _node("gpu-busy")], node_logs={"gpu-a": _probe_logs(fake_smi)},
                           node_phases={"gpu-busy": ("Pending",)})
    result = target.run(outputs, timeout=1.5, quarantine=True, progress=io.StringIO())
    rows = {r.node: r for r in result.rows}
    assert rows["gpu-a"].verdict == "pass" and rows["gpu-busy"].verdict == "fail"
    assert "not finished after 1.5 s (Pending" in rows["gpu-busy"].detail
    assert server.patched == [] and len([d for d in server.deleted if d[0] == "Job"]) == 2


@pytest.mark.parametrize("status", [400, 404])
def test_a_pod_whose_logs_cannot_be_read_fails_its_row_only(kube, fake_smi, status):
    server, outputs = kube(nodes=[_node("gpu-a"), _node("gpu-gone")],
                           node_logs={"gpu-a": _probe_logs(fake_smi), "gpu-gone": status},
                           node_phases={"gpu-gone": ("Pending", "Failed")})
    result = target.run(outputs, timeout=30, progress=io.StringIO())
    rows = {r.node: r for r in result.rows}
    assert rows["gpu-a"].verdict == "pass"
    assert rows["gpu-gone"].verdict == "fail" and "pod Failed without a report" in rows["gpu-gone"].detail
    assert len([d for d in server.deleted if d[0] == "Job"]) == 2


def test_nodes_limits_the_sweep_and_cordoned_nodes_are_skipped(kube, fake_smi):
    logs = _probe_logs(fake_smi)
    server, outputs = kube(nodes=[_node("gpu-a", unschedulable=True), _node("gpu-b"), _node("gpu-c")], logs=logs)
    result = target.run(outputs, nodes=2, timeout=30, progress=io.StringIO())
    assert [(r.node, r.verdict) for r in result.rows] == [("gpu-a", "skip"), ("gpu-b", "pass")]
    assert result.verdict == "pass" and "2 of the 3 GPU nodes swept" in result.notes[0]


def test_ctrl_c_while_waiting_deletes_every_job(kube, monkeypatch):
    server, outputs = kube(nodes=[_node("gpu-a"), _node("gpu-b")], phases=("Pending",))

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(target, "_wait", interrupt)
    result = target.run(outputs, timeout=30, progress=io.StringIO())
    assert result.verdict == "fail" and all("interrupted" in r.detail for r in result.rows)
    assert sorted(k for k, _ in server.deleted) == ["ConfigMap", "Job", "Job"]


def test_cli_sweep_prints_a_row_per_node_json_and_junit(kube, fake_smi, tmp_path, capsys):
    healthy, broken = _probe_logs(fake_smi), _probe_logs(fake_smi, **ECC)
    server, outputs = kube(nodes=[_node("gpu-a"), _node("gpu-b")], node_logs={"gpu-a": healthy, "gpu-b": broken})
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(outputs))
    junit = tmp_path / "sweep.xml"
    assert main(["sweep", "--outputs", str(path), "--timeout", "30", "--junit", str(junit)]) == 1
    text = capsys.readouterr().out
    assert "gpu-a" in text and "gpu-b" in text and "Verdict: FAIL (2 nodes, 1 failing)" in text
    cases = ET.parse(junit).getroot().findall(".//testcase")
    assert [(c.get("name"), c.find("failure") is not None) for c in cases] == [("gpu-a", False), ("gpu-b", True)]
    server.node_logs = {"gpu-a": healthy, "gpu-b": healthy}
    assert main(["sweep", "--outputs", str(path), "--timeout", "30", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["verdict"] == "pass" and [r["node"] for r in data["rows"]] == ["gpu-a", "gpu-b"]


def test_no_gpu_node_is_a_failing_sweep_that_says_why(kube, capsys, tmp_path):
    server, outputs = kube(nodes=[_node("cpu-1", gpu=False)])
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(outputs))
    assert main(["sweep", "--outputs", str(path)]) == 1
    assert "scaled to zero has no node to sweep" in capsys.readouterr().out and server.created == []


def test_each_row_says_where_its_node_came_from_when_the_labels_say(kube, fake_smi, capsys, tmp_path):
    healthy = _probe_logs(fake_smi)
    block = _node("gpu-block")
    block["metadata"]["labels"].update({"karpenter.sh/capacity-type": "reserved",
                                        "karpenter.k8s.aws/capacity-reservation-type": "capacity-block",
                                        "karpenter.k8s.aws/capacity-reservation-id": "cr-0123456789abcdef0"})
    spot = _node("gpu-spot")
    spot["metadata"]["labels"]["eks.amazonaws.com/capacityType"] = "SPOT"
    plain = _node("gpu-plain")
    server, outputs = kube(nodes=[block, spot, plain], node_logs={n: healthy for n in ("gpu-block", "gpu-spot",
                                                                                      "gpu-plain")})
    result = target.run(outputs, timeout=30, progress=io.StringIO())
    assert {r.node: r.capacity for r in result.rows} == {
        "gpu-block": "reserved (capacity-block cr-0123456789abcdef0)", "gpu-spot": "spot", "gpu-plain": None}
    text = sweep.render_text(result).splitlines()
    assert text[2].split()[:4] == ["VERDICT", "NODE", "TYPE", "CAPACITY"]
    assert "reserved (capacity-block cr-0123456789abcdef0)" in next(line for line in text if "gpu-block" in line)
    assert next(line for line in text if "gpu-plain" in line).split()[3] == "-"
    assert [r["capacity"] for r in result.to_json()["rows"]] == [r.capacity for r in result.rows]


def test_no_capacity_column_when_no_node_says(kube, fake_smi):
    server, outputs = kube(nodes=[_node("gpu-a")], node_logs={"gpu-a": _probe_logs(fake_smi)})
    result = target.run(outputs, timeout=30, progress=io.StringIO())
    assert "CAPACITY" not in sweep.render_text(result)


def test_a_queued_job_selects_its_node_s_pool_so_kueue_gives_it_only_that_pool_s_flavor():
    """Kueue gives a Workload only a flavor whose nodeLabels its pods' nodeSelector allows (for the keys the flavor
    has: the "Resource Flavor" concept page); a pin by node name it cannot read. With its pool's label, a Job pinned
    to a node of the 4-GPU pool fits that pool's flavor alone, among the eks stack's flavors."""
    from gpuready_components import catalog
    from gpuready_components.k8s_gpu import facts, kueue

    rows = catalog.declared("aws", ())
    pools = [kueue.flavor(pool, gpus, {**EKS["gpuNodeLabels"], facts.POOL_LABEL: pool}, [], [rows.find("aws", kind)])
             for pool, gpus, kind in (("gpu", 4, "g6.xlarge"), ("gpu-4x", 16, "g6.12xlarge"))]
    flavors = [kueue.resource_flavor(f) for f in pools]
    _, (job,) = target.manifests("gpuready-sweep-abc", "gpuready-system", [("ip-10-0-0-9", 4)],
                                 EKS["gpuNodeTaints"], EKS["gpuNodeLabels"], 900)

    def fits(flavor, spec):
        selector = spec.get("nodeSelector") or {}
        return all(selector.get(k, v) == v for k, v in flavor["spec"]["nodeLabels"].items())
    assert [fits(f, job["spec"]["template"]["spec"]) for f in flavors] == [True, True]  # pinned by name alone
    spec = target.on_flavor(job, "gpu-4x")["spec"]["template"]["spec"]
    assert [f["metadata"]["name"] for f in flavors if fits(f, spec)] == [pools[1].name]
    kubernetes_validate.validate(job, "1.30.0", strict=True)
    assert target.on_flavor(job, None) is job
