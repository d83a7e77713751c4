"""The NCCL launcher, log parsing and verdicts, against recorded NCCL output (tests/data/nccl) and a stand-in
torchrun (fake_torchrun.py) that replays it: no torch, no GPU, no second node here."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

import pytest

from gpuready.probe import core, nccl
from tests.conftest import DATA
from tests.gpuready.conftest import H100

LOGS = sorted((DATA / "nccl").glob("*.txt"))
FAKE_TORCHRUN = Path(__file__).parent / "fake_torchrun.py"
IPV4 = re.compile(r"\d+\.\d+\.\d+\.\d+")


# --- transport ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("log", LOGS, ids=[p.stem for p in LOGS])
def test_every_recorded_log_parses_to_the_transport_nccl_used(log):
    assert nccl.transport(log.read_text()) == log.stem.split("_")[0]


def test_the_recordings_cover_every_transport():
    assert {p.stem.split("_")[0] for p in LOGS} == {"efa", "ib", "socket", "tcpx", "tcpxo"}


def test_a_plugin_that_failed_is_not_the_transport_even_without_a_using_network_line():
    text = (DATA / "nccl" / "socket_after_ofi_failed.txt").read_text()
    older = "\n".join(line for line in text.splitlines() if "Using network" not in line)
    assert "NET/OFI" in older and nccl.transport(older) == "socket"


def test_one_rank_on_sockets_among_efa_ranks_is_socket():
    efa = (DATA / "nccl" / "efa_libfabric_p5en.txt").read_text()
    socket_rank = (DATA / "nccl" / "socket_no_ib_device.txt").read_text()
    assert nccl.transport(efa + socket_rank) == "socket"


def test_libfabric_over_its_tcp_provider_is_socket():
    text = (DATA / "nccl" / "efa_libfabric_p5en.txt").read_text().replace("Provider is efa", "Provider is tcp")
    assert nccl.transport(text) == "socket"


def test_a_log_without_nccl_info_lines_is_unknown():
    assert nccl.transport("") == nccl.transport("NCCL version 2.21.5+cuda12.4\nhello\n") == "unknown"


# --- bandwidth and verdicts --------------------------------------------------------------------------------------

@pytest.mark.parametrize("nbytes, microseconds, world, algbw, busbw", [
    (2147483648, 51406, 16, 41.78, 78.33),  # 2 x p4de.24xlarge (awsome-distributed-training nccl-tests README)
    (2147483648, 9074.5, 16, 236.65, 443.72),  # 2 x p5.48xlarge, the same README
])
def test_bandwidth_matches_nccl_tests_figures(nbytes, microseconds, world, algbw, busbw):
    measured = nccl.bandwidth(nbytes, microseconds / 1e6, world)
    assert measured == (pytest.approx(algbw, abs=0.01), pytest.approx(busbw, abs=0.01))


def _report(**changes):
    report = {"version": 1, "nodes": 2, "world_size": 16, "hosts": ["ip-10-0-0-1", "ip-10-0-0-2"], "correct": True,
              "bytes": 2 * 2**30, "algbw_gbps": 236.65, "busbw_gbps": 443.72, "transport": "efa",
              "nccl_version": "2.21.5", "error": None}
    return {**report, **changes}


def _by_name(checks):
    return {c["name"]: c for c in checks}


def test_a_healthy_two_node_p5_run_passes_every_check():
    found = _by_name(nccl.checks(_report(), nodes=2, expected_transport="efa", instance_type="p5.48xlarge"))
    assert list(found) == ["nccl_hosts", "nccl_all_reduce_correct", "nccl_transport", "nccl_bus_bandwidth"]
    assert all(c["verdict"] == "pass" and c["required"] for c in found.values()), found
    assert found["nccl_bus_bandwidth"]["expected"] == 443.72


def test_no_report_is_one_failing_check():
    (only,) = nccl.checks(None, nodes=2, expected_transport="efa", instance_type="p5.48xlarge")
    assert only["name"] == "nccl_report" and only["verdict"] == "fail"


def test_sockets_where_efa_was_expected_fail_and_name_the_fix():
    found = _by_name(nccl.checks(_report(transport="socket", busbw_gbps=11.2), nodes=2, expected_transport="efa",
                                 instance_type="p5.48xlarge"))
    detail = found["nccl_transport"]["detail"]
    assert found["nccl_transport"]["verdict"] == "fail"
    assert "aws-ofi-nccl" in detail and "/dev/infiniband" in detail and "FI_PROVIDER=efa" in detail
    assert found["nccl_bus_bandwidth"]["verdict"] == "fail"


@pytest.mark.parametrize("expected, fix", [("ib", "rdma/shared_ib"), ("tcpx", "GPUDirectTCPX_v7"),
                                           ("tcpxo", "FasTrak")])
def test_each_fabric_names_its_own_fix(expected, fix):
    found = _by_name(nccl.checks(_report(transport="socket"), nodes=2, expected_transport=expected))
    assert found["nccl_transport"]["verdict"] == "fail" and fix in found["nccl_transport"]["detail"]


def test_a_fabric_better_than_expected_passes():
    found = _by_name(nccl.checks(_report(transport="efa"), nodes=2, expected_transport="socket"))
    assert found["nccl_transport"]["verdict"] == "pass"


def test_ranks_on_fewer_hosts_than_nodes_fail():
    found = _by_name(nccl.checks(_report(hosts=["ip-10-0-0-1"]), nodes=2, expected_transport="efa"))
    assert found["nccl_hosts"]["verdict"] == "fail" and found["nccl_hosts"]["measured"] == 1


@pytest.mark.parametrize("busbw, verdict", [(340.0, "pass"), (320.0, "fail")])
def test_bus_bandwidth_is_judged_at_three_quarters_of_the_typical_figure(busbw, verdict):
    found = _by_name(nccl.checks(_report(busbw_gbps=busbw), nodes=2, expected_transport="efa",
                                 instance_type="p5.48xlarge"))
    assert found["nccl_bus_bandwidth"]["verdict"] == verdict


@pytest.mark.parametrize("instance_type, changes, why", [
    ("g6.12xlarge", {}, "no typical figure for g6.12xlarge"),
    ("p5.48xlarge", {"world_size": 8}, "8 GPUs per node"),
    ("p5.48xlarge", {"bytes": 2**28}, "messages of 2 GiB"),
])
def test_no_bandwidth_verdict_without_a_comparable_figure(instance_type, changes, why):
    found = _by_name(nccl.checks(_report(busbw_gbps=1.0, **changes), nodes=2, expected_transport="efa",
                                 instance_type=instance_type))["nccl_bus_bandwidth"]
    assert found["verdict"] == "pass" and found["required"] is False and why in found["detail"]


def test_a_failed_run_fails_with_its_error():
    found = _by_name(nccl.checks(_report(error="torchrun exited 1 on node 0: boom", correct=False, hosts=[],
                                         busbw_gbps=None, transport="unknown"), nodes=2, expected_transport="efa",
                                 instance_type="p5.48xlarge"))
    correct = found["nccl_all_reduce_correct"]
    assert correct["verdict"] == "fail" and "boom" in correct["detail"]
    assert found["nccl_transport"]["verdict"] == found["nccl_bus_bandwidth"]["verdict"] == "fail"
    assert "the run failed first" in found["nccl_transport"]["detail"]


def test_every_figure_in_the_table_names_its_source():
    with open(nccl.__file__) as f:
        source = f.read()
    assert "awsome-distributed-training" in source and "78.33" in source and "443.72" in source


# --- rendezvous --------------------------------------------------------------------------------------------------

BATCH = {"AWS_BATCH_JOB_NUM_NODES": "2", "AWS_BATCH_JOB_MAIN_NODE_INDEX": "0"}


def test_the_batch_main_node_listens_on_its_own_address():
    rank, address = nccl.rendezvous({**BATCH, "AWS_BATCH_JOB_NODE_INDEX": "0"}, 2)
    assert rank == 0 and IPV4.fullmatch(address)


def test_a_batch_child_node_reaches_the_main_node_at_the_address_batch_gives():
    env = {**BATCH, "AWS_BATCH_JOB_NODE_INDEX": "1", "AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS": "10.0.3.7"}
    assert nccl.rendezvous(env, 2) == (1, "10.0.3.7")


def test_the_batch_main_node_is_rank_zero_whatever_its_index():
    env = {**BATCH, "AWS_BATCH_JOB_MAIN_NODE_INDEX": "1", "AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS": "10.0.3.7"}
    assert nccl.rendezvous({**env, "AWS_BATCH_JOB_NODE_INDEX": "0"}, 2) == (1, "10.0.3.7")
    assert nccl.rendezvous({**BATCH, "AWS_BATCH_JOB_MAIN_NODE_INDEX": "1", "AWS_BATCH_JOB_NODE_INDEX": "1"}, 2)[0] == 0


def test_kubernetes_ranks_come_from_the_job_index_and_the_main_node_is_the_service():
    assert nccl.rendezvous({"JOB_COMPLETION_INDEX": "1"}, 2, "smoke-0.smoke") == (1, "smoke-0.smoke")
    assert nccl.rendezvous({"JOB_COMPLETION_INDEX": "0"}, 2, "smoke-0.smoke") == (0, "smoke-0.smoke")


@pytest.mark.parametrize("env, main_address, message", [
    ({**BATCH, "AWS_BATCH_JOB_NODE_INDEX": "1"}, None, "AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS"),
    ({**BATCH, "AWS_BATCH_JOB_NUM_NODES": "3", "AWS_BATCH_JOB_NODE_INDEX": "0"}, None, "--nodes says 2"),
    ({"JOB_COMPLETION_INDEX": "1"}, None, "--main-address"),
    ({"JOB_COMPLETION_INDEX": "2"}, "smoke-0.smoke", "outside 0..1"),
    ({}, None, "no rendezvous"),
])
def test_a_rendezvous_that_cannot_work_says_why(env, main_address, message):
    with pytest.raises(nccl.RendezvousError, match=re.escape(message)):
        nccl.rendezvous(env, 2, main_address)


# --- the launcher, with the stand-in torchrun --------------------------------------------------------------------

RESULT = {"world_size": 16, "hosts": ["ip-10-0-0-1", "ip-10-0-0-2"], "correct": True, "bytes": 2**30,
          "seconds": 0.0046, "algbw_gbps": 233.4, "busbw_gbps": 437.6, "nccl_version": "2.21.5"}


@pytest.fixture
def torchrun(tmp_path, monkeypatch):
    """The stand-in torchrun in place of ``python -m torch.distributed.run``; returns a function setting what it
    replays, and the file where it records the arguments of each run."""
    for key in [k for k in os.environ if k.startswith(("AWS_BATCH_", "FAKE_TORCHRUN_", "NCCL_"))]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("GPUREADY_TORCHRUN", f"{sys.executable} {FAKE_TORCHRUN}")
    calls = tmp_path / "torchrun-calls.jsonl"
    monkeypatch.setenv("FAKE_TORCHRUN_ARGS", str(calls))

    def use(log="efa_libfabric_p5en.txt", result=RESULT, node=0, **env):
        monkeypatch.setenv("FAKE_TORCHRUN_LOG", str(DATA / "nccl" / log))
        if result is not None:
            monkeypatch.setenv("FAKE_TORCHRUN_RESULT", json.dumps(result))
        batch = {**BATCH, "AWS_BATCH_JOB_NODE_INDEX": str(node)}
        if node:
            batch["AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS"] = "10.0.3.7"
        for key, value in {**batch, **env}.items():
            monkeypatch.setenv(key, str(value))
        return lambda: [json.loads(line) for line in calls.read_text().splitlines()]
    return use


LAUNCH = ["launch", "--nodes", "2", "--gpus-per-node", "8", "--transport", "efa", "--instance-type", "p5.48xlarge"]


def test_the_main_node_probes_runs_torchrun_streams_its_output_and_reports(torchrun, fake_smi, capsys):
    fake_smi(H100, row=0, gpus=8)
    calls = torchrun(FI_PROVIDER="efa")
    assert nccl.main(LAUNCH) == 0
    out = capsys.readouterr().out
    assert core.find_report(out)["verdict"] == "pass"  # the node's own probe, on its 8 GPUs
    assert "NET/OFI Selected Provider is efa (found 16 nics)" in out  # torchrun's output, passed through
    report = nccl.find_report(out)
    assert report == {"version": 1, "nodes": 2, "world_size": 16, "hosts": RESULT["hosts"], "correct": True,
                      "bytes": 2**30, "algbw_gbps": 233.4, "busbw_gbps": 437.6, "transport": "efa",
                      "nccl_version": "2.21.5", "mnnvl_ranks": 0, "error": None}
    (call,) = calls()
    assert {k: call["options"][k] for k in ("nnodes", "nproc-per-node", "node-rank", "master-port")} == \
        {"nnodes": "2", "nproc-per-node": "8", "node-rank": "0", "master-port": "29500"}
    assert IPV4.fullmatch(call["options"]["master-addr"])
    assert Path(call["script"]).name == "nccl.py" and call["worker"][0] == "worker"
    assert call["worker"][call["worker"].index("--bytes") + 1] == str(2**30)
    assert call["NCCL_DEBUG"] == "INFO" and call["FI_PROVIDER"] == "efa"  # the job's environment kept


def test_full_runs_two_gib_messages(torchrun, capsys):
    calls = torchrun()
    assert nccl.main([*LAUNCH, "--full"]) == 0
    (call,) = calls()
    assert int(call["worker"][call["worker"].index("--bytes") + 1]) >= 2 * 2**30


def test_a_child_node_joins_the_main_node_and_prints_no_report(torchrun, capsys):
    calls = torchrun(node=1)
    assert nccl.main(LAUNCH) == 0
    out = capsys.readouterr().out
    assert nccl.find_report(out) is None and core.find_report(out) is not None
    (call,) = calls()
    assert call["options"]["node-rank"] == "1" and call["options"]["master-addr"] == "10.0.3.7"


@pytest.mark.parametrize("level, seen", [("WARN", "INFO"), ("TRACE", "TRACE")])
def test_nccl_prints_info_lines_whatever_the_job_set(torchrun, capsys, level, seen):
    calls = torchrun(NCCL_DEBUG=level)
    nccl.main(LAUNCH)
    assert calls()[0]["NCCL_DEBUG"] == seen


def test_a_failed_torchrun_is_a_report_with_its_error_and_a_failing_exit(torchrun, capsys):
    torchrun(log="socket_after_ofi_failed.txt", FAKE_TORCHRUN_EXIT=3)
    assert nccl.main(LAUNCH) == 1
    report = nccl.find_report(capsys.readouterr().out)
    assert report["error"].startswith("torchrun exited 3 on node 0") and "NET/OFI" in report["error"]
    assert report["transport"] == "socket" and report["correct"] is False and report["hosts"] == []
    assert report["nccl_version"] == "2.21.5"  # from NCCL's own banner


def test_peers_that_never_arrive_end_at_the_deadline(torchrun, capsys):
    torchrun(FAKE_TORCHRUN_SLEEP=60)
    start = time.monotonic()
    assert nccl.main([*LAUNCH, "--timeout", "1"]) == 1
    assert time.monotonic() - start < 20
    report = nccl.find_report(capsys.readouterr().out)
    assert report["error"].startswith("no result within 1 s") and "never joined" in report["error"]


def test_a_worker_that_wrote_nothing_is_an_error(torchrun, capsys):
    torchrun(result=None)
    assert nccl.main(LAUNCH) == 1
    assert "wrote no result" in nccl.find_report(capsys.readouterr().out)["error"]


def test_wrong_sums_fail_the_exit_code(torchrun, capsys):
    torchrun(result={**RESULT, "correct": False})
    assert nccl.main(LAUNCH) == 1


def test_no_rendezvous_is_a_report_saying_so_and_exit_2(torchrun, monkeypatch, capsys):
    torchrun()
    monkeypatch.delenv("AWS_BATCH_JOB_NODE_INDEX")
    assert nccl.main(LAUNCH) == 2
    assert "no rendezvous" in nccl.find_report(capsys.readouterr().out)["error"]


def test_output_reaches_the_log_while_torchrun_still_runs():
    seen = []

    class Log:
        def write(self, text):
            seen.append((time.monotonic(), text))

        def flush(self):
            pass

    start = time.monotonic()
    code, nccl_lines, _ = nccl.stream([sys.executable, "-c", "import time; print('x NCCL INFO Using network IB', "
                                       "flush=True); time.sleep(1.5); print('done')"], dict(os.environ), 30, Log())
    assert code == 0 and seen[0][0] - start < 1.2 and seen[-1][1] == "done\n"
    assert nccl.transport(nccl_lines) == "ib"

