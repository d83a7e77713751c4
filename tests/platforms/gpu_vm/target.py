"""The ``gpu-vm`` smoke target, against a fake instance: the "instance" is an ``nvidia-smi`` capture on disk
(``GPU_VM_CAPTURE``), and running the probe there is reading that capture. A real platform's target would run the
probe over SSH or SSM; the steps and their guarantees (:class:`SmokeTarget`) are the same."""

from __future__ import annotations

import os
from pathlib import Path

from gpuready.probe import Check, analyse_capture, core
from gpuready.smoke.result import SmokeResult
from gpuready.smoke.target import SmokeTarget


class FakeVmTarget(SmokeTarget):
    def preflight(self) -> bool:
        self.result = SmokeResult(target="gpu-vm", job={"instance": self.outputs["instanceId"]})
        self.capture = Path(os.environ["GPU_VM_CAPTURE"])
        return True

    def submit(self) -> None:
        self.result.job["started"] = True

    def follow(self) -> bool:
        self.result.checks.append(Check("job_finished", core.PASS, detail="the probe ran on the instance"))
        return True

    def collect(self) -> None:
        self.result.add_probe(analyse_capture(self.capture.read_bytes(), gpus_expected=int(self.outputs["gpus"])))

    def cleanup(self, reason: str) -> None:
        self.result.job["cleaned"] = reason
