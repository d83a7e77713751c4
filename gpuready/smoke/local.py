"""The local target: the probe in a subprocess on this machine, exactly as a job runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ..probe import Check, ProbeReport, core
from .result import SmokeResult

PROBE_FILE = Path(core.__file__)


def run(gpus: int = 0, timeout: float = 300, full: bool = False) -> SmokeResult:
    """Run the probe file with this Python; a probe that prints no report is a failure."""
    result = SmokeResult(target="local", job={"host": "this machine"})
    command = [sys.executable, str(PROBE_FILE), "--gpus", str(gpus), *(["--full"] if full else [])]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        result.checks.append(Check("probe_finished", core.FAIL, f">{timeout:g} s", f"<{timeout:g} s",
                                   "the probe did not finish: a hung driver or GPU"))
        return result
    result.job["exit_code"] = done.returncode
    found = core.find_report(done.stdout)
    result.add_probe(ProbeReport.from_json(found) if found else None)
    if found is None and done.stderr:
        result.diagnosis.append(done.stderr.strip().splitlines()[-1])
    return result
