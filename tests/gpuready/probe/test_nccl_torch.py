"""The gang job's whole path run for real: two launchers (two "nodes" of an Indexed Job, on loopback) start real
torchrun, whose four workers rendezvous, gather hostnames and all-reduce; node 0 prints the report. PyTorch's gloo
backend stands in for NCCL (no GPU here), so the transport is unknown and the figures are CPU figures.

Needs PyTorch (a CPU build: `pip install torch`); skipped without it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from gpuready.probe import nccl
from gpuready.smoke import batch_probe

pytest.importorskip("torch.distributed.run")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(tmp_path: Path, index: int, port: int, wait: int = 60) -> subprocess.Popen:
    """One node's launcher, started as a pod of an Indexed Job starts it (the files written as its ConfigMap)."""
    folder = tmp_path / f"node{index}"
    folder.mkdir()
    for name, data in batch_probe.probe_files().items():
        (folder / name).write_bytes(data)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_BATCH_", "GPUREADY_TORCHRUN"))}
    env.update(JOB_COMPLETION_INDEX=str(index), OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo")
    return subprocess.Popen([sys.executable, str(folder / "nccl.py"), "launch", "--nodes", "2", "--gpus-per-node",
                             "2", "--main-address", "127.0.0.1", "--port", str(port), "--backend", "gloo",
                             "--message-mib", "8", "--rendezvous-timeout", str(wait), "--timeout", "120"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


def test_two_nodes_of_two_workers_all_reduce_and_node0_reports(tmp_path):
    port = _free_port()
    nodes = [_launch(tmp_path, i, port) for i in range(2)]
    outputs = [p.communicate(timeout=180)[0] for p in nodes]
    assert [p.returncode for p in nodes] == [0, 0], outputs
    report = nccl.find_report(outputs[0])
    assert report is not None and nccl.find_report(outputs[1]) is None, outputs  # only the main node reports
    assert (report["world_size"], report["correct"], report["error"], report["bytes"]) == (4, True, None, 8 * 2**20)
    assert report["hosts"] == [socket.gethostname()] and report["busbw_gbps"] > 0
    assert report["busbw_gbps"] == pytest.approx(report["algbw_gbps"] * 2 * 3 / 4, rel=0.02)
    verdicts = {c["name"]: c["verdict"] for c in nccl.checks(report, nodes=2, expected_transport="socket")}
    assert verdicts["nccl_all_reduce_correct"] == "pass"
    assert verdicts["nccl_hosts"] == "fail"  # both "nodes" ran on this one host: the check says so


def test_a_node_that_never_arrives_ends_the_run_with_an_error_report(tmp_path):
    main = _launch(tmp_path, 0, _free_port(), wait=5)  # node 1 never starts
    out = main.communicate(timeout=240)[0]
    report = nccl.find_report(out)
    assert main.returncode == 1 and report is not None and report["error"], out[-2000:]
    assert report["correct"] is False
