"""The sustained tier's verdicts (burn.burn_checks) on rounds and nvidia-smi samples as a burn records them.

The load loop itself needs CUDA: it runs only where a GPU is lent (bench/README.md). The samples here are built
from --query-gpu fields the real H100 capture prints (clocks, temperature, power, event reasons, ECC counters).
"""

from __future__ import annotations

from gpuready.probe import burn, core

H100 = core.EXPECTED["H100 SXM"]


def _samples(rounds, **late):
    """nvidia-smi rows of one GPU each round; ``late`` fields set from the middle round on."""
    out = []
    for i in range(rounds):
        row = {"index": 0, "clocks.sm": 1980, "temperature.gpu": 60 + i, "power.draw": 690.0,
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
    assert "sagged from 788 to 650" in checks["gpu0.sustained_tflops"]["detail"]


def test_thermal_slowdown_under_load_fails_and_power_capping_does_not():
    hot = _samples(6, **{"clocks_event_reasons.active": 0x40 | 0x4, "clocks.sm": 1410})
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
