"""``gpuready sweep --repair`` end to end: the sweep on the fake Kubernetes API server, nodes whose providerID names
instances a real moto Auto Scaling group launched, the cloud's calls through the fault proxy. What a user sees: a dry
run that changes nothing and says what it would do; applied, exactly the failing node's machine rebooted or replaced,
once; the limits held and said; the audit in stderr, the table and the JSON."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from gpuready.cli import main
from gpuready.probe import Check
from gpuready.repair import ANNOTATION, ONCE, Limits, _recent, after_sweep
from gpuready.smoke import sweep
from gpuready.smoke.sweep_kubernetes import TAINT
from tests.gpuready.smoke.moto_batch import aws_client

from .conftest import EKS, GROUP, node, nodes_of, pod, swept


def _states(endpoint):
    """Each instance id -> (EC2 state, Auto Scaling lifecycle state or None)."""
    ec2, autoscaling = aws_client("ec2", endpoint), aws_client("autoscaling", endpoint)
    lifecycle = {i["InstanceId"]: i["LifecycleState"]
                 for i in autoscaling.describe_auto_scaling_instances()["AutoScalingInstances"]}
    return {i["InstanceId"]: (i["State"]["Name"], lifecycle.get(i["InstanceId"]))
            for r in ec2.describe_instances()["Reservations"] for i in r["Instances"]}


def _calls(proxy, action):
    return [fault for name, fault in proxy.seen if name == action]


def test_a_dry_run_says_what_it_would_do_and_changes_nothing(aws, group, proxy, fake_kube, logs, tmp_path, capsys):
    ids = group(5)
    server, outputs = fake_kube(EKS, nodes=[node(f"gpu-{i}", ids[i]) for i in range(5)],
                                node_logs={"gpu-0": logs(), "gpu-1": logs("remap"), "gpu-2": logs(),
                                           "gpu-3": logs(), "gpu-4": logs()})
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(outputs))
    assert main(["sweep", "--outputs", str(path), "--timeout", "30", "--repair"]) == 1
    captured = capsys.readouterr()
    line = f"would replace node gpu-1 (instance {ids[1]} of Auto Scaling group {GROUP}): gpu0.row_remap_failure"
    assert line in captured.err and line in captured.out  # the audit on stderr, and in the table
    assert "Repairs:" in captured.out
    assert server.patched == [] and server.evicted == []  # no taint, no annotation, no drain
    assert _calls(proxy, "TerminateInstanceInAutoScalingGroup") == [] and _calls(proxy, "RebootInstances") == []
    assert all(state == ("running", "InService") for state in _states(aws[0]).values())
    assert main(["sweep", "--outputs", str(path), "--timeout", "30", "--repair", "--json"]) == 1
    (entry,) = json.loads(capsys.readouterr().out)["repairs"]
    assert entry["outcome"] == "would" and entry["action"] == "replace" and entry["machine"] == ids[1]
    assert entry["node"] == "gpu-1" and entry["pool"] == GROUP and entry["time"].endswith("Z")


def test_apply_replaces_exactly_the_failing_node_once(aws, group, proxy, fake_kube, logs, tmp_path):
    ids = group(5)
    running = [pod("trainer-0", "ml", "gpu-1"),
               pod("dcgm-exporter-x7k2p", "nvidia-gpu", "gpu-1", owner="dcgm-exporter")]
    server, outputs = fake_kube(EKS, nodes=[node(f"gpu-{i}", ids[i]) for i in range(5)], running=running,
                                node_logs={f"gpu-{i}": logs("remap" if i == 1 else None) for i in range(5)})
    result = swept(outputs, tmp_path, Limits(apply=True))
    (entry,) = result.repairs
    assert entry["outcome"] == "requested" and entry["action"] == "replace" and entry["machine"] == ids[1]
    assert "launches a new instance" in entry["answer"]
    states = _states(aws[0])
    assert states[ids[1]][0] == "terminated"
    assert [i for i, (state, _) in states.items() if state == "terminated"] == [ids[1]]
    assert sum(1 for state, life in states.values() if life == "InService") == 5  # the group launched another
    assert server.evicted == [("ml", "trainer-0")]  # drained; the DaemonSet's pod left
    gpu1 = nodes_of(server)["gpu-1"]
    assert TAINT in gpu1["spec"]["taints"]
    stamp = json.loads(gpu1["metadata"]["annotations"][ANNOTATION])
    assert stamp["action"] == "replace" and stamp["outcome"] == "requested" and stamp["machine"] == ids[1]
    assert all(ANNOTATION not in (n["metadata"].get("annotations") or {}) for name, n in nodes_of(server).items()
               if name != "gpu-1")
    again = swept(outputs, tmp_path, Limits(apply=True))  # its instance gone, its node still failing
    (entry,) = again.repairs
    assert entry["outcome"] == "not repaired" and "already asked to replace it" in entry["answer"]
    assert len(_calls(proxy, "TerminateInstanceInAutoScalingGroup")) == 1


def test_a_reboot_class_failure_reboots_the_instance(aws, group, proxy, fake_kube, logs, tmp_path):
    ids = group(5)
    server, outputs = fake_kube(EKS, nodes=[node(f"gpu-{i}", ids[i]) for i in range(5)],
                                node_logs={f"gpu-{i}": logs("ecc" if i == 3 else None) for i in range(5)})
    (entry,) = swept(outputs, tmp_path, Limits(apply=True)).repairs
    assert entry["action"] == "reboot" and entry["outcome"] == "requested" and "RebootInstances" in entry["answer"]
    assert "gpu0.ecc_uncorrected" in entry["why"]
    assert len(_calls(proxy, "RebootInstances")) == 1 and _calls(proxy, "TerminateInstanceInAutoScalingGroup") == []


def test_max_repairs_one_repairs_one_and_says_why_not_the_other(aws, group, proxy, fake_kube, logs, tmp_path):
    ids = group(4)
    server, outputs = fake_kube(EKS, nodes=[node(f"gpu-{i}", ids[i]) for i in range(4)],
                                node_logs={f"gpu-{i}": logs("remap" if i < 2 else None) for i in range(4)})
    result = swept(outputs, tmp_path, Limits(apply=True, max_unhealthy=50))
    assert [(e["node"], e["outcome"]) for e in result.repairs] == [("gpu-0", "requested"), ("gpu-1", "not repaired")]
    assert "--max-repairs 1 reached" in result.repairs[1]["answer"]
    assert len(_calls(proxy, "TerminateInstanceInAutoScalingGroup")) == 1
    # the next sweep: gpu-0's replacement is under way and counts, so gpu-1 still waits
    again = swept(outputs, tmp_path, Limits(apply=True, max_unhealthy=75))
    assert [(e["node"], e["outcome"]) for e in again.repairs] == [("gpu-0", "not repaired"),
                                                                   ("gpu-1", "not repaired")]
    assert "(1 under way before this sweep)" in again.repairs[1]["answer"]
    assert len(_calls(proxy, "TerminateInstanceInAutoScalingGroup")) == 1


def test_a_pool_mostly_failing_is_not_repaired_and_says_why(aws, group, proxy, fake_kube, logs, tmp_path):
    ids = group(5)
    server, outputs = fake_kube(EKS, nodes=[node(f"gpu-{i}", ids[i]) for i in range(5)],
                                node_logs={f"gpu-{i}": logs("remap" if i < 3 else None) for i in range(5)})
    result = swept(outputs, tmp_path, Limits(apply=True, max_repairs=5))
    assert [e["outcome"] for e in result.repairs] == ["not repaired"] * 3
    assert all(f"3 of the 5 machines of {GROUP} are failing or under repair (60% > --max-unhealthy 20%)" in e["answer"]
               for e in result.repairs)
    assert _calls(proxy, "TerminateInstanceInAutoScalingGroup") == [] and server.evicted == []


def test_a_node_no_repair_cures_is_not_repaired(aws, group, proxy, fake_kube, logs, tmp_path):
    ids = group(5)
    server, outputs = fake_kube(EKS, nodes=[node(f"gpu-{i}", ids[i]) for i in range(5)],
                                node_logs={f"gpu-{i}": logs(slow=i == 2) for i in range(5)})
    (entry,) = swept(outputs, tmp_path, Limits(apply=True)).repairs
    assert entry["node"] == "gpu-2" and entry["action"] == "" and entry["outcome"] == "not repaired"
    assert "no reboot or replacement cures what failed (gpu0.bf16_matmul_tflops)" in entry["answer"]
    assert _calls(proxy, "RebootInstances") == [] and _calls(proxy, "TerminateInstanceInAutoScalingGroup") == []


def test_a_pod_disruption_budget_that_blocks_the_drain_stops_the_repair(aws, group, proxy, fake_kube, logs, tmp_path):
    ids = group(5)
    trainer = pod("trainer-0", "ml", "gpu-1", {"app": "trainer"})
    budget = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
              "metadata": {"name": "trainer", "namespace": "ml"},
              "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "trainer"}}},
              "status": {"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1}}
    server, outputs = fake_kube(EKS, nodes=[node(f"gpu-{i}", ids[i]) for i in range(5)], running=[trainer],
                                pdbs=[budget], node_logs={f"gpu-{i}": logs("remap" if i == 1 else None)
                                                          for i in range(5)})
    (entry,) = swept(outputs, tmp_path, Limits(apply=True, drain_timeout=1.0)).repairs
    assert entry["outcome"] == "not repaired" and "not drained: the eviction of pod ml/trainer-0" in entry["answer"]
    assert "disruption budget" in entry["answer"]
    assert _calls(proxy, "TerminateInstanceInAutoScalingGroup") == [] and server.evicted == []
    gpu1 = nodes_of(server)["gpu-1"]
    assert TAINT in gpu1["spec"]["taints"] and ANNOTATION not in gpu1["metadata"]["annotations"]


@pytest.mark.parametrize("faults", [["throttle", "5xx", "reset"], ["reset-after"]])
def test_faults_on_the_replace_never_replace_a_second_instance(aws, group, proxy, fake_kube, logs, tmp_path,
                                                               faults):
    ids = group(5)
    proxy.plan["TerminateInstanceInAutoScalingGroup"] = list(faults)
    proxy.plan["DescribeAutoScalingInstances"] = ["throttle", "5xx"]
    server, outputs = fake_kube(EKS, nodes=[node(f"gpu-{i}", ids[i]) for i in range(5)],
                                node_logs={f"gpu-{i}": logs("remap" if i == 1 else None) for i in range(5)})
    (entry,) = swept(outputs, tmp_path, Limits(apply=True)).repairs
    assert entry["outcome"] == "requested"
    states = _states(aws[0])
    assert [i for i, (state, _) in states.items() if state == "terminated"] == [ids[1]]
    sent = _calls(proxy, "TerminateInstanceInAutoScalingGroup")
    if faults == ["reset-after"]:  # it took effect, its answer lost: the state read says so, no second call
        assert sent == ["reset-after"] and "the answer was lost" in entry["answer"]
        assert "has left Auto Scaling group" in entry["answer"]
    else:
        assert sent == [*faults, None]


def test_a_refusal_by_the_cloud_is_in_the_audit_and_fails_the_run(aws, group, proxy, fake_kube, logs, tmp_path):
    ids = group(5)
    proxy.plan["RebootInstances"] = ["client"]
    server, outputs = fake_kube(EKS, nodes=[node(f"gpu-{i}", ids[i]) for i in range(5)],
                                node_logs={f"gpu-{i}": logs("ecc" if i == 0 else None) for i in range(5)})
    result = swept(outputs, tmp_path, Limits(apply=True))
    (entry,) = result.repairs
    assert entry["outcome"] == "refused" and "ClientException: injected client (HTTP 400" in entry["answer"]
    assert "could not reboot node gpu-0" in sweep.render_text(result)
    stamp = json.loads(nodes_of(server)["gpu-0"]["metadata"]["annotations"][ANNOTATION])
    assert stamp["outcome"] == "refused"  # nothing done: the next sweep may ask again
    (again,) = swept(outputs, tmp_path, Limits(apply=True)).repairs
    assert again["outcome"] == "requested"
    healthy = sweep.SweepResult(target="kubernetes", rows=[sweep.SweepRow(node="gpu-0", verdict="pass")],
                                repairs=[entry])
    assert healthy.verdict == "pass" and not healthy.passed  # a refused repair alone fails the run


def test_ctrl_c_while_the_cloud_is_asked_is_said_and_the_node_is_not_repaired_twice(aws, group, proxy, fake_kube,
                                                                                     logs, tmp_path, capsys):
    ids = group(5)
    proxy.plan["TerminateInstanceInAutoScalingGroup"] = ["interrupt"]
    server, outputs = fake_kube(EKS, nodes=[node(f"gpu-{i}", ids[i]) for i in range(5)],
                                node_logs={f"gpu-{i}": logs("remap" if i == 4 else None) for i in range(5)})
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(outputs))
    assert main(["sweep", "--outputs", str(path), "--timeout", "30", "--repair", "--apply"]) == 130
    err = capsys.readouterr().err
    assert "interrupted while asking to replace node gpu-4" in err and "gpuready: sweep: interrupted" in err
    stamp = json.loads(nodes_of(server)["gpu-4"]["metadata"]["annotations"][ANNOTATION])
    assert stamp["outcome"] == "pending" and stamp["machine"] == ids[4]
    assert main(["sweep", "--outputs", str(path), "--timeout", "30", "--repair", "--apply", "--json"]) == 1
    (entry,) = json.loads(capsys.readouterr().out)["repairs"]
    assert entry["outcome"] == "not repaired" and "already asked to replace it" in entry["answer"]
    assert _calls(proxy, "TerminateInstanceInAutoScalingGroup") == ["interrupt"]


@pytest.mark.parametrize("age, outcome", [(timedelta(hours=2), "requested"), (timedelta(minutes=59), "not repaired")])
def test_an_annotation_holds_a_repair_for_an_hour(aws, group, proxy, fake_kube, logs, tmp_path, age, outcome):
    ids = group(5)
    old = (datetime.now(timezone.utc) - age).strftime("%Y-%m-%dT%H:%M:%SZ")
    failing = node("gpu-0", ids[0])
    failing["metadata"]["annotations"] = {ANNOTATION: json.dumps({"action": "reboot", "time": old,
                                                                  "outcome": "requested"})}
    server, outputs = fake_kube(EKS, nodes=[failing] + [node(f"gpu-{i}", ids[i]) for i in range(1, 5)],
                                node_logs={f"gpu-{i}": logs("ecc" if i == 0 else None) for i in range(5)})
    (entry,) = swept(outputs, tmp_path, Limits(apply=True)).repairs
    assert entry["outcome"] == outcome and len(_calls(proxy, "RebootInstances")) == (outcome == "requested")
    if outcome != "requested":
        assert "(59 min ago; requested" in entry["answer"] and "not again within the hour" in entry["answer"]


def test_a_karpenter_node_is_replaced_by_deleting_its_nodeclaim(aws, fake_kube, logs, tmp_path):
    claims = [{"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
               "metadata": {"name": f"gpu-x7k9{i}", "labels": {"karpenter.sh/nodepool": "gpu"},
                            "finalizers": ["karpenter.sh/termination"]},
               "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"},
                        "requirements": []},
               "status": {"nodeName": f"gpu-k{i}", "providerID": f"aws:///us-east-1a/i-0{i}23456789abcdef0"}}
              for i in range(5)]
    nodes = [node(f"gpu-k{i}", f"i-0{i}23456789abcdef0", {"karpenter.sh/nodepool": "gpu"}) for i in range(5)]
    trainer = pod("trainer-0", "ml", "gpu-k2")
    server, outputs = fake_kube(EKS, stages=[{"nodes": nodes, "nodeclaims": claims}], running=[trainer],
                                node_logs={f"gpu-k{i}": logs("ecc" if i == 2 else None) for i in range(5)})
    dry = swept(outputs, tmp_path)
    assert "would reboot node gpu-k2 (NodeClaim gpu-x7k92 of Karpenter NodePool gpu" in dry.repairs[0]["text"]
    (entry,) = swept(outputs, tmp_path, Limits(apply=True)).repairs
    assert entry["outcome"] == "requested" and "Karpenter has no reboot: the node is replaced" in entry["answer"]
    assert ("NodeClaim", "gpu-x7k92") in server.deleted and server.evicted == []  # Karpenter drains it
    (again,) = swept(outputs, tmp_path, Limits(apply=True)).repairs
    assert "already asked" in again["answer"]
    assert [d for d in server.deleted if d[0] == "NodeClaim"] == [("NodeClaim", "gpu-x7k92")]


def test_a_node_of_no_auto_scaling_group_is_said_not_repaired(aws, fake_kube, logs, tmp_path):
    server, outputs = fake_kube(EKS, nodes=[node("gpu-auto", "i-0123456789abcdef0")], node_logs={
        "gpu-auto": logs("ecc")})
    (entry,) = swept(outputs, tmp_path, Limits(apply=True)).repairs
    assert entry["outcome"] == "not repaired" and "its platform repairs it by itself" in entry["answer"]


def test_nothing_failing_means_no_audit(aws, group, fake_kube, logs, tmp_path):
    ids = group(2)
    server, outputs = fake_kube(EKS, nodes=[node(f"gpu-{i}", ids[i]) for i in range(2)], logs=logs())
    result = swept(outputs, tmp_path, Limits(apply=True))
    assert result.passed and result.repairs == [] and "Repairs" not in sweep.render_text(result)


@pytest.mark.parametrize("options, said", [
    (["--apply"], "--apply goes with --repair"), (["--max-repairs", "2"], "--max-repairs goes with --repair"),
    (["--max-unhealthy", "30"], "--max-unhealthy goes with --repair")])
def test_repair_options_without_repair_are_a_mistake_to_fix(fake_kube, tmp_path, capsys, options, said):
    server, outputs = fake_kube(EKS, nodes=[node("gpu-0")])
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(outputs))
    assert main(["sweep", "--outputs", str(path), *options]) == 2
    assert said in capsys.readouterr().err and server.created == []


@pytest.mark.parametrize("value", ["0", "101", "lots"])
def test_max_unhealthy_is_a_percentage(value, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["sweep", "--outputs", "x.json", "--repair", "--max-unhealthy", value])
    assert stop.value.code == 2 and "--max-unhealthy" in capsys.readouterr().err


def test_a_platform_without_repair_refuses_it_in_one_line_before_the_sweep():
    from dataclasses import replace

    from gpuready.errors import UserError
    from gpuready_components import platforms

    platforms.register(replace(platforms.require("eks"), name="eks-unrepaired", repair=None))
    try:
        with pytest.raises(UserError) as refused:
            after_sweep(Limits())({"platform": "eks-unrepaired"})
    finally:
        platforms.unregister("eks-unrepaired")
    assert str(refused.value) == "--repair: gpuready repairs no node on platform eks-unrepaired: drop --repair"


@pytest.mark.parametrize("credentials", [True, False])
def test_the_platforms_repairer_gets_the_outputs_the_login_and_the_endpoints_and_repairs_the_sweeps_result(
        credentials):
    """``after_sweep``: the login asked before the sweep; after it, the repairer made from the outputs, the sweep's
    Kubernetes client, the login's and the caller's keywords, and ``repair`` run on the sweep's own result, client,
    progress and clock."""
    import io
    from dataclasses import replace
    from types import SimpleNamespace

    from gpuready.smoke.sweep import SweepResult
    from gpuready_components import platforms

    made, logins = [], []
    fleet = _Fleet({"gpu-1": "eks-gpu"})

    def repairer(outputs, api_client=None, **keywords):
        made.append((outputs, api_client, keywords))
        return fleet
    module = SimpleNamespace(repairer=repairer)
    if credentials:
        module.credentials = lambda: logins.append("asked") or {"token": "t-1"}
    platforms.register(replace(platforms.require("eks"), name="eks-fake-repair", repair=lambda: module))
    try:
        outputs = {"platform": "eks-fake-repair"}
        then = after_sweep(Limits(apply=True, max_unhealthy=100), endpoint="http://127.0.0.1:1")(outputs)
        assert logins == (["asked"] if credentials else []) and made == []  # asked before the sweep; nothing made
        kube = _Node(names=("gpu-1",))
        target = SimpleNamespace(result=SweepResult("kubernetes", rows=[_row("gpu-1")]), core_api=kube, calls=kube,
                                 progress=io.StringIO(), clock=lambda: kube.now)
        if credentials:
            target.api = "the sweep's ApiClient"
        then(target)
    finally:
        platforms.unregister("eks-fake-repair")
    assert made == [(outputs, "the sweep's ApiClient" if credentials else None,
                     {"endpoint": "http://127.0.0.1:1", **({"token": "t-1"} if credentials else {})})]
    assert fleet.asked == [("replace", "gpu-1")] and [e["outcome"] for e in target.result.repairs] == ["requested"]
    assert target.progress.getvalue().endswith(f"gpuready: repair: {target.result.repairs[0]['text']}\n")
    assert kube.deadlines["read_node"] == {1000.0 + 30.0}  # on the sweep's clock


def test_outputs_of_no_known_platform_are_left_to_the_sweep_to_refuse():
    then = after_sweep(Limits())({"platform": "nimbus"})
    assert then(object()) is None


# --- the limits at their boundaries, on both sides ------------------------------------------------------------------

@pytest.mark.parametrize("max_unhealthy, repaired", [(39, False), (40, True)])
def test_a_machine_under_repair_counts_in_the_unhealthy_share(aws, group, proxy, fake_kube, logs, tmp_path,
                                                               max_unhealthy, repaired):
    """gpu-0 fails, gpu-1 is under repair (its instance stopped): 2 of 5 unhealthy, 40%."""
    ids = group(5)
    aws_client("ec2", aws[0]).stop_instances(InstanceIds=[ids[1]])
    server, outputs = fake_kube(EKS, nodes=[node(f"gpu-{i}", ids[i]) for i in range(5)],
                                node_logs={f"gpu-{i}": logs("ecc" if i == 0 else None) for i in range(5)})
    (entry,) = swept(outputs, tmp_path, Limits(apply=True, max_repairs=2, max_unhealthy=max_unhealthy)).repairs
    if repaired:
        assert entry["outcome"] == "requested" and len(_calls(proxy, "RebootInstances")) == 1
    else:
        assert entry["outcome"] == "not repaired" and _calls(proxy, "RebootInstances") == []
        assert f"2 of the 5 machines of {GROUP} are failing or under repair (40% > --max-unhealthy 39%)" in \
            entry["answer"]


@pytest.mark.parametrize("max_repairs", [1, 2])
def test_a_request_left_unanswered_counts_against_max_repairs(aws, group, proxy, fake_kube, logs, tmp_path,
                                                              monkeypatch, max_repairs):
    """The cloud never answers gpu-0's replace (it may have acted): with --max-repairs 1, gpu-1 waits."""
    import gpuready.repair

    monkeypatch.setattr(gpuready.repair, "ASK_GRACE", 1.0)  # the tries at the unanswered call, cut short
    ids = group(5)
    proxy.plan["TerminateInstanceInAutoScalingGroup"] = ["always:reset"]
    server, outputs = fake_kube(EKS, nodes=[node(f"gpu-{i}", ids[i]) for i in range(5)],
                                node_logs={f"gpu-{i}": logs("remap" if i < 2 else None) for i in range(5)})
    first, second = swept(outputs, tmp_path, Limits(apply=True, max_repairs=max_repairs, max_unhealthy=40)).repairs
    assert (first["node"], first["outcome"]) == ("gpu-0", "failed") and "may have reached the cloud" in \
        first["answer"]
    if max_repairs == 1:
        assert (second["node"], second["outcome"]) == ("gpu-1", "not repaired")
        assert "--max-repairs 1 reached" in second["answer"]
        assert ANNOTATION not in (nodes_of(server)["gpu-1"]["metadata"].get("annotations") or {})
    else:
        assert (second["node"], second["outcome"]) == ("gpu-1", "failed")


@pytest.mark.parametrize("age, held", [(ONCE - 1, True), (ONCE, False)])
def test_a_node_asked_about_is_not_repaired_again_within_the_hour(age, held):
    """The window is an hour: a node asked 59:59 ago is held, one asked 60:00 ago is not."""
    now = datetime(2026, 11, 28, 12, 0, 0, tzinfo=timezone.utc)
    asked = (now - timedelta(seconds=age)).strftime("%Y-%m-%dT%H:%M:%SZ")
    why = _recent({ANNOTATION: json.dumps({"action": "replace", "time": asked, "outcome": "requested",
                                           "answer": "accepted"})}, now)
    assert ONCE == 3600
    if held:
        assert why and "already asked to replace it" in why and "not again within the hour" in why
    else:
        assert why is None



def _aws_error(code: str, http: int):
    from botocore.exceptions import ClientError
    return ClientError({"Error": {"Code": code, "Message": "m"}, "ResponseMetadata": {"HTTPStatusCode": http}},
                       "RebootInstances")


class _Status(Exception):
    def __init__(self, status):
        super().__init__("e")
        self.status = status


def test_a_clouds_answer_is_told_apart_retried_refused_or_failed():
    """Throttling (AWS says so by its code, under HTTP 400) is retried, not read as a refusal; a 4xx is a refusal
    (nothing done: the next sweep may ask again); a 5xx is retried, and never a refusal (the cloud may have acted)."""
    from gpuready.repair import _refused, retryable, status
    for code in ("Throttling", "ThrottlingException", "RequestLimitExceeded"):
        assert retryable(_aws_error(code, 400)), code
    assert not retryable(_aws_error("InvalidInstanceID.NotFound", 400))
    assert _refused(_aws_error("InvalidInstanceID.NotFound", 400)) and _refused(_Status(499))
    assert not _refused(_Status(500)) and retryable(_Status(500)) and not _refused(_Status(399))
    assert (status(_aws_error("X", 403)), status(_Status(404)), status(_Status("404")), status(ValueError())) == (
        403, 404, None, None)
    assert status(type("E", (Exception,), {"response": {}})()) is None  # a response without its metadata


class _Pods:
    """A node's pods as the Kubernetes client lists them, on a clock the test moves: a pod evicted leaves
    ``leaves_after`` seconds later; ``answers`` gives a pod's eviction the API server's refusal (its HTTP status and
    the message of its body, or None)."""

    def __init__(self, leaves_after: float, names=("train-0",), answers=None):
        from types import SimpleNamespace
        self.now, self.leaves_after, self.names, self.answers = 100.0, leaves_after, list(names), answers or {}
        self.evicted: dict[str, float] = {}
        self.api_client = SimpleNamespace(sanitize_for_serialization=lambda value: value)
        self.deadlines: list[float] = []

    def list_pod_for_all_namespaces(self, field_selector):
        assert field_selector == "spec.nodeName=gpu-1"  # this node's pods, not the cluster's
        return {"items": [{"metadata": {"name": name, "namespace": "team-a"}, "status": {"phase": "Running"}}
                          for name in self.names
                          if name not in self.evicted or self.now < self.evicted[name] + self.leaves_after]}

    def create_namespaced_pod_eviction(self, name, namespace, body):
        from kubernetes.client.exceptions import ApiException
        # the Eviction API's object, which a PodDisruptionBudget guards (a pod deleted outright would not be)
        assert body == {"apiVersion": "policy/v1", "kind": "Eviction",
                        "metadata": {"name": name, "namespace": namespace}}
        assert namespace == "team-a"
        if name in self.answers:
            status, message = self.answers[name]
            error = ApiException(status=status)
            error.body = json.dumps({"message": message}) if message else ""
            if status == 404:  # gone already
                self.names.remove(name)
            raise error
        self.evicted[name] = self.now

    def calls(self, call, *args, deadline, **kwargs):
        self.deadlines.append(deadline)
        return call(*args, **kwargs)

    def sleep(self, seconds):
        self.now += seconds

    def drain(self, timeout: float):
        import io
        from types import SimpleNamespace

        from kubernetes.client.exceptions import ApiException

        from gpuready.repair import drain
        client = SimpleNamespace(exceptions=SimpleNamespace(ApiException=ApiException))  # what drain reads of calls
        caller = type("Calls", (), {"client": client, "__call__": lambda _, *a, **k: self.calls(*a, **k)})()
        progress = io.StringIO()
        why = drain(self, caller, "gpu-1", timeout, progress, clock=lambda: self.now, sleep=self.sleep)
        return why, progress.getvalue()


@pytest.mark.parametrize("timeout, leaves_after, why", [
    (10.0, 9.0, None),
    (10.0, 10.0, None),
    (10.0, 10.5, "1 pods still on it after 10 s (team-a/train-0)"),
    (2.0, 3.0, "1 pods still on it after 2 s (team-a/train-0)"),
])
def test_a_drain_waits_its_timeout_for_the_pods_to_leave_and_not_longer(timeout, leaves_after, why):
    pods = _Pods(leaves_after)
    assert pods.drain(timeout) == (why, f"gpuready: draining gpu-1: evicting 1 pods (PodDisruptionBudgets "
                                        f"respected, at most {timeout:g} s)\n")
    assert set(pods.deadlines) == {100.0 + timeout}  # every call bounded by the drain's own deadline
    assert pods.now <= 100.0 + timeout + 1e-9  # never waited past it


def test_a_pod_gone_before_its_eviction_is_passed_over_and_the_next_evicted():
    pods = _Pods(1.0, names=("train-0", "train-1"), answers={"train-0": (404, None)})
    assert pods.drain(10.0)[0] is None
    assert list(pods.evicted) == ["train-1"]


@pytest.mark.parametrize("message, said", [
    (None, "a PodDisruptionBudget forbids it"),
    ("Cannot evict pod as it would violate the pod's disruption budget.",
     "Cannot evict pod as it would violate the pod's disruption budget."),
])
def test_an_eviction_a_budget_refuses_stops_the_drain_and_says_why(message, said):
    pods = _Pods(1.0, names=("train-0", "train-1"), answers={"train-0": (429, message)})
    assert pods.drain(30.0)[0] == f"the eviction of pod team-a/train-0 was refused for 30 s ({said})"
    assert pods.evicted == {}  # the next pod is left where it is: the node is not repaired


def test_an_eviction_refused_otherwise_is_raised():
    from kubernetes.client.exceptions import ApiException
    pods = _Pods(1.0, answers={"train-0": (403, "forbidden")})
    with pytest.raises(ApiException):
        pods.drain(30.0)


def test_a_node_with_nothing_to_evict_is_drained_at_once_and_quietly():
    pods = _Pods(1.0, names=())
    assert pods.drain(30.0) == (None, "")
    assert pods.now == 100.0


def test_an_error_is_said_in_one_line_with_the_clouds_code_status_and_request():
    from botocore.exceptions import ClientError
    from kubernetes.client.exceptions import ApiException

    from gpuready.repair import said
    full = ClientError({"Error": {"Code": "IncorrectState", "Message": "the instance\nis stopping"},
                        "ResponseMetadata": {"HTTPStatusCode": 409, "RequestId": "r-1"}}, "RebootInstances")
    assert said(full) == "IncorrectState: the instance is stopping (HTTP 409, request r-1)"
    bare = type("E", (Exception,), {"response": {"Error": {"Code": "X", "Message": "y"}}})()
    assert said(bare) == "X: y (HTTP None, request -)"
    refused = ApiException(status=429, reason="Too Many Requests")
    refused.body = json.dumps({"message": "Cannot evict pod as it would violate the pod's disruption budget."})
    assert said(refused) == "ApiException: Cannot evict pod as it would violate the pod's disruption budget."
    garbled = ApiException(status=500, reason="Internal")
    garbled.body = "<html>oops</html>"
    assert said(garbled) == "ApiException: " + " ".join(str(garbled).split())
    assert said(ConnectionResetError("peer reset")) == "ConnectionResetError: peer reset"
    assert len(said(ValueError("x" * 400))) == 300 and said(ValueError("x" * 400)).endswith("x" * 10)
    assert said(ValueError("y" * 286)) == "ValueError: " + "y" * 286  # 298: whole
    assert said(ValueError("y" * 290))[-1] == "y" and len(said(ValueError("y" * 290))) == 300


def test_an_answer_without_an_error_part_is_no_throttling_and_no_crash():
    from gpuready.repair import retryable
    for response in ({}, {"ResponseMetadata": {"HTTPStatusCode": 400}}, "text"):
        error = type("E", (Exception,), {"response": response})()
        assert retryable(error) is False


@pytest.mark.parametrize("meta, status, evicted", [
    ({}, {"phase": "Running"}, True),
    ({}, None, True),  # no status yet: a pod being made is evicted, not passed over
    ({}, {"phase": "Pending"}, True),
    ({}, {"phase": "Succeeded"}, False),
    ({}, {"phase": "Failed"}, False),
    ({"ownerReferences": [{"kind": "DaemonSet", "name": "dcgm-exporter"}]}, {"phase": "Running"}, False),
    ({"ownerReferences": [{"kind": "ReplicaSet", "name": "web"}]}, {"phase": "Running"}, True),
    ({"annotations": {"kubernetes.io/config.mirror": "abc"}}, {"phase": "Running"}, False),
    ({"annotations": {"kubernetes.io/config.mirror": "abc"}, "labels": {"app": "x"}}, {"phase": "Running"}, False),
    ({"labels": {"app.kubernetes.io/name": "gpuready-sweep"}}, {"phase": "Running"}, False),
    ({"labels": {"app.kubernetes.io/name": "other"}}, {"phase": "Running"}, True),
    ({"labels": {"gpuready-sweep": "app.kubernetes.io/name"}}, {"phase": "Running"}, True),
    ({"annotations": {"other": "x"}, "labels": {"app.kubernetes.io/name": "gpuready-sweep"}}, {"phase": "Running"},
     False),
])
def test_a_drain_evicts_what_kubectl_drain_would_and_leaves_the_rest(meta, status, evicted):
    """DaemonSet pods come back at once, a mirror pod is the kubelet's own, the sweep's pods are the probe that
    judged the node, and a finished pod holds nothing: none of them is evicted."""
    pods = _Pods(1.0, names=())
    listed = {"metadata": {"name": "p", "namespace": "team-a", **meta}, **({"status": status} if status else {})}
    pods.list_pod_for_all_namespaces = lambda field_selector: {
        "items": [] if pods.evicted else [listed]}
    assert pods.drain(30.0)[0] is None
    assert (list(pods.evicted) == ["p"]) is evicted


def test_the_pods_a_drain_left_are_named_five_at_most():
    names = [f"train-{i}" for i in range(7)]
    pods = _Pods(60.0, names=names)
    assert pods.drain(5.0)[0] == ("7 pods still on it after 5 s (team-a/train-0, team-a/train-1, team-a/train-2, "
                                  "team-a/train-3, team-a/train-4)")


def test_a_drain_looks_again_every_two_seconds_and_its_last_wait_ends_at_its_deadline():
    pods = _Pods(60.0)
    slept = []
    pods.sleep = lambda seconds: (slept.append(seconds), setattr(pods, "now", pods.now + seconds))
    assert pods.drain(4.5)[0] == "1 pods still on it after 4.5 s (team-a/train-0)"
    assert slept == [2.0, 2.0, 0.5] and pods.now == 104.5


class _Cloud:
    """A cloud call answering from a script (a string: the answer; an exception: raised), on a clock the test moves,
    with the machine's state read between tries (``under_way``: what it says after each try, None: nothing)."""

    def __init__(self, *answers, under_way=()):
        self.answers, self.under_ways, self.now, self.slept, self.calls = list(answers), list(under_way), 0.0, [], 0

    def call(self, machine):
        self.calls += 1
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def under_way(self, machine):
        state = self.under_ways.pop(0) if self.under_ways else None
        if isinstance(state, BaseException):
            raise state
        return state

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds

    def ask(self, deadline=60.0):
        from gpuready.repair import Machine, _ask
        machine = Machine(node="gpu-1", pool="eks-gpu", id="i-1", where="instance i-1 of Auto Scaling group eks-gpu")
        return _ask(self.call, machine, self, deadline, lambda: self.now, self.sleep)


def test_asking_the_cloud_answers_at_once_without_a_word_of_retries():
    assert _Cloud("accepted").ask() == ("requested", "accepted")


def test_a_throttled_request_is_asked_again_after_its_pause_and_says_what_it_met():
    cloud = _Cloud(_aws_error("Throttling", 400), "accepted")
    assert cloud.ask() == ("requested", "accepted (after Throttling: m (HTTP 400, request -))")
    assert cloud.slept == [0.5] and cloud.calls == 2


@pytest.mark.parametrize("status, outcome", [(403, "refused"), (409, "refused"), (501, "failed")])
def test_an_answer_that_is_no_passing_fault_is_said_as_a_refusal_or_a_failure(status, outcome):
    cloud = _Cloud(_aws_error("Nope", status))
    assert cloud.ask() == (outcome, f"Nope: m (HTTP {status}, request -)")
    assert cloud.slept == []


@pytest.mark.parametrize("deadline, tries", [(0.5, 1), (0.51, 2), (1.5, 2), (1.51, 3), (3.5, 3), (3.51, 4)])
def test_retries_stop_when_the_next_pause_would_reach_the_deadline(deadline, tries):
    """Pauses of 0.5, 1, 2 s after tries at 0, 0.5, 1.5 s: a retry is made only if its pause ends before the
    deadline."""
    cloud = _Cloud(*[_aws_error("Throttling", 400)] * 5)
    outcome, answer = cloud.ask(deadline)
    assert outcome == "failed" and cloud.calls == tries
    assert answer == (f"Throttling: m (HTTP 400, request -), still after {tries} tries: the request may have "
                      f"reached the cloud")


def test_a_lost_answer_whose_request_took_effect_is_not_sent_again():
    lost = ConnectionResetError("peer reset")
    cloud = _Cloud(lost, "never sent", under_way=["instance i-1 is shutting-down"])
    assert cloud.ask() == ("requested", "the answer was lost (ConnectionResetError: peer reset), but instance i-1 "
                                        "is shutting-down: the request took effect")
    assert cloud.calls == 1


def test_a_state_that_cannot_be_read_is_no_reason_to_stop_asking():
    cloud = _Cloud(ConnectionResetError("peer reset"), "accepted", under_way=[ConnectionResetError("again")])
    assert cloud.ask() == ("requested", "accepted (after ConnectionResetError: peer reset)")
    assert cloud.calls == 2


@pytest.mark.parametrize("annotations", [
    None, {}, {"team": "a", "cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"}])
def test_the_repair_stamp_is_added_beside_the_nodes_other_annotations_as_stable_json(annotations):
    from types import SimpleNamespace

    from gpuready.repair import annotate
    node = {"metadata": {"name": "gpu-1", "resourceVersion": "7",
                         **({"annotations": annotations} if annotations is not None else {})}}
    patched = []
    api = SimpleNamespace(api_client=SimpleNamespace(sanitize_for_serialization=lambda value: value),
                          read_node=lambda name: node, patch_node=lambda name, body: patched.append((name, body)))
    annotate(api, lambda call, *args, deadline: call(*args), "gpu-1",
             {"time": "2026-11-29T00:00:00Z", "action": "replace", "outcome": "requested"}, deadline=60.0)
    ((name, body),) = patched
    assert name == "gpu-1" and body[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": "7"}
    assert body[1] == {"op": "add", "path": "/metadata/annotations", "value": {
        **(annotations or {}),
        ANNOTATION: '{"action": "replace", "outcome": "requested", "time": "2026-11-29T00:00:00Z"}'}}


# --- one node's repair, step by step: quarantine, drain, stamp, ask, stamp again ------------------------------------

class _Node:
    """One node on an API server as the repair's Kubernetes calls see it: read, JSON-patched (each stamp of
    ANNOTATION kept, parsed), its pods listed and evicted (an evicted pod is gone after the next pause), on a clock
    the test moves; every call's deadline kept by the call's name. ``refuse``: call name -> the exceptions its next
    calls raise, in turn (None: answered)."""

    def __init__(self, pods=(), refuse=None, names=("gpu-1",), annotations=None):
        from types import SimpleNamespace

        from kubernetes.client.exceptions import ApiException
        self.now, self.pods, self.evicted, self.gone, self.refuse = 1000.0, list(pods), set(), set(), refuse or {}
        self.nodes = {name: {"metadata": {"name": name, "resourceVersion": "1", "annotations": {
            "team": "a", **(annotations or {}).get(name, {})}}, "spec": {}} for name in names}
        self.node = self.nodes[names[0]]
        self.deadlines: dict[str, set[float]] = {}
        self.stamps: list[dict] = []
        self.api_client = SimpleNamespace(sanitize_for_serialization=lambda value: value)
        self.client = SimpleNamespace(exceptions=SimpleNamespace(ApiException=ApiException))

    def __call__(self, call, *args, deadline, **kwargs):
        self.deadlines.setdefault(call.__name__, set()).add(deadline)
        refusals = self.refuse.get(call.__name__) or []
        error = refusals.pop(0) if refusals else None
        if error is not None:
            raise error
        return call(*args, **kwargs)

    def read_node(self, name):
        import copy
        return copy.deepcopy(self.nodes[name])

    def patch_node(self, name, body):
        node = self.nodes[name]
        test, *ops = body
        assert test == {"op": "test", "path": "/metadata/resourceVersion", "value": node["metadata"][
            "resourceVersion"]}
        for op in ops:
            parent, key = op["path"].strip("/").split("/")
            node[parent][key] = op["value"]
            if key == "annotations" and ANNOTATION in op["value"]:
                self.stamps.append(json.loads(op["value"][ANNOTATION]))
        node["metadata"]["resourceVersion"] = str(int(node["metadata"]["resourceVersion"]) + 1)

    def list_pod_for_all_namespaces(self, field_selector):
        return {"items": [{"metadata": {"name": name, "namespace": "team-a"}, "status": {"phase": "Running"}}
                          for name in self.pods if name not in self.gone]}

    def create_namespaced_pod_eviction(self, name, namespace, body):
        self.evicted.add(name)

    def sleep(self, seconds):
        self.now += seconds
        self.gone |= self.evicted


class _Fleet:
    """A repairer whose machines i-N stand behind nodes gpu-N: ``pools``, node -> its pool (a node left out has no
    machine); ``sizes``, pool -> its size (else the nodes in it); ``under``, node -> what is under way on its machine;
    ``answers``, node -> the cloud's answer to its repair; ``broken``, node -> what asking for its machine raises. An
    exception in ``sizes``, ``under`` or ``answers`` is raised. ``drains``: None where it has no ``drains`` (the core
    drains), else what its ``drains`` says. Every state read and repair asked is kept."""

    def __init__(self, pools, sizes=None, under=None, answers=None, broken=None, drains=None):
        self.pools, self.sizes, self.under = pools, sizes or {}, under or {}
        self.answers, self.broken = answers or {}, broken or {}
        self.read: list[str] = []
        self.asked: list[tuple[str, str]] = []
        if drains is not None:
            self.drains = lambda machine: drains

    def machine(self, node):
        from gpuready.repair import Machine
        name = node["metadata"]["name"]
        if name in self.broken:
            raise self.broken[name]
        pool = self.pools.get(name)
        number = name.split("-")[1]
        return Machine(name, pool, f"i-{number}", f"instance i-{number} of {pool}") if pool else None

    def pool_size(self, machine):
        size = self.sizes.get(machine.pool, sum(1 for pool in self.pools.values() if pool == machine.pool))
        if isinstance(size, BaseException):
            raise size
        return size

    def under_way(self, machine):
        self.read.append(machine.node)
        state = self.under.get(machine.node)
        if isinstance(state, BaseException):
            raise state
        return state

    def _ask(self, action, machine):
        self.asked.append((action, machine.node))
        answer = self.answers.get(machine.node, f"{action} of {machine.id} accepted")
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def reboot(self, machine):
        return self._ask("reboot", machine)

    def replace(self, machine):
        return self._ask("replace", machine)


def _act_on(kube, machines, action="replace", detail="row remapping failed", drain_timeout=120.0):
    """``_act`` on gpu-1 (its machine i-1): the audit it fills, and what it printed."""
    import io

    from gpuready.repair import Audit, Machine, _act
    from gpuready.smoke.sweep import SweepRow
    machine = Machine(node="gpu-1", pool="eks-gpu", id="i-1", where="instance i-1 of Auto Scaling group eks-gpu")
    audit = Audit("2026-11-29T03:00:00Z", "gpu-1", "i-1", machine.where, action, "no spare rows", "not repaired",
                  pool="eks-gpu")
    progress = io.StringIO()
    _act(audit, machine, SweepRow("gpu-1", detail=detail), machines, kube, kube,
         Limits(apply=True, drain_timeout=drain_timeout), progress, lambda: kube.now, kube.sleep)
    return audit, progress.getvalue()


def test_a_repair_quarantines_drains_stamps_asks_and_stamps_the_answer_in_that_order(capsys):
    kube = _Node(pods=["train-0"])
    audit, said = _act_on(kube, _Fleet({}))
    assert (audit.outcome, audit.answer) == ("requested", "replace of i-1 accepted")
    taint = kube.node["spec"]["taints"]
    assert [t["key"] for t in taint] == [TAINT["key"]] and kube.gone == {"train-0"}
    assert kube.stamps == [
        {"action": "replace", "time": "2026-11-29T03:00:00Z", "machine": "i-1", "outcome": "pending", "answer": ""},
        {"action": "replace", "time": "2026-11-29T03:00:00Z", "machine": "i-1", "outcome": "requested",
         "answer": "replace of i-1 accepted"}]
    assert kube.node["metadata"]["annotations"]["team"] == "a"
    assert said.startswith("gpuready: draining gpu-1: evicting 1 pods") and capsys.readouterr().out == ""
    # the node's reads and patches are bounded by READ_GRACE from when they start, the drain by its own timeout
    from gpuready.repair import READ_GRACE
    assert kube.deadlines["read_node"] == kube.deadlines["patch_node"] == {1000.0 + READ_GRACE, 1002.0 + READ_GRACE}
    assert kube.deadlines["list_pod_for_all_namespaces"] == {1000.0 + 120.0}


def test_a_platform_that_drains_by_itself_is_not_drained_by_the_core():
    kube = _Node(pods=["train-0"])
    audit, said = _act_on(kube, _Fleet({}, drains=True))
    assert audit.outcome == "requested" and kube.gone == set() and said == ""
    assert "list_pod_for_all_namespaces" not in kube.deadlines


def test_a_node_that_does_not_drain_in_time_is_left_quarantined_and_its_machine_not_asked():
    kube = _Node(pods=["train-0"])
    kube.create_namespaced_pod_eviction = lambda name, namespace, body: None  # accepted; the pod never leaves
    machines = _Fleet({})
    audit, _ = _act_on(kube, machines, drain_timeout=5.0)
    assert (audit.outcome, audit.answer) == (
        "not repaired", "not drained: 1 pods still on it after 5 s (team-a/train-0); it stays quarantined")
    assert machines.asked == [] and kube.stamps == [] and kube.node["spec"]["taints"]


def test_a_node_that_cannot_be_prepared_is_never_asked_about_and_says_why():
    from kubernetes.client.exceptions import ApiException
    forbidden = ApiException(status=403, reason="Forbidden")
    forbidden.body = json.dumps({"message": "nodes \"gpu-1\" is forbidden"})
    kube, machines = _Node(refuse={"patch_node": [forbidden]}), _Fleet({})
    audit, _ = _act_on(kube, machines)
    assert (audit.outcome, audit.answer) == (
        "not repaired", "not asked: the node could not be prepared (ApiException: nodes \"gpu-1\" is forbidden)")
    assert machines.asked == []


def test_an_answer_the_node_cannot_record_stands_and_says_its_record_is_pending():
    kube = _Node(refuse={"patch_node": [None, None, ConnectionResetError("peer reset")]})
    audit, _ = _act_on(kube, _Fleet({}, answers={"gpu-1": "operation-42"}), action="reboot")
    assert (audit.outcome, audit.answer) == (
        "requested", f"operation-42 (the node's {ANNOTATION} still says pending: ConnectionResetError: peer reset)")
    assert [s["outcome"] for s in kube.stamps] == ["pending"]


def test_a_long_answer_is_recorded_on_the_node_in_its_first_500_characters():
    kube = _Node()
    audit, _ = _act_on(kube, _Fleet({}, answers={"gpu-1": "x" * 499 + "yz"}))
    assert audit.answer == "x" * 499 + "yz" and kube.stamps[-1]["answer"] == "x" * 499 + "y"


def test_ctrl_c_while_asking_is_said_interrupted_and_the_pending_stamp_stays():
    from gpuready.repair import Audit, Machine, _act
    from gpuready.smoke.sweep import SweepRow
    kube = _Node()
    audit = Audit("2026-11-29T03:00:00Z", "gpu-1", "i-1", "", "replace", "no spare rows", "not repaired")
    with pytest.raises(KeyboardInterrupt):
        _act(audit, Machine(node="gpu-1", pool="eks-gpu", id="i-1", where=""), SweepRow("gpu-1"),
             _Fleet({}, answers={"gpu-1": KeyboardInterrupt()}), kube, kube, Limits(apply=True), None, lambda: kube.now, kube.sleep)
    assert (audit.outcome, audit.answer) == ("interrupted", f"the request may have reached the cloud; the node "
                                             f"carries {ANNOTATION}, so no sweep repairs it again within the hour")
    assert [s["outcome"] for s in kube.stamps] == ["pending"]


# --- the audit line, the rows acted on, the pool's share, the stamp's clock -----------------------------------------

@pytest.mark.parametrize("where, why, text", [
    ("instance i-1", "no spare rows", "t node gpu-1 not repaired (instance i-1): held; it failed no spare rows"),
    ("", "no spare rows", "t node gpu-1 not repaired: held; it failed no spare rows"),
    ("instance i-1", "", "t node gpu-1 not repaired (instance i-1): held"),
])
def test_an_audit_line_names_the_machine_and_the_failure_only_where_known(where, why, text):
    from gpuready.repair import Audit
    assert Audit("t", "gpu-1", "i-1", where, "replace", why, "not repaired", answer="held").text() == text
    would = Audit("t", "gpu-1", "i-1", where, "replace", "no spare rows", "would").text()
    assert would == ("t would replace node gpu-1 (instance i-1): no spare rows" if where else
                     "t would replace node gpu-1: no spare rows")


@pytest.mark.parametrize("verdict, checks, detail, acted_on", [
    ("fail", [Check("gpu0.row_remap_failure", "fail", measured="Yes")], "", True),
    ("fail", [], "advertises no allocatable nvidia.com/gpu: the device plugin is not running there", True),
    ("fail", [], "advertises no allocatable GPU: no ResourceSlice lists a GPU of it", True),
    ("fail", [], "the probe's pod never started (ImagePullBackOff)", False),  # the node's GPUs are not the cause
    ("fail", [], "Advertises no allocatable", False),
    ("warn", [Check("gpu0.clocks", "warn")], "", False),
])
def test_repair_acts_on_a_failed_probe_or_a_node_without_gpus_and_nothing_else(verdict, checks, detail, acted_on):
    from gpuready.repair import failing
    from gpuready.smoke.sweep import SweepRow
    assert failing(SweepRow("gpu-1", verdict=verdict, detail=detail, checks=checks)) is acted_on


def _too_broad_in(size, members, failing, max_unhealthy):
    """Why a pool of ``size`` machines (``members`` of them nodes the sweep saw, the first ``failing`` failing) is
    not repaired under ``--max-unhealthy``, or None."""
    from gpuready.repair import Machine, _too_broad
    machines = {f"gpu-{i}": Machine(f"gpu-{i}", "eks-gpu", f"i-{i}", "") for i in range(members)}
    return _too_broad("eks-gpu", machines["gpu-0"], machines, {f"gpu-{i}" for i in range(failing)}, {},
                      _Fleet({}, sizes={"eks-gpu": size}), Limits(max_unhealthy=max_unhealthy), lambda read: read())


@pytest.mark.parametrize("size, members, failing, max_unhealthy, share", [
    (10, 1, 1, 10, None),  # one of ten: 10%, the pool's size counts its machines the sweep did not see
    (10, 1, 1, 9, "1 of the 10 machines of eks-gpu are failing or under repair (10% > --max-unhealthy 9%)"),
    (1, 1, 1, 99, "1 of the 1 machines of eks-gpu are failing or under repair (100% > --max-unhealthy 99%)"),
    (1, 1, 1, 100, None),
    # a pool that reads smaller than the nodes seen in it (it is shrinking): counted by its nodes
    (1, 4, 1, 25, None),
    (0, 4, 2, 49, "2 of the 4 machines of eks-gpu are failing or under repair (50% > --max-unhealthy 49%)"),
])
def test_the_unhealthy_share_counts_the_pool_by_its_size_or_its_nodes_whichever_is_more(size, members, failing,
                                                                                        max_unhealthy, share):
    why = _too_broad_in(size, members, failing, max_unhealthy)
    if share is None:
        assert why is None
    else:
        assert why == f"{share}: a cause that broad (a driver, an image, a zone) is not one bad GPU, and repairing " \
                      "the machines would not cure it; nothing repaired there"


def test_a_pool_whose_size_cannot_be_read_is_not_repaired_and_says_why():
    why = _too_broad_in(ConnectionResetError("peer reset"), 1, 1, 100)
    assert why == "the size of eks-gpu could not be read (ConnectionResetError: peer reset), so the unhealthy " \
                  "share cannot be held"


@pytest.mark.parametrize("answer, said", [("op-1", "requested: op-1"), ("", "requested: no answer recorded"),
                                          (None, "requested: no answer recorded")])
def test_a_held_node_says_when_it_was_asked_about_and_what_the_cloud_answered(answer, said):
    now = datetime(2026, 11, 28, 12, 30, 0, tzinfo=timezone.utc)
    stamp = {"action": "reboot", "time": "2026-11-28T12:00:00Z", "outcome": "requested",
             **({"answer": answer} if answer is not None else {})}
    assert _recent({ANNOTATION: json.dumps(stamp)}, now) == (
        f"already asked to reboot it at 2026-11-28T12:00:00Z (30 min ago; {said}): not again within the hour")


def test_an_unreadable_stamp_is_quoted_in_its_first_80_characters_with_how_to_remove_it():
    raw = "{" + "x" * 100
    why = _recent({ANNOTATION: raw}, datetime(2026, 11, 28, tzinfo=timezone.utc))
    assert why == f"it carries an unreadable {ANNOTATION} ({raw[:80]!r}): remove it (`kubectl annotate node NODE " \
                  f"{ANNOTATION}-`) to let gpuready repair the node"


def test_the_stamps_time_is_utc_whatever_the_machines_zone(monkeypatch):
    import time

    from gpuready.repair import _stamp
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        assert _stamp(datetime(2026, 11, 29, 12, 0, tzinfo=timezone(timedelta(hours=2)))) == "2026-11-29T10:00:00Z"
    finally:
        monkeypatch.undo()
        time.tzset()


# --- the decisions over a sweep's rows, on fakes: which node, within which limit, said how ---------------------------

NOW = datetime(2026, 11, 29, 3, 0, 0, tzinfo=timezone.utc)


def _row(name, failure="remap"):
    """A sweep row of node ``name``: its probe failing with no spare rows left (``remap``: replace), an uncorrected
    ECC error (``ecc``: reboot), slow (``slow``: nothing cures it), or passing (None)."""
    from gpuready.smoke.sweep import SweepRow
    checks = {"remap": [Check("gpu0.row_remap_failure", "fail", measured="Yes")],
              "ecc": [Check("gpu0.ecc_uncorrected", "fail", measured=3)],
              "slow": [Check("gpu0.bf16_matmul_tflops", "fail", measured=310.0)], None: []}[failure]
    return SweepRow(name, verdict="fail" if failure else "pass", detail=f"probe {failure or 'passed'}", checks=checks)


def _decided(rows, fleet, limits=Limits(apply=True, max_unhealthy=100), kube=None):
    """``repair`` on ``rows`` with ``fleet``: the audit entries, what it printed, and the cluster."""
    import io

    from gpuready.repair import repair
    from gpuready.smoke.sweep import SweepResult
    kube = kube or _Node(names=tuple(r.node for r in rows))
    result, progress = SweepResult("kubernetes", rows=list(rows)), io.StringIO()
    repair(result, fleet, kube, kube, limits, progress=progress, clock=lambda: kube.now, now=lambda: NOW,
           sleep=kube.sleep)
    return result.repairs, progress.getvalue(), kube


def test_each_failing_node_gets_one_audit_entry_in_node_order_and_a_line_each():
    fleet = _Fleet({"gpu-1": "eks-gpu", "gpu-2": "eks-gpu", "gpu-3": "eks-gpu"})
    repairs, said, _ = _decided([_row("gpu-3", "ecc"), _row("gpu-2", None), _row("gpu-1")], fleet,
                                Limits(apply=True, max_repairs=2, max_unhealthy=100))
    assert [{k: e[k] for k in ("time", "node", "machine", "where", "action", "outcome", "answer", "pool")}
            for e in repairs] == [
        {"time": "2026-11-29T03:00:00Z", "node": "gpu-1", "machine": "i-1", "where": "instance i-1 of eks-gpu",
         "action": "replace", "outcome": "requested", "answer": "replace of i-1 accepted", "pool": "eks-gpu"},
        {"time": "2026-11-29T03:00:00Z", "node": "gpu-3", "machine": "i-3", "where": "instance i-3 of eks-gpu",
         "action": "reboot", "outcome": "requested", "answer": "reboot of i-3 accepted", "pool": "eks-gpu"}]
    assert repairs[0]["why"].startswith("gpu0.row_remap_failure (")
    assert said == "".join(f"gpuready: repair: {e['text']}\n" for e in repairs)
    assert fleet.asked == [("replace", "gpu-1"), ("reboot", "gpu-3")]


def test_nothing_is_read_or_said_when_no_node_failed():
    fleet = _Fleet({"gpu-1": "eks-gpu"})
    assert _decided([_row("gpu-1", None)], fleet)[:2] == ([], "")
    assert fleet.read == []


@pytest.mark.parametrize("max_repairs", [1, 2])
def test_a_dry_run_counts_what_it_would_repair_against_max_repairs(max_repairs):
    fleet = _Fleet({"gpu-1": "eks-gpu", "gpu-2": "eks-gpu"})
    repairs, _, kube = _decided([_row("gpu-1"), _row("gpu-2")], fleet,
                                Limits(max_repairs=max_repairs, max_unhealthy=100))
    assert [e["outcome"] for e in repairs] == ["would", "would" if max_repairs == 2 else "not repaired"]
    if max_repairs == 1:
        assert repairs[1]["answer"] == "--max-repairs 1 reached (0 under way before this sweep): a later sweep " \
                                       "repairs it"
    assert fleet.asked == [] and kube.stamps == [] and "patch_node" not in kube.deadlines


def test_a_refusal_did_nothing_so_the_next_node_may_be_repaired():
    fleet = _Fleet({"gpu-1": "eks-gpu", "gpu-2": "eks-gpu"}, answers={"gpu-1": _Status(403)})
    repairs, _, _ = _decided([_row("gpu-1"), _row("gpu-2")], fleet, Limits(apply=True, max_unhealthy=100))
    assert [e["outcome"] for e in repairs] == ["refused", "requested"]


def test_a_node_whose_machine_cannot_be_told_is_left_alone_and_says_why():
    from kubernetes.client.exceptions import ApiException
    fleet = _Fleet({"gpu-1": "eks-gpu", "gpu-2": "eks-gpu"}, broken={"gpu-1": ValueError("providerID garbled")})
    forbidden = ApiException(status=403, reason="Forbidden")
    forbidden.body = json.dumps({"message": "nodes \"gpu-2\" is forbidden"})
    kube = _Node(names=("gpu-1", "gpu-2"), refuse={"read_node": [None, forbidden]})
    repairs, _, _ = _decided([_row("gpu-1"), _row("gpu-2")], fleet, kube=kube)
    assert [(e["machine"], e["outcome"], e["answer"]) for e in repairs] == [
        ("", "not repaired", "its machine could not be told (ValueError: providerID garbled)"),
        ("", "not repaired", "its machine could not be told (ApiException: nodes \"gpu-2\" is forbidden)")]
    assert fleet.asked == []


def test_a_node_of_no_pool_gpuready_repairs_says_so_in_the_repairers_words_where_it_has_them():
    fleet = _Fleet({})
    repairs, _, _ = _decided([_row("gpu-1")], fleet)
    assert repairs[0]["answer"] == "no machine of a pool gpuready repairs is behind it (its providerID names none, " \
                                   "or its platform repairs it by itself)"
    assert (repairs[0]["machine"], repairs[0]["where"], repairs[0]["pool"]) == ("", "", "")
    fleet.skipped = lambda node: f"{node['metadata']['name']} is a node of a pool AKS repairs itself"
    repairs, _, _ = _decided([_row("gpu-1")], fleet)
    assert repairs[0]["answer"] == "gpu-1 is a node of a pool AKS repairs itself"


def test_a_node_no_repair_cures_says_what_failed_and_nothing_is_asked():
    fleet = _Fleet({"gpu-1": "eks-gpu"})
    (entry,), _, _ = _decided([_row("gpu-1", "slow")], fleet)
    assert (entry["action"], entry["outcome"], entry["why"], entry["answer"]) == (
        "", "not repaired", "probe slow", "no reboot or replacement cures what failed (gpu0.bf16_matmul_tflops)")
    assert fleet.asked == []


def test_only_the_machines_of_a_failing_nodes_pool_are_read_and_one_under_way_is_never_repaired():
    fleet = _Fleet({"gpu-1": "a", "gpu-2": "a", "gpu-3": "b"},
                   under={"gpu-1": "instance i-1 is stopping", "gpu-3": AssertionError("pool b is not read")})
    repairs, _, _ = _decided([_row("gpu-1"), _row("gpu-2", None), _row("gpu-3", None)], fleet,
                             Limits(apply=True, max_repairs=5, max_unhealthy=100))
    assert sorted(fleet.read) == ["gpu-1", "gpu-2"]
    assert [(e["outcome"], e["answer"]) for e in repairs] == [
        ("not repaired", "instance i-1 is stopping: never repaired while something is under way")]


def test_a_machine_whose_state_cannot_be_read_is_never_repaired():
    fleet = _Fleet({"gpu-1": "a"}, under={"gpu-1": ValueError("DescribeInstances denied")})
    (entry,), _, _ = _decided([_row("gpu-1")], fleet)
    assert entry["answer"] == "its state could not be read (ValueError: DescribeInstances denied): never repaired " \
                              "while something is under way"
    assert fleet.asked == []


def _asked(minutes_ago):
    return {ANNOTATION: json.dumps({"action": "replace", "time": (NOW - timedelta(minutes=minutes_ago)).strftime(
        "%Y-%m-%dT%H:%M:%SZ"), "outcome": "requested", "answer": "accepted"})}


@pytest.mark.parametrize("minutes_ago, max_repairs, repaired", [(30, 1, False), (30, 2, True), (60, 1, True)])
def test_a_node_asked_about_within_the_hour_whose_machine_left_its_pool_counts_as_under_way(minutes_ago, max_repairs,
                                                                                           repaired):
    """gpu-0 was replaced 30 minutes ago: its machine is gone from the pool (no machine behind the node), its
    replacement still coming; it counts against --max-repairs for the hour."""
    fleet = _Fleet({"gpu-1": "eks-gpu"})
    kube = _Node(names=("gpu-0", "gpu-1"), annotations={"gpu-0": _asked(minutes_ago)})
    repairs, _, _ = _decided([_row("gpu-0", None), _row("gpu-1")], fleet,
                             Limits(apply=True, max_repairs=max_repairs, max_unhealthy=100), kube=kube)
    assert [e["outcome"] for e in repairs] == ["requested" if repaired else "not repaired"]
    if not repaired:
        assert repairs[0]["answer"].startswith("--max-repairs 1 reached (1 under way before this sweep)")


def test_a_node_whose_machine_cannot_be_told_does_not_count_as_under_way_by_its_stamp():
    fleet = _Fleet({"gpu-1": "eks-gpu"}, broken={"gpu-0": ValueError("providerID garbled")})
    kube = _Node(names=("gpu-0", "gpu-1"), annotations={"gpu-0": _asked(30)})
    repairs, _, _ = _decided([_row("gpu-0", None), _row("gpu-1")], fleet, kube=kube)
    assert [e["outcome"] for e in repairs] == ["requested"]


def test_a_node_asked_about_within_the_hour_is_held_before_anything_else_is_said_of_it():
    fleet = _Fleet({}, broken={"gpu-1": ValueError("providerID garbled")})
    kube = _Node(names=("gpu-1",), annotations={"gpu-1": _asked(30)})
    (entry,), _, _ = _decided([_row("gpu-1")], fleet, kube=kube)
    assert entry["answer"].startswith("already asked to replace it at ")


def test_ctrl_c_while_asking_says_the_nodes_audit_line_then_stops():
    import io

    from gpuready.repair import repair
    from gpuready.smoke.sweep import SweepResult
    fleet = _Fleet({"gpu-1": "eks-gpu", "gpu-2": "eks-gpu"}, answers={"gpu-1": KeyboardInterrupt()})
    kube = _Node(names=("gpu-1", "gpu-2"))
    result, progress = SweepResult("kubernetes", rows=[_row("gpu-1"), _row("gpu-2")]), io.StringIO()
    with pytest.raises(KeyboardInterrupt):
        repair(result, fleet, kube, kube, Limits(apply=True, max_repairs=2, max_unhealthy=100), progress=progress,
               clock=lambda: kube.now, now=lambda: NOW, sleep=kube.sleep)
    assert [e["outcome"] for e in result.repairs] == ["interrupted"] and fleet.asked == [("replace", "gpu-1")]
    assert progress.getvalue().endswith(f"gpuready: repair: {result.repairs[0]['text']}\n")


class _Flaky(_Fleet):
    """A fleet whose cloud drops the connection on the first ``drops`` reads of each kind (machine, state, size)."""

    def __init__(self, drops, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.drops = {"machine": drops, "under_way": drops, "pool_size": drops}

    def _dropped(self, kind):
        if self.drops[kind]:
            self.drops[kind] -= 1
            raise ConnectionResetError(f"{kind}: peer reset")

    def machine(self, node):
        self._dropped("machine")
        return super().machine(node)

    def under_way(self, machine):
        self._dropped("under_way")
        return super().under_way(machine)

    def pool_size(self, machine):
        self._dropped("pool_size")
        return super().pool_size(machine)


def test_each_read_of_the_cloud_is_retried_after_its_pauses_on_a_passing_fault():
    """Two dropped connections on each read: tried again after 0.5 and 1 s, on the sweep's clock."""
    fleet = _Flaky(2, {"gpu-1": "eks-gpu"})
    (entry,), _, kube = _decided([_row("gpu-1")], fleet)
    assert entry["outcome"] == "requested" and fleet.drops == {"machine": 0, "under_way": 0, "pool_size": 0}
    assert kube.now == 1000.0 + 3 * (0.5 + 1.0)


def test_a_read_that_keeps_failing_is_given_up_within_its_grace():
    """Pauses of 0.5, 1, 2, 4 then 5 s: the ninth try, at 27.5 s, is the last before READ_GRACE (30 s)."""
    from gpuready.repair import READ_GRACE
    fleet = _Flaky(100, {"gpu-1": "eks-gpu"})
    (entry,), _, kube = _decided([_row("gpu-1")], fleet)
    assert entry["answer"] == "its machine could not be told (ConnectionResetError: machine: peer reset)"
    assert READ_GRACE == 30.0 and kube.now == 1027.5 and fleet.drops["machine"] == 100 - 9


def test_the_drain_of_a_repair_is_said_where_the_audit_is():
    fleet = _Fleet({"gpu-1": "eks-gpu"})
    kube = _Node(names=("gpu-1",), pods=["train-0"])
    (entry,), said, _ = _decided([_row("gpu-1")], fleet, kube=kube)
    assert entry["outcome"] == "requested"
    assert said.splitlines()[0] == "gpuready: draining gpu-1: evicting 1 pods (PodDisruptionBudgets respected, at " \
                                   "most 300 s)"
