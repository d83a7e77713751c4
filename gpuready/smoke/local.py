"""The local target: the probe in a subprocess on this machine, exactly as a job runs it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

from ..probe import Check, ProbeReport, core
from .result import SmokeResult

PROBE_FILE = Path(core.__file__)


def run(gpus: int = 0, timeout: float = 300, full: bool = False) -> SmokeResult:
    """Run the probe file with this Python; a probe that prints no report is a failure. However the run ends
    (the timeout, Ctrl-C, SIGTERM), nothing it started is left running: the probe runs in its own process group,
    killed whole."""
    result = SmokeResult(target="local", job={"host": "this machine"})
    command = [sys.executable, str(PROBE_FILE), "--gpus", str(gpus), *(["--full"] if full else [])]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        result.checks.append(Check("probe_finished", core.FAIL, f">{timeout:g} s", f"<{timeout:g} s",
                                   "the probe did not finish: a hung driver or GPU; killed"))
        return result
    finally:  # the timeout, Ctrl-C, SIGTERM: the probe too; any end: what it left behind
        _kill(process)
    result.job["exit_code"] = process.returncode
    found = core.find_report(stdout)
    result.add_probe(ProbeReport.from_json(found) if found else None)
    if found is None and stderr:
        result.diagnosis.append(stderr.strip().splitlines()[-1])
    return result


def _kill(process: subprocess.Popen) -> None:
    """Kill the probe's process group (the probe and its nvidia-smi or benchmark children), reap the probe and
    close its pipes."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, AttributeError):  # none left; no process groups (Windows)
        process.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=5)
    for pipe in (process.stdout, process.stderr):
        pipe.close()
