"""Property: whatever file is given to ``gpuready probe --nvidia-smi-output``, the answer is a verdict or the probe's
own error, with strict JSON; never an exception of another kind."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuready.errors import UserError
from gpuready.probe import analyse_capture, core
from tests.gpuready.conftest import CAPTURES, H100

FUZZ = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
LINES = H100.read_text().splitlines() + (CAPTURES / "legacy_na_vs_not_supported.txt").read_text().splitlines()

# Pieces of real captures, shuffled and spliced with arbitrary text: near-misses reach deeper than random text.
captures = st.lists(st.sampled_from(LINES) | st.text(max_size=60) | st.sampled_from(
    ["index, name, uuid", "0, NVIDIA L4, GPU-1", "--query-gpu=index,name", "1" * 400, "inf", "nan", "\ufeff"]),
    max_size=12).map("\n".join)


def _analyse(data) -> None:
    try:
        report = analyse_capture(data, gpus_expected=1)
    except UserError as e:
        assert "nvidia-smi output" in str(e)
        return
    assert report.verdict in (core.PASS, core.WARN, core.FAIL)
    line = core.report_line({"verdict": report.verdict, "gpus": list(report.gpus),
                             "checks": [c.__dict__ for c in report.checks]})
    json.loads(line[len(core.REPORT_MARKER):], parse_constant=lambda c: pytest.fail(f"{c} in the JSON"))


@FUZZ
@given(captures)
def test_any_text(text):
    _analyse(text)


@FUZZ
@given(st.binary(max_size=200) | captures.map(lambda t: t.encode("utf-16")))
def test_any_bytes(data):
    _analyse(data)
