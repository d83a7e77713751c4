"""Multi-node NVLink, read from NCCL's own lines and judged on the SDK side. The NCCL output is a STAND-IN
(tests/data/nccl-mnnvl/, constructed in the format NCCL prints, see PROVENANCE.md): no GB200 rack was at hand."""

from __future__ import annotations

import pytest

from gpuready.probe import core, nccl, nvlink
from tests.conftest import DATA

STAND_IN = (DATA / "nccl-mnnvl" / "gb200_2x4_constructed.txt").read_text()
RESULT = {"world_size": 8, "hosts": ["node-0", "node-1"], "correct": True, "bytes": 2**30, "algbw_gbps": 400.0,
          "busbw_gbps": 700.0, "nccl_version": "2.27.7"}


def _verdicts(found):
    return {c["name"]: c for c in found}


def test_ncclS_clique_line_gives_the_ranks_sharing_nvlink():
    assert nccl.mnnvl(STAND_IN) == 8
    report = nccl.assemble(RESULT, 2, 4, STAND_IN)
    assert report["mnnvl_ranks"] == 8 and report["transport"] == "ib"


@pytest.mark.parametrize("log", sorted((DATA / "nccl").glob("*.txt")), ids=lambda p: p.name)
def test_no_real_network_log_claims_an_nvlink_clique(log):
    assert nccl.mnnvl(log.read_text()) == 0


def test_a_rack_all_reduce_on_nvlink_passes_and_sets_its_bandwidth_beside_nvidias_figure():
    report = nccl.assemble(RESULT, 2, 4, STAND_IN)
    found = _verdicts(nvlink.checks(report, gpu_name="NVIDIA GB200"))
    assert (found["nccl_nvlink"]["verdict"], found["nccl_nvlink"]["measured"]) == (core.PASS, 8)
    bandwidth = found["nccl_nvlink_bandwidth"]
    assert (bandwidth["measured"], bandwidth["expected"], bandwidth["required"]) == (700.0, 900.0, False)
    assert "78% of the 900 GB/s each way" in bandwidth["detail"] and "1.8 TB/s bidirectional" in bandwidth["detail"]


def test_an_all_reduce_over_the_network_fails_and_says_what_multi_node_nvlink_needs():
    report = nccl.assemble(RESULT, 2, 4, STAND_IN.replace("MNNVL 1 cliqueId", "MNNVL 0 cliqueId"))
    (check,) = nvlink.checks(report, gpu_name="NVIDIA GB200")
    assert (check["name"], check["verdict"], check["measured"], check["expected"]) == \
        ("nccl_nvlink", core.FAIL, 0, 8)
    assert "ComputeDomain" in check["detail"] and "570.158.01" in check["detail"]
    part = nccl.assemble(RESULT, 2, 4, STAND_IN.replace("cliqueSize 8", "cliqueSize 4"))
    (check,) = nvlink.checks(part, gpu_name="NVIDIA GB200")
    assert check["verdict"] == core.FAIL and check["detail"].startswith("only 4 of 8 ranks")


def test_a_gpu_without_a_figure_is_reported_unjudged_and_a_failed_run_has_no_nvlink_verdict():
    report = nccl.assemble(RESULT, 2, 4, STAND_IN)
    found = _verdicts(nvlink.checks(report, gpu_name="NVIDIA H100 80GB HBM3"))
    assert found["nccl_nvlink_bandwidth"]["expected"] is None
    assert "no NVLink figure" in found["nccl_nvlink_bandwidth"]["detail"]
    assert nvlink.checks(nccl.assemble(RESULT, 2, 4, STAND_IN, error="NCCL timeout"), gpu_name="GB200") == []
    assert nvlink.checks(None, gpu_name="GB200") == []
    old = {k: v for k, v in report.items() if k != "mnnvl_ranks"}
    (check,) = nvlink.checks(old, gpu_name="NVIDIA GB200")
    assert check["verdict"] == core.FAIL and "older gpuready launcher" in check["detail"]


def test_the_jobs_do_not_carry_the_sdk_side_verdicts():
    from gpuready.smoke.batch_probe import probe_files

    assert set(probe_files()) == {"core.py", "nccl.py"}
