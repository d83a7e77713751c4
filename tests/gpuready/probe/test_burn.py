"""The sustained tier's verdicts (burn.burn_checks) on rounds and nvidia-smi samples as a burn records them.

The load loop itself needs CUDA: it runs only where a GPU is lent (bench/README.md). The samples here are built
from --query-gpu fields the real H100 capture prints (clocks, temperature, power, event reasons, ECC counters).
"""

from __future__ import annotations

import json

from gpuready.probe import burn, core
from tests.conftest import DATA

H100 = core.EXPECTED["H100 SXM"]


def _samples(rounds, **late):
    """nvidia-smi rows of one GPU each round; ``late`` fields set from the middle round on."""
    out = []
    for i in range(rounds):
        row = {"index": 0, "clocks.current.sm": 1980, "temperature.gpu": 60 + i, "power.draw": 690.0,
               "clocks_event_reasons.active": 0x4, "ecc.errors.uncorrected.volatile.total": 0,
               "ecc.errors.corrected.volatile.total": 0}
        out.append((10.0 * (i + 1), [dict(row, **late) if i >= rounds // 2 else row]))
    return out


def _verdicts(checks):
    return {c["name"]: c["verdict"] for c in checks}


def test_a_steady_gpu_passes_and_the_length_is_said():
    checks = burn.burn_checks([[790.0] * 12], [[2600.0] * 12], _samples(12), 121.4, [H100], core)
    assert set(_verdicts(checks).values()) == {"pass"}, checks
    assert checks[0]["measured"] == "121 s" and "12 rounds" in checks[0]["detail"]
    clocks = next(c for c in checks if c["name"] == "gpu0.burn_clocks")
    assert clocks["measured"] == "temperature max 71 C, power max 690 W, SM clock min 1980 MHz"


def test_a_figure_that_sags_fails_even_above_the_typical_floor():
    sagging = [790.0, 785.0, 780.0, 760.0, 720.0, 690.0, 660.0, 640.0]
    checks = {c["name"]: c for c in burn.burn_checks([sagging], [[2600.0] * 8], _samples(8), 80, [H100], core)}
    assert checks["gpu0.sustained_tflops"]["verdict"] == "fail"
    assert "sagged from 785 to 640" in checks["gpu0.sustained_tflops"]["detail"]  # the sizing round (790) not judged


def test_thermal_slowdown_under_load_fails_and_power_capping_does_not():
    hot = _samples(6, **{"clocks_event_reasons.active": 0x40 | 0x4, "clocks.current.sm": 1410})
    checks = {c["name"]: c for c in burn.burn_checks([[790.0] * 6], [[2600.0] * 6], hot, 60, [H100], core)}
    assert checks["gpu0.burn_clocks"]["verdict"] == "fail"
    assert checks["gpu0.burn_clocks"]["detail"].startswith("hw_thermal_slowdown at 40 s")
    assert "SM clock min 1410 MHz" in checks["gpu0.burn_clocks"]["measured"]


def test_ecc_errors_that_appear_under_load():
    errors = _samples(4, **{"ecc.errors.uncorrected.volatile.total": 2, "ecc.errors.corrected.volatile.total": 5})
    found = _verdicts(burn.burn_checks([[790.0] * 4], [[2600.0] * 4], errors, 40, [H100], core))
    assert found["gpu0.burn_ecc_uncorrected"] == "fail" and found["gpu0.burn_ecc_corrected"] == "warn"


def test_a_slow_gpu_fails_against_its_typical_figure_and_one_without_figures_is_shown():
    checks = {c["name"]: c for c in burn.burn_checks([[300.0] * 4, [40.0] * 4], [[2600.0] * 4, [500.0] * 4],
                                                     [], 40, [H100, core.EXPECTED["V100"]], core)}
    assert checks["gpu0.sustained_tflops"]["verdict"] == "fail"
    assert checks["gpu1.sustained_tflops"]["verdict"] == "pass" and checks["gpu1.sustained_tflops"]["expected"] is None
    assert checks["gpu1.sustained_memory_gbps"]["verdict"] == "fail"  # 500 < 0.75 x 810 GB/s


REAL = DATA / "nvidia-smi" / "h100-device-2026-11-26" / "burn-rounds.txt"
"""bench/burn_rounds.py on a lent H100 (driver 580.159.04, PyTorch 2.11): each round's figures and the nvidia-smi
sample taken while it ran."""


def _real_rounds():
    rounds = [json.loads(line.removeprefix("ROUND ")) for line in REAL.read_text().splitlines()
              if line.startswith("ROUND ")]
    gemm, memory = [[r["tflops"] for r in rounds]], [[r["copy_gbps"] for r in rounds]]
    samples = [(r["t_s"], [{"index": 0, **{k: r[k] for k in ("clocks.current.sm", "temperature.gpu", "power.draw",
                                                             "clocks_event_reasons.active")}}]) for r in rounds]
    return gemm, memory, samples


def test_a_healthy_h100_passes_on_its_real_rounds():
    gemm, memory, samples = _real_rounds()
    checks = {c["name"]: c for c in burn.burn_checks(gemm, memory, samples, 96, [H100], core)}
    assert {c["verdict"] for c in checks.values()} == {"pass"}, checks
    assert checks["gpu0.sustained_tflops"]["measured"] == 681.0  # the rounds' median, the sizing round left out
    assert checks["gpu0.burn_clocks"]["measured"] == "temperature max 55 C, power max 401 W, SM clock min 1980 MHz"


def test_a_fast_sizing_round_is_no_sag():
    """The first run on a real H100 failed 'sagged from 787 to 686': its sizing round (20 products, tens of
    milliseconds) ran faster than every ~10 s round after it, at the same 1980 MHz. That round is not judged."""
    gemm, memory, samples = _real_rounds()
    gemm[0][0] = 787.0
    checks = {c["name"]: c for c in burn.burn_checks(gemm, memory, samples, 96, [H100], core)}
    assert checks["gpu0.sustained_tflops"]["verdict"] == "pass", checks["gpu0.sustained_tflops"]
    gemm[0][-3:] = [600.0] * 3  # a real sag in the judged rounds still fails
    checks = {c["name"]: c for c in burn.burn_checks(gemm, memory, samples, 96, [H100], core)}
    assert checks["gpu0.sustained_tflops"]["verdict"] == "fail"
