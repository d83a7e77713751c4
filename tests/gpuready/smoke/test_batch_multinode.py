"""``gpuready smoke --nodes N`` on AWS Batch: one multi-node parallel job against moto's server (real HTTP, real
boto3), with its nodes (``jobId#i``), which moto does not model, from the small fake in fake_nodes.py.

Each node's log holds a probe report made by the real probe against a replayed nvidia-smi capture (as the node
would print it) and, on the main node, an NCCL report line in the shape of INTERFACES.md section 3.
"""

from __future__ import annotations

import io
import json

import boto3
import pytest

from gpuready.cli import main
from gpuready.probe import core, nccl
from gpuready.smoke import batch_multinode as target
from gpuready.smoke import batch_probe
from tests.gpuready.conftest import H100

from .fake_nodes import FakeNodes, Node, one
from .moto_batch import build_multinode, jobs, probe_definitions

LIVE = ("SUBMITTED", "PENDING", "RUNNABLE", "STARTING", "RUNNING")
QUEUE = "gpu-multi-node"


@pytest.fixture
def nccl_calls(monkeypatch):
    """The arguments the target gives the real ``nccl.checks``, recorded."""
    calls, real = [], nccl.checks

    def checks(report, *, nodes, expected_transport, instance_type=None):
        calls.append({"report": report, "nodes": nodes, "expected_transport": expected_transport,
                      "instance_type": instance_type})
        return real(report, nodes=nodes, expected_transport=expected_transport, instance_type=instance_type)
    monkeypatch.setattr(nccl, "checks", checks)
    return calls


@pytest.fixture
def stack(aws, nccl_calls, fake):
    """moto with the stack's single-node and multi-node queues, and the node fake. Returns (endpoint, outputs)."""
    endpoint, outputs = aws
    return endpoint, build_multinode(endpoint, outputs)


@pytest.fixture
def fake(monkeypatch):
    return FakeNodes(monkeypatch)


@pytest.fixture
def probe_line(fake_smi):
    """``probe_line(host, gpus_seen)``: the probe's report line from a node with ``gpus_seen`` H100s where 4 are
    expected, made by the real probe against a replayed capture (whose zeroed UUIDs are made the host's own)."""
    def line(host: str, gpus_seen: int = 4) -> str:
        fake_smi(H100, gpus=gpus_seen, uuid=f"GPU-{host}")
        return core.report_line({**core.probe(gpus_expected=4), "host": host})
    return line


def nccl_line(nodes=2, correct=True) -> str:
    return nccl.REPORT_MARKER + json.dumps({
        "version": 1, "nodes": nodes, "world_size": 4 * nodes, "hosts": [f"ip-10-42-0-{i}" for i in range(nodes)],
        "correct": correct, "bytes": 2**31, "algbw_gbps": 20.0, "busbw_gbps": 35.0, "transport": "socket",
        "nccl_version": "2.21.5", "error": None})


def _batch(endpoint):
    return boto3.client("batch", region_name="us-east-1", endpoint_url=endpoint)


def _jobs(endpoint):
    return jobs(endpoint, QUEUE)


def _live(endpoint, fake):
    """What a run left behind: its job still live in moto and never terminated, the probe's definitions ACTIVE."""
    return [j["jobId"] for j in _jobs(endpoint) if j["status"] in LIVE and not fake.gangs[j["jobId"]].job.stop] + \
        [d["jobDefinitionArn"] for d in probe_definitions(endpoint)]


def _run(outputs, **kwargs):
    defaults = {"nodes": 2, "poll": 0.05, "explain_after": 0.2, "log_wait": 1.0, "progress": io.StringIO()}
    return target.run(outputs, **{**defaults, **kwargs})


def _healthy(fake, probe_line, nodes=2):
    lines = [probe_line(f"ip-10-42-0-{i}") for i in range(nodes)]
    fake.scripts = lambda n: [Node(lines=(lines[i], *([nccl_line(n)] if i == 0 else ()))) for i in range(n)]


def test_two_nodes_run_the_probe_and_nccl_and_pass(stack, fake, probe_line, nccl_calls):
    endpoint, outputs = stack
    _healthy(fake, probe_line)
    progress = io.StringIO()
    result = _run(outputs, progress=progress)
    checks = {c.name: c for c in result.checks}
    assert result.verdict == "pass", [c for c in result.checks if c.verdict == "fail"]
    assert (checks["nodes_ran"].measured, checks["distinct_hosts"].measured) == (2, 2)
    assert [checks[k].verdict for k in ("job_status", "nccl_hosts", "nccl_all_reduce_correct", "nccl_transport",
                                        "nccl_bus_bandwidth")] == ["pass"] * 5
    assert checks["node0.gpu_count"].verdict == checks["node1.gpu_count"].verdict == "pass"
    assert [(n["index"], n["status"], n["host"]) for n in result.job["nodes"]] == \
        [(0, "SUCCEEDED", "ip-10-42-0-0"), (1, "SUCCEEDED", "ip-10-42-0-1")]
    assert len({n["container_instance"] for n in result.job["nodes"]}) == 2
    assert all(n["log_stream"] and n["id"] == f"{result.job['id']}#{n['index']}" for n in result.job["nodes"])
    assert nccl_calls[-1] == {"report": json.loads(nccl_line()[len(nccl.REPORT_MARKER):]), "nodes": 2,
                              "expected_transport": "socket", "instance_type": "g6.12xlarge"}
    assert f"{result.job['name']}#1: SUCCEEDED" in progress.getvalue()
    # one job, on the multi-node queue, for 2 nodes; its definition registered for the run and deregistered after it
    (job,) = _jobs(endpoint)
    assert fake.submitted == [{"numNodes": 2}]
    (used,) = probe_definitions(endpoint, "INACTIVE")
    assert probe_definitions(endpoint) == [] and used["jobDefinitionArn"] == result.job["probe_definition"]
    assert used["jobDefinitionName"] == "gpu-multi-node-gpuready-probe" and used["type"] == "multinode"
    assert used["tags"]["gpuready:run"] == job["jobName"] and used["nodeProperties"]["numNodes"] == 2
    (node_range,) = used["nodeProperties"]["nodeRangeProperties"]
    command = node_range["container"]["command"]
    assert command[:2] == ["python3", "-c"] and "'--gpus-per-node', '4', '--transport', 'socket'" in command[2]
    assert "'--instance-type', 'g6.12xlarge'" in command[2] and "'launch', '--nodes', '2'" in command[2]
    # the launcher gives up, and says why, before Batch's attempt duration (the run's 1800 s) ends the job
    assert "'--timeout', '1710', '--rendezvous-timeout', '600'" in command[2]
    assert {"name": "NCCL_DEBUG", "value": "INFO"} in node_range["container"]["environment"]  # the stack's, kept


def test_one_nodes_failing_probe_fails_the_run_naming_the_node(stack, fake, probe_line, tmp_path, capsys):
    endpoint, outputs = stack
    lines = [probe_line("ip-10-42-0-0"), probe_line("ip-10-42-0-1", gpus_seen=3)]
    fake.scripts = lambda n: [Node(lines=(lines[0], nccl_line())), Node(lines=(lines[1],))]
    (tmp_path / "o.json").write_text(json.dumps(outputs))
    assert main(["smoke", "--outputs", str(tmp_path / "o.json"), "--nodes", "2", "--timeout", "60"]) == 1
    out = capsys.readouterr().out
    failing = [line.split()[1] for line in out.splitlines() if line.startswith("FAIL ")]
    assert failing and all(name.startswith("node1.") for name in failing), out
    assert "Verdict: FAIL" in out and _live(endpoint, fake) == []


def test_two_nodes_on_one_container_instance_fail_distinct_hosts(stack, fake, probe_line):
    """Each node's container has a hostname of its own (awsvpc): the instance it ran on is what must differ."""
    endpoint, outputs = stack
    lines = [probe_line(f"ip-10-42-0-{i}") for i in range(2)]
    fake.scripts = lambda n: [Node(lines=(lines[0], nccl_line()), instance="0abc"), Node(lines=(lines[1],),
                                                                                         instance="0abc")]
    result = _run(outputs, timeout=30)
    (check,) = [c for c in result.checks if c.name == "distinct_hosts"]
    assert (check.verdict, check.measured) == ("fail", 1)
    assert "node0 and node1 ran on one container instance, 0abc" in check.detail


def test_a_node_stuck_runnable_is_explained_and_the_job_terminated(stack, fake, probe_line):
    endpoint, outputs = stack
    fake.scripts = lambda n: [Node(statuses=("STARTING", "RUNNING")), Node(statuses=("RUNNABLE",))]
    result = _run(outputs, timeout=1.0)
    gang = one(fake)
    assert gang.job.stop and gang.job.job_stopped_reason == "gpuready smoke: timed out"
    checks = {c.name: c for c in result.checks}
    assert checks["job_finished"].verdict == "fail" and "terminated" in checks["job_finished"].detail
    assert "node1 (RUNNABLE) still wait while the job runs" in result.diagnosis[0]
    assert any(line.startswith("node1: ") for line in result.diagnosis[1:])
    assert [n["status"] for n in result.job["nodes"]] == ["RUNNING", "RUNNABLE"]
    assert _live(endpoint, fake) == [] and len(probe_definitions(endpoint, "INACTIVE")) == 1


@pytest.mark.parametrize("closed", [False, True])
def test_nodes_that_never_meet_are_explained_by_a_closed_default_security_group(aws, nccl_calls, fake, probe_line,
                                                                                  closed):
    """EFA stacks name no security group on the compute environment: the nodes' interfaces are in the VPC's
    default group, whose rule letting in traffic from itself a hardened account may have removed."""
    endpoint, outputs = aws
    outputs = build_multinode(endpoint, outputs, efa=1)
    lost = nccl.REPORT_MARKER + json.dumps({
        "version": 1, "nodes": 2, "world_size": 8, "hosts": [], "correct": None, "transport": None,
        "error": "no result within 1710 s: a node never joined 10.0.1.5:29500 or NCCL hung"})
    lines = [probe_line(f"ip-10-42-0-{i}") for i in range(2)]
    fake.scripts = lambda n: [Node(lines=(lines[0], lost), exit_code=1, statuses=("STARTING", "RUNNING", "FAILED")),
                              Node(lines=(lines[1],))]
    ec2 = boto3.client("ec2", region_name="us-east-1", endpoint_url=endpoint)
    (environment,) = [e for e in _batch(endpoint).describe_compute_environments()["computeEnvironments"]
                      if e["computeEnvironmentName"] == QUEUE]
    (subnet,) = ec2.describe_subnets(SubnetIds=environment["computeResources"]["subnets"])["Subnets"]
    (default,) = ec2.describe_security_groups(Filters=[{"Name": "vpc-id", "Values": [subnet["VpcId"]]},
                                                       {"Name": "group-name", "Values": ["default"]}])["SecurityGroups"]
    if not closed:  # AWS's default group lets in all traffic from itself (moto's has no inbound rule, as if hardened)
        ec2.authorize_security_group_ingress(GroupId=default["GroupId"], IpPermissions=[
            {"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": default["GroupId"]}]}])
    result = _run(outputs, timeout=30)
    assert result.verdict == "fail" and {c.name: c.verdict for c in result.checks}["nccl_all_reduce_correct"] == "fail"
    blamed = [line for line in result.diagnosis if default["GroupId"] in line]
    assert bool(blamed) is closed
    if closed:
        assert "lets no traffic in from itself" in blamed[0] and "gpu-multi-node names no security group" in blamed[0]


def test_timeout_terminates_the_job_and_deregisters_its_definition(stack, fake):
    endpoint, outputs = stack
    fake.scripts = lambda n: [Node(statuses=("RUNNABLE",)) for _ in range(n)]
    result = _run(outputs, timeout=0.6)
    assert one(fake).job.stop and result.verdict == "fail"
    assert {c.name: c.verdict for c in result.checks}["job_finished"] == "fail"
    assert result.diagnosis  # the job, waiting as a whole, explained by what one node asks for
    assert [n["status"] for n in result.job["nodes"]] == [None, None]  # never described: the job never ran
    assert _live(endpoint, fake) == [] and len(probe_definitions(endpoint, "INACTIVE")) == 1


def test_nodes_the_queue_cannot_hold_are_never_submitted(aws, nccl_calls, fake):
    endpoint, outputs = aws
    outputs = build_multinode(endpoint, outputs, max_vcpus=64)  # 2 x g6.12xlarge: 96 vCPUs
    result = _run(outputs)
    assert {c.name: c.verdict for c in result.checks} == {"job_placeable": "fail"}
    (why,) = result.diagnosis
    assert "maxvCpus 64, 2 x g6.12xlarge need 96" in why and "RUNNABLE forever" in why
    assert _jobs(endpoint) == [] and probe_definitions(endpoint) == [] == probe_definitions(endpoint, "INACTIVE")


def test_a_stack_without_multi_node_outputs_is_a_mistake_naming_the_key(aws, tmp_path, capsys):
    endpoint, outputs = aws
    (tmp_path / "o.json").write_text(json.dumps(outputs))
    assert main(["smoke", "--outputs", str(tmp_path / "o.json"), "--nodes", "2"]) == 2
    err = capsys.readouterr().err
    assert "multiNodeJobQueueArn" in err and "gpuready:multiNode" in err and "pulumi up" in err
    assert err.count("\n") == 1 and probe_definitions(endpoint) == []


def test_cli_nodes_2_prints_json(stack, fake, probe_line, tmp_path, capsys):
    endpoint, outputs = stack
    _healthy(fake, probe_line)
    (tmp_path / "o.json").write_text(json.dumps(outputs))
    assert main(["smoke", "--outputs", str(tmp_path / "o.json"), "--nodes", "2", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["verdict"] == "pass" and len(printed["job"]["nodes"]) == 2
    assert {c["name"] for c in printed["checks"]} >= {"job_status", "nodes_ran", "distinct_hosts",
                                                      "node0.probe_report", "node1.probe_report"}


@pytest.mark.parametrize("argv, says", [(["--local", "--nodes", "2"], "not --local"),
                                        (["--outputs", "o.json", "--nodes", "0"], "at least 1 node"),
                                        (["--outputs", "o.json", "--nodes", "two"], "not a whole number")])
def test_cli_refuses_nodes_it_cannot_run(argv, says, capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["smoke", *argv])
    assert stopped.value.code == 2 and says in capsys.readouterr().err


def test_gpus_other_than_the_stacks_per_node_count_are_refused_before_anything(stack, fake):
    endpoint, outputs = stack
    with pytest.raises(Exception, match="multiNodeGpusPerNode"):
        _run(outputs, gpus=2)
    assert _jobs(endpoint) == [] and probe_definitions(endpoint) == []


def test_the_gang_definition_stays_within_batchs_size_limit(stack):
    endpoint, outputs = stack
    (stack_definition,) = _batch(endpoint).describe_job_definitions(
        jobDefinitions=[outputs["multiNodeJobDefinitionArn"]])["jobDefinitions"]
    request = batch_probe.multinode_definition(stack_definition, nodes=16, argv=["launch", "--full"],
                                               tags={"gpuready:run": "gpuready-smoke-0123456789ab"})
    assert batch_probe.size(request) <= batch_probe.DEFINITION_LIMIT, batch_probe.size(request)


# --- faults between gpuready and AWS ------------------------------------------------------------------------------

def test_describe_faults_while_polling_keep_one_job_and_the_verdict(stack, fake, probe_line, proxy):
    endpoint, outputs = stack
    _healthy(fake, probe_line)
    proxy.plan = {"/v1/describejobs": ["pass", "5xx", "throttle", "pass", "reset", "5xx"]}
    result = _run(outputs, timeout=30)
    assert result.verdict == "pass" and len(_jobs(endpoint)) == 1 and _live(endpoint, fake) == []
    assert all(not remaining for remaining in proxy.plan.values())  # every fault was met


@pytest.mark.parametrize("path", ["/v1/submitjob", "/v1/describejobs"])
def test_ctrl_c_after_submit_terminates_the_job_and_deregisters(stack, fake, proxy, path):
    endpoint, outputs = stack
    fake.scripts = lambda n: [Node(statuses=("RUNNING",)) for _ in range(n)]
    proxy.plan = {path: ["interrupt"]}
    result = _run(outputs, timeout=30)
    assert "interrupted; job terminated" in {c.name: c.detail for c in result.checks}["job_finished"]
    assert one(fake).job.stop and len(_jobs(endpoint)) == 1 and _live(endpoint, fake) == []
