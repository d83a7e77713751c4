"""``gpuready sweep --repair`` end to end on GKE and AKS: the sweep on the fake Kubernetes API server, on a gke or an
aks stack's outputs, whose nodes' providerIDs name instances of the fake Compute Engine's managed instance group or of
the fake Azure's VM scale set (fake_gce.py, fake_azure.py, behind the fault proxy). What a user sees, as on EKS
(test_init.py): a dry run that changes nothing and says what it would do; applied, exactly the failing node's machine
reset or recreated (GKE), restarted or redeployed (AKS), once; the limits held and said; a refusal in the audit."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any, Callable

import pytest

import gpuready.repair
from gpuready.cli import main
from gpuready.repair import ANNOTATION, REBOOT, REPLACE, Limits
from gpuready.smoke import sweep
from gpuready.smoke.sweep_kubernetes import TAINT
from gpuready_components.aks_gpu.outputs import OUTPUTS as AKS_OUTPUTS
from gpuready_components.gke_gpu.outputs import OUTPUTS as GKE_OUTPUTS

from . import fake_azure, fake_gce
from .conftest import FAST, node, nodes_of, pod, swept

GKE = {"platform": "gke", "clusterName": "ml", "nodePoolName": "gpu",
       "gpuTaint": {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
       "gpuNodeTaints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
       "gpuNodeLabels": {"cloud.google.com/gke-accelerator": "nvidia-h100-80gb", "workload": "gpu"}}
AKS = {"platform": "aks", "clusterName": "ml", "nodePoolName": "gpu",
       "gpuTaint": {"key": "sku", "value": "gpu", "effect": "NoSchedule"},
       "gpuNodeTaints": [{"key": "sku", "value": "gpu", "effect": "NoSchedule"}],
       "gpuNodeLabels": {"kubernetes.azure.com/accelerator": "nvidia", "workload": "gpu"}}
"""A gke and an aks stack's outputs, as their components register them (golden plans: tests/data/golden)."""


@dataclass
class Cloud:
    """One cloud's side of a test: its stack's outputs, its fake API behind the fault proxy, the repairer's
    endpoints pointing at it, and its machines (by index: the Kubernetes Node, the cloud's id, the audit's words)."""

    outputs: dict
    proxy: Any
    endpoints: dict
    nodes: list[dict]
    ids: list[str]
    where: list[str]
    verbs: dict[str, str]
    """What the fake does for :data:`REBOOT` and :data:`REPLACE`."""
    reads: frozenset
    """The fault proxy's names of the calls that change nothing."""
    calls: dict[str, str]
    """The fault proxy's name of the call of :data:`REBOOT` and :data:`REPLACE`."""
    done: Callable[[], list[tuple[str, str]]]
    """What the fake did: (its verb, the node of the machine), in order."""
    lone: dict
    """A GPU node of no pool the repairer handles."""
    lone_why: str
    """Why the repairer leaves it, in its words."""

    @property
    def names(self) -> list[str]:
        return [n["metadata"]["name"] for n in self.nodes]

    def changes(self) -> list[str]:
        """Every call that reached the proxy and could change something."""
        return [name for name, _ in self.proxy.seen if name not in self.reads]

    def kube(self, fake_kube, logs, failing: dict[int, str], **scenario):
        """The fake API server with these nodes, each printing a healthy probe but ``failing`` (index -> ``ecc``,
        ``remap`` or ``slow``): (server, outputs)."""
        return fake_kube(self.outputs, nodes=self.nodes, **scenario, node_logs={
            name: logs(slow=True) if failing.get(i) == "slow" else logs(failing.get(i))
            for i, name in enumerate(self.names)})


def _node(made: dict, outputs: dict, instance_type: str) -> dict:
    """The GPU Node of a fake's ``made`` (name, labels, providerID, as the platform registers it), with the labels and
    taint the stack's outputs say its GPU nodes carry."""
    full = node(made["metadata"]["name"], labels={**made["metadata"]["labels"], **outputs["gpuNodeLabels"],
                                                  "node.kubernetes.io/instance-type": instance_type})
    full["spec"] = {"providerID": made["spec"]["providerID"], "taints": [dict(outputs["gpuTaint"])]}
    return full


def _gke(gce, n: int) -> Cloud:
    names = [f"gke-ml-gpu-1a2b-{i:04d}" for i in range(n)]
    fake, proxy, repairer = gce(names=names, extra=("gke-ml-lone-vm",))
    return Cloud(GKE, proxy, {"compute": repairer.api.base, **FAST},
                 [_node(fake.node(name), GKE, "a3-highgpu-8g") for name in names],
                 [fake.link(f"projects/{fake_gce.PROJECT}/zones/{fake_gce.ZONE}/instances/{name}") for name in names],
                 [f"instance {name} of managed instance group {fake_gce.GROUP} ({fake_gce.ZONE})" for name in names],
                 {REBOOT: "reset", REPLACE: "recreate"},
                 frozenset({"instances.get", "instanceGroupManagers.get",
                            "instanceGroupManagers.listManagedInstances"}),
                 {REBOOT: "instances.reset", REPLACE: "instanceGroupManagers.recreateInstances"},
                 lambda: [("reset", name) for name in fake.resets] + [("recreate", name) for name in fake.recreates],
                 _node(fake.node("gke-ml-lone-vm"), GKE, "a3-highgpu-8g"),
                 "instance gke-ml-lone-vm is in no zonal managed instance group (its metadata created-by is absent)")


def _aks(arm, n: int) -> Cloud:
    instances = [str(i) for i in range(n)]
    fake, proxy, repairer = arm(instances=instances)
    made = [fake.node(i) for i in instances]
    by_instance = {i: m["metadata"]["name"] for i, m in zip(instances, made)}
    group = fake_azure.GROUP.lower()  # as the providerID writes it
    lone = f"azure:///subscriptions/{fake_azure.SUBSCRIPTION}/resourceGroups/{group}/providers/Microsoft.Compute/" \
           "virtualMachines/aks-gpu-12345678-vm0"  # a node of a VirtualMachines pool: no scale set
    return Cloud(AKS, proxy, {"management": repairer.api.base, **FAST},
                 [_node(m, AKS, "Standard_NC40ads_H100_v5") for m in made],
                 [m["spec"]["providerID"].removeprefix("azure://") for m in made],
                 [f"instance {i} of VM scale set {fake_azure.SCALE_SET} (resource group {group})" for i in instances],
                 {REBOOT: "restart", REPLACE: "redeploy"},
                 frozenset({"virtual_machine_scale_sets_get", "virtual_machine_scale_set_vms_get"}),
                 {REBOOT: "virtual_machine_scale_set_vms_restart", REPLACE: "virtual_machine_scale_set_vms_redeploy"},
                 lambda: [(action, by_instance[i]) for action, i in fake.actions],
                 _node({"metadata": {"name": "aks-gpu-12345678-vm0", "labels": {}}, "spec": {"providerID": lone}},
                       AKS, "Standard_NC40ads_H100_v5"),
                 f"its providerID {lone} is not a VM scale set instance")


@pytest.fixture(params=["gke", "aks"])
def cloud(request):
    """``start(n)``: a :class:`Cloud` of ``n`` machines, on GKE then on AKS."""
    if request.param == "gke":
        return functools.partial(_gke, request.getfixturevalue("gce"))
    return functools.partial(_aks, request.getfixturevalue("arm"))


def _on_the_command_line(c: Cloud, outputs: dict, tmp_path, monkeypatch):
    """The file of ``outputs`` for ``gpuready sweep --outputs``, whose ``--repair`` now goes to ``c``'s fake."""
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(outputs))
    monkeypatch.setattr(gpuready.repair, "after_sweep", functools.partial(gpuready.repair.after_sweep,
                                                                          **c.endpoints))
    return path


def test_the_outputs_are_the_platforms_own():
    assert all(key in GKE_OUTPUTS for key in GKE) and all(key in AKS_OUTPUTS for key in AKS)


def test_a_dry_run_says_what_it_would_do_and_changes_nothing(cloud, fake_kube, logs, tmp_path, capsys,
                                                             monkeypatch):
    c = cloud(5)
    server, outputs = c.kube(fake_kube, logs, {1: "remap"})
    path = _on_the_command_line(c, outputs, tmp_path, monkeypatch)
    assert main(["sweep", "--outputs", str(path), "--timeout", "30", "--repair"]) == 1
    captured = capsys.readouterr()
    line = f"would replace node {c.names[1]} ({c.where[1]}): gpu0.row_remap_failure"
    assert line in captured.err and line in captured.out  # the audit on stderr, and in the table
    assert server.patched == [] and server.evicted == []  # no taint, no annotation, no drain
    assert c.proxy.seen and c.changes() == [] and c.done() == []  # the cloud read, never asked to change
    assert main(["sweep", "--outputs", str(path), "--timeout", "30", "--repair", "--json"]) == 1
    (entry,) = json.loads(capsys.readouterr().out)["repairs"]
    assert entry["outcome"] == "would" and entry["action"] == "replace" and entry["machine"] == c.ids[1]
    assert entry["node"] == c.names[1] and entry["time"].endswith("Z")
    assert entry["text"].startswith(f"{entry['time']} {line}")
    assert c.changes() == [] and server.patched == []


@pytest.mark.parametrize("kind, action", [("remap", REPLACE), ("ecc", REBOOT)])
def test_apply_repairs_exactly_the_failing_nodes_machine_once(cloud, fake_kube, logs, tmp_path, kind, action):
    c = cloud(5)
    running = [pod("trainer-0", "ml", c.names[1]), pod("exporter-x7k2p", "nvidia-gpu", c.names[1], owner="exporter")]
    server, outputs = c.kube(fake_kube, logs, {1: kind}, running=running)
    (entry,) = swept(outputs, tmp_path, Limits(apply=True), **c.endpoints).repairs
    assert entry["outcome"] == "requested" and entry["action"] == action and entry["machine"] == c.ids[1]
    assert f"asked to {action} node {c.names[1]} ({c.where[1]})" in entry["text"]
    assert c.done() == [(c.verbs[action], c.names[1])] and c.changes() == [c.calls[action]]
    assert server.evicted == [("ml", "trainer-0")]  # drained; the DaemonSet's pod left
    now = nodes_of(server)
    assert TAINT in now[c.names[1]]["spec"]["taints"]
    stamp = json.loads(now[c.names[1]]["metadata"]["annotations"][ANNOTATION])
    assert stamp["action"] == action and stamp["outcome"] == "requested" and stamp["machine"] == c.ids[1]
    assert all(ANNOTATION not in (n["metadata"].get("annotations") or {}) for name, n in now.items()
               if name != c.names[1])
    (again,) = swept(outputs, tmp_path, Limits(apply=True), **c.endpoints).repairs  # its node still failing
    assert again["outcome"] == "not repaired" and f"already asked to {action} it" in again["answer"]
    assert c.done() == [(c.verbs[action], c.names[1])] and c.changes() == [c.calls[action]]


def test_max_repairs_one_repairs_one_and_says_why_not_the_other(cloud, fake_kube, logs, tmp_path):
    c = cloud(4)
    server, outputs = c.kube(fake_kube, logs, {0: "remap", 1: "remap"})
    result = swept(outputs, tmp_path, Limits(apply=True, max_unhealthy=50), **c.endpoints)
    assert [(e["node"], e["outcome"]) for e in result.repairs] == [(c.names[0], "requested"),
                                                                   (c.names[1], "not repaired")]
    assert "--max-repairs 1 reached (0 under way before this sweep): a later sweep repairs it" in \
        result.repairs[1]["answer"]
    assert c.done() == [(c.verbs[REPLACE], c.names[0])]
    # the next sweep: the first machine is still being replaced, which counts, so the second still waits
    again = swept(outputs, tmp_path, Limits(apply=True, max_unhealthy=50), **c.endpoints)
    assert [(e["node"], e["outcome"]) for e in again.repairs] == [(c.names[0], "not repaired"),
                                                                   (c.names[1], "not repaired")]
    assert "(1 under way before this sweep)" in again.repairs[1]["answer"]
    assert c.done() == [(c.verbs[REPLACE], c.names[0])]


def test_a_pool_mostly_failing_is_not_repaired_and_says_why(cloud, fake_kube, logs, tmp_path):
    c = cloud(5)
    server, outputs = c.kube(fake_kube, logs, {0: "remap", 1: "ecc", 2: "remap"})
    result = swept(outputs, tmp_path, Limits(apply=True, max_repairs=5), **c.endpoints)
    assert [e["outcome"] for e in result.repairs] == ["not repaired"] * 3
    assert len({e["pool"] for e in result.repairs}) == 1
    assert all(f"3 of the 5 machines of {e['pool']} are failing or under repair (60% > --max-unhealthy 20%)"
               in e["answer"] for e in result.repairs)
    assert c.changes() == [] and server.evicted == []  # quarantined (--apply), neither drained nor annotated
    assert all(ANNOTATION not in (n["metadata"].get("annotations") or {}) for n in nodes_of(server).values())


def test_a_node_no_repair_cures_is_not_repaired(cloud, fake_kube, logs, tmp_path):
    c = cloud(5)
    server, outputs = c.kube(fake_kube, logs, {2: "slow"})
    (entry,) = swept(outputs, tmp_path, Limits(apply=True), **c.endpoints).repairs
    assert entry["node"] == c.names[2] and entry["action"] == "" and entry["outcome"] == "not repaired"
    assert "no reboot or replacement cures what failed (gpu0.bf16_matmul_tflops)" in entry["answer"]
    assert c.changes() == [] and c.done() == []


def test_a_node_the_repairer_does_not_handle_is_said_not_repaired_in_its_words(cloud, fake_kube, logs, tmp_path):
    c = cloud(2)
    server, outputs = fake_kube(c.outputs, nodes=[*c.nodes, c.lone], node_logs={
        **{name: logs() for name in c.names}, c.lone["metadata"]["name"]: logs("ecc")})
    (entry,) = swept(outputs, tmp_path, Limits(apply=True), **c.endpoints).repairs
    assert entry["node"] == c.lone["metadata"]["name"] and entry["outcome"] == "not repaired"
    assert entry["answer"].startswith(c.lone_why)
    assert c.changes() == [] and c.done() == []


def test_a_refusal_by_the_cloud_is_in_the_audit_and_fails_the_run(cloud, fake_kube, logs, tmp_path):
    c = cloud(5)
    c.proxy.plan[c.calls[REBOOT]] = ["client"]
    server, outputs = c.kube(fake_kube, logs, {0: "ecc"})
    result = swept(outputs, tmp_path, Limits(apply=True), **c.endpoints)
    (entry,) = result.repairs
    assert entry["outcome"] == "refused" and "HTTP 403: " in entry["answer"] and "injected client" in entry["answer"]
    assert f"could not reboot node {c.names[0]} ({c.where[0]}): refused" in sweep.render_text(result)
    assert not result.passed and c.done() == []
    stamp = json.loads(nodes_of(server)[c.names[0]]["metadata"]["annotations"][ANNOTATION])
    assert stamp["outcome"] == "refused"  # nothing done: the next sweep may ask again
    (again,) = swept(outputs, tmp_path, Limits(apply=True), **c.endpoints).repairs
    assert again["outcome"] == "requested" and c.done() == [(c.verbs[REBOOT], c.names[0])]


@pytest.mark.parametrize("outputs, variable, cli, what", [
    (GKE, "GOOGLE_OAUTH_ACCESS_TOKEN", "gcloud", "Google Cloud"), (AKS, "AZURE_ACCESS_TOKEN", "az", "Azure")])
def test_no_login_is_said_before_anything_is_swept(fake_kube, tmp_path, capsys, monkeypatch, outputs, variable, cli,
                                                   what):
    monkeypatch.delenv(variable, raising=False)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / cli).write_text("#!/bin/sh\necho 'ERROR: not logged in' >&2\nexit 1\n")
    (bin_dir / cli).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    server, outputs = fake_kube(outputs, nodes=[node("gpu-0", labels=outputs["gpuNodeLabels"])])
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(outputs))
    assert main(["sweep", "--outputs", str(path), "--repair"]) == 2
    assert f"no {what} access token for --repair: set {variable}" in capsys.readouterr().err
    assert server.created == []  # no Job: the sweep did not start


def test_ctrl_c_while_the_cloud_is_asked_is_said_and_the_node_is_not_repaired_twice(cloud, fake_kube, logs,
                                                                                     tmp_path, capsys, monkeypatch):
    c = cloud(5)
    c.proxy.plan[c.calls[REPLACE]] = ["interrupt"]
    server, outputs = c.kube(fake_kube, logs, {4: "remap"})
    path = _on_the_command_line(c, outputs, tmp_path, monkeypatch)
    assert main(["sweep", "--outputs", str(path), "--timeout", "30", "--repair", "--apply"]) == 130
    err = capsys.readouterr().err
    assert f"interrupted while asking to replace node {c.names[4]}" in err and "gpuready: sweep: interrupted" in err
    stamp = json.loads(nodes_of(server)[c.names[4]]["metadata"]["annotations"][ANNOTATION])
    assert stamp["outcome"] == "pending" and stamp["machine"] == c.ids[4]
    assert main(["sweep", "--outputs", str(path), "--timeout", "30", "--repair", "--apply", "--json"]) == 1
    (entry,) = json.loads(capsys.readouterr().out)["repairs"]
    assert entry["outcome"] == "not repaired" and "already asked to replace it" in entry["answer"]
    assert c.changes() == [c.calls[REPLACE]] and c.done() == [(c.verbs[REPLACE], c.names[4])]
