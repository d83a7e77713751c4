"""The local target: the probe in a subprocess on this machine, exactly as a job runs it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Optional

from ..probe import Check, ProbeReport, core
from .result import SmokeResult
from .target import Request, SmokeTarget, drive

PROBE_FILE = Path(core.__file__)


class LocalTarget(SmokeTarget):
    """The probe file run with this Python, in its own process group, exactly as a job runs it; a probe that prints
    no report is a failure. However the run ends (the timeout, Ctrl-C, SIGTERM), nothing it started is left
    running: the process group is killed whole. A Ctrl-C is no verdict here: the CLI exits 130. Reads no outputs:
    make it with ``LocalTarget({}, request)``."""

    process: Optional[subprocess.Popen] = None

    def preflight(self) -> bool:
        self.result = SmokeResult(target="local", job={"host": "this machine"})
        return True

    def submit(self) -> None:
        command = [sys.executable, str(PROBE_FILE), "--gpus", str(self.request.gpus or 0),
                   *(["--full"] if self.request.full else [])]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        start_new_session=True)

    def follow(self) -> bool:
        timeout = self.request.timeout
        try:
            self.stdout, self.stderr = self.process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.result.checks.append(Check("probe_finished", core.FAIL, f">{timeout:g} s", f"<{timeout:g} s",
                                            "the probe did not finish: a hung driver or GPU; killed"))
            return False
        return True

    def collect(self) -> None:
        self.result.job["exit_code"] = self.process.returncode
        found = core.find_report(self.stdout)
        self.result.add_probe(ProbeReport.from_json(found) if found else None)
        if found is None and self.stderr:
            self.result.diagnosis.append(self.stderr.strip().splitlines()[-1])

    def cleanup(self, reason: str) -> None:
        """Kill the probe's process group (the timeout, Ctrl-C, SIGTERM: the probe too; any end: what it left
        behind), once."""
        process, self.process = self.process, None
        if process is not None:
            _kill(process)


def run(gpus: int = 0, timeout: float = 300, full: bool = False) -> SmokeResult:
    """Run the probe here (:class:`LocalTarget`)."""
    return drive(LocalTarget({}, Request(timeout=timeout, gpus=gpus, full=full)))


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
