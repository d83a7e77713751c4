"""A sweep's rows from probe reports: the slowest GPU's GEMM and memory bandwidth against typical, health apart from
speed, duplicates counted once, the table, JSON and JUnit. The reports are the probe's own (core.probe against a
replayed nvidia-smi), with the throughput checks the probe adds when PyTorch runs (core._figure) for the figures a
test gives, as a GPU node would measure them."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from gpuready.probe import ProbeReport, core
from gpuready.smoke import sweep
from tests.gpuready.conftest import H100

H100_SXM = core.EXPECTED["H100 SXM"]
GEMM_TYPICAL, HBM_TYPICAL = H100_SXM[0] * H100_SXM[1], H100_SXM[2] * H100_SXM[3]


def _report(fake_smi, gemm=(), hbm=(), **overrides) -> ProbeReport:
    """The probe's report on a node whose GPU i measured ``gemm[i]`` TFLOP/s and ``hbm[i]`` GB/s."""
    fake_smi(H100, row=0, gpus=max(len(gemm), 1), **overrides)
    data = core.probe(gpus_expected=max(len(gemm), 1))
    data["checks"] = [c for c in data["checks"] if c["name"] != "framework"]
    for i, (tflops, gbps) in enumerate(zip(gemm, hbm)):
        data["checks"] += [core._figure(f"gpu{i}.bf16_matmul_tflops", tflops, GEMM_TYPICAL),
                           core._figure(f"gpu{i}.memory_bandwidth_gbps", gbps, HBM_TYPICAL)]
    data["verdict"] = core.verdict(data["checks"])
    return ProbeReport.from_json(json.loads(json.dumps(data)))


def test_a_row_quotes_the_slowest_gpu_against_typical_and_a_slow_gpu_fails_the_node(fake_smi):
    row = sweep.row("node-a", _report(fake_smi, gemm=(700.0, 400.0), hbm=(2600.0, 2550.0)))
    assert (row.gemm_tflops.measured, row.gemm_tflops.gpu) == (400.0, "gpu1")
    assert row.gemm_tflops.typical == round(GEMM_TYPICAL, 1) and row.hbm_gbps.measured == 2550.0
    assert row.health == "pass" and row.verdict == "fail"  # healthy by nvidia-smi, but GEMM at 51% of typical
    assert "bf16_matmul_tflops on gpu1: below 75%" in row.detail
    assert row.gpus == 2 and row.gpu_model == "NVIDIA H100 80GB HBM3"


def test_health_failures_are_summed_up_once_per_kind(fake_smi):
    row = sweep.row("node-b", _report(fake_smi, gemm=(700.0, 700.0), hbm=(2600.0, 2600.0),
                                      **{"ecc.errors.uncorrected.volatile.total": "1"}))
    assert row.health == "fail" and row.verdict == "fail"
    assert row.detail.startswith("ecc_uncorrected on gpu0, gpu1: uncorrected ECC errors")


def test_no_report_and_a_problem_fail_the_row():
    row = sweep.row("node-c", None)
    assert row.verdict == "fail" and "no probe report" in row.detail and row.health == "unknown"


def test_duplicates_count_once_and_render_in_text_json_and_junit(fake_smi, tmp_path):
    good = _report(fake_smi, gemm=(700.0,), hbm=(2600.0,))
    rows = [sweep.row("i-1", good, job={"name": "j-0"}), sweep.row("i-1", good, job={"name": "j-1"}),
            sweep.row("i-2", None, job={"name": "j-2"})]
    sweep.deduplicate(rows, ["i-1", "i-1", None])
    result = sweep.SweepResult(target="batch", rows=rows)
    assert [r.verdict for r in rows] == ["pass", "duplicate", "fail"] and "already swept by j-0" in rows[1].detail
    assert result.verdict == "fail" and len(result.counted) == 2
    text = sweep.render_text(result)
    assert f"700/{GEMM_TYPICAL:g}" in text and "Verdict: FAIL (2 nodes, 1 failing)" in text
    data = json.loads(json.dumps(result.to_json()))
    assert data["nodes"] == 2 and data["failing"] == 1 and data["rows"][0]["gemm_tflops"]["measured"] == 700.0
    sweep.write_junit(result, tmp_path / "sweep.xml")
    cases = ET.parse(tmp_path / "sweep.xml").getroot().findall(".//testcase")
    assert [(c.find("failure") is not None, c.find("skipped") is not None) for c in cases] == \
        [(False, False), (False, True), (True, False)]


def test_an_empty_sweep_fails():
    assert sweep.SweepResult(target="kubernetes").verdict == "fail"
