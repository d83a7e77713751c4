"""Every fault at every step of `gpuready smoke`, on AWS Batch and on Kubernetes, through the CLI (fault_matrix.py):
one verdict line, exit 1 or 2 (130 or 1 for Ctrl-C), never 3 or a traceback, no job left running, none submitted
twice, ``--timeout`` held to 15 s. The same cases print their figures with ``python bench/fault_matrix.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import fault_matrix as matrix

PASSING = ("throttle", "5xx", "reset", "reset-after")
"""Faults that pass: retried, so the run ends with the job's own verdict (FAIL: 1 GPU where 2 were asked)."""


@pytest.fixture(scope="module")
def worlds():
    with matrix.worlds() as world:
        yield world


@pytest.mark.parametrize("target, step, fault", matrix.cases())
def test_fault(worlds, target, step, fault):
    outcome = worlds[target].case(step, fault, worlds["workdir"])
    assert outcome.problems() == [], f"{outcome.problems()}\n{outcome.stdout}\n{outcome.stderr}"
    assert outcome.submitted == 1 or outcome.code == 2 and step == "submit"  # refused or unreachable: none made
    if fault in PASSING:
        assert outcome.code == 1 and "Verdict: FAIL" in outcome.stdout
        if step == "logs":  # the report was read after the fault
            assert "FAIL     gpu_count" in outcome.stdout
    if fault == "client":  # the API refused: one line naming the refusal, unless the refused call was a cleanup
        assert outcome.code == (1 if step == "cancel" else 2)
        assert step == "cancel" or "refused the call" in outcome.stderr


def test_the_matrix_covers_every_step_of_both_targets():
    assert {(t, s) for t, s, _ in matrix.cases()} == {(t, s) for t in ("batch", "kubernetes") for s in matrix.STEPS}
    assert set(matrix.STEPS) == {"submit", "first-describe", "polling", "logs", "cancel"}
    assert {"throttle", "5xx", "client", "reset", "hang", "interrupt"} <= set(matrix.FAULTS)


def test_the_smoke_guide_quotes_the_whole_matrix():
    readme = (Path(__file__).resolve().parents[3] / "docs" / "smoke.md").read_text()
    runs = len(matrix.cases())
    assert f"| {runs} | {runs} | 0 | 0 | 0 | 0 |" in readme  # injected, runs, leaked, duplicates, tracebacks, verdicts
