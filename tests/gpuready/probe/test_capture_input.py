"""What ``gpuready probe --nvidia-smi-output`` makes of files that are not a clean UTF-8 capture: other text is an
error, not a verdict; BOM and UTF-16 captures parse; hostile lines parse in linear time; the JSON is strict."""

from __future__ import annotations

import codecs
import json
import math
import time

import pytest

from gpuready.errors import UserError
from gpuready.probe import analyse_capture, core
from tests.gpuready.conftest import CAPTURES, h100_idle

NOT_NVIDIA_SMI = "this does not look like nvidia-smi output"


@pytest.mark.parametrize("text", [
    "milk\neggs\n",
    (CAPTURES / "help-query-gpu_driver-590.48.01.txt").read_text(),
    "",
    "name\n",
    "index, name\nfoo\n",
])
def test_text_that_is_not_nvidia_smi_output_is_an_error(text):
    with pytest.raises(UserError, match=NOT_NVIDIA_SMI):
        analyse_capture(text)


def test_nvidia_smi_saying_no_gpu_is_still_a_failed_verdict():
    report = analyse_capture("No devices were found\n")
    assert report.verdict == "fail" and report.checks[0].name == "nvidia_driver"


@pytest.mark.parametrize("encode", [
    lambda t: codecs.BOM_UTF8 + t.encode(),
    lambda t: "\ufeff".encode("utf-16-le") + t.encode("utf-16-le"),
    lambda t: "\ufeff".encode("utf-16-be") + t.encode("utf-16-be"),
    lambda t: ("\ufeff" + t).encode(),  # read as text: the BOM arrives as a character
])
def test_bom_and_utf16_captures_parse(encode):
    data = encode(h100_idle())
    report = analyse_capture(data.decode("utf-8") if data.startswith(b"\xef\xbb\xbf") else data, gpus_expected=1)
    assert report.verdict == "pass" and report.gpus[0]["name"] == "NVIDIA H100 80GB HBM3"


@pytest.mark.parametrize("codec", ["utf-16", "utf-8-sig"])
def test_the_cli_reads_a_capture_saved_as_powershell_saves_it(codec, tmp_path, capsys):
    from gpuready.cli import main

    saved = tmp_path / "smi.txt"
    saved.write_text(h100_idle(), encoding=codec)
    assert main(["probe", "--nvidia-smi-output", str(saved), "--gpus", "1"]) == 0
    assert "Verdict: PASS" in capsys.readouterr().out


def test_bytes_that_are_not_text_are_an_error():
    with pytest.raises(UserError, match=NOT_NVIDIA_SMI):
        analyse_capture(b"\x89PNG\r\n\x1a\n\xff\xfe\xfd")


@pytest.mark.parametrize("line", [
    "--query-" * 12_500,  # each occurrence once scanned to the end of the line by an unanchored regex
    "--query-" + "a" * 100_000,
    " --query-gpu=" + "a," * 50_000,
    "[" * 100_000,
    "name [" + "[" * 100_000 + "]",
    "1" * 100_000,
    "Driver Version" + " " * 100_000,
    "0x" + "f" * 100_000,
    "\"" + "a," * 50_000,
])
def test_hostile_100kb_lines_parse_fast(line):
    started = time.perf_counter()
    core.parse_query_csv(line + "\n" + line)
    core.parse_versions(line)
    core.value(line, "memory.total")
    core.find_report(line)
    assert time.perf_counter() - started < 1.0


def test_numbers_too_large_for_a_float_stay_text_and_json_is_strict():
    assert core.value("9" * 400) == "9" * 400 and core.value("9" * 400 + ".5") == "9" * 400 + ".5"
    line = core.report_line({"verdict": "pass", "checks": [core.check("matmul", "pass", math.inf, math.nan)]})
    report = json.loads(line[len(core.REPORT_MARKER):], parse_constant=lambda c: pytest.fail(f"{c} in the JSON"))
    assert report["checks"][0]["measured"] is None and report["checks"][0]["expected"] is None
    assert report["notes"] == ["checks[0].measured was inf, written as null",
                               "checks[0].expected was nan, written as null"]


def test_reports_read_back_hold_no_infinite_figures():
    from gpuready.probe import ProbeReport

    report = ProbeReport.from_json({"verdict": "warn", "checks": [core.check("matmul", "warn", math.inf)],
                                    "framework": {"tflops": math.nan}})
    assert report.checks[0].measured is None and report.framework == {"tflops": None}
