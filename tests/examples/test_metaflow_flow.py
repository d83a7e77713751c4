"""The example Metaflow flow runs in Metaflow's own runtime: `start` hands the probe to `probe`, which runs it as a
GPU node would (here with the step run locally, GPU_ON=local, on a replayed nvidia-smi), and `end` judges it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from tests.conftest import ROOT
from tests.gpuready.conftest import H100

FLOW = ROOT / "examples" / "metaflow" / "gpu_probe_flow.py"


def _run(tmp_path):
    shutil.copy(FLOW, tmp_path / FLOW.name)  # Metaflow keeps its local datastore beside the flow's working directory
    env = {**os.environ, "USER": "ci", "METAFLOW_HOME": str(tmp_path), "GPU_ON": "local", "GPUS": "1"}
    return subprocess.run([sys.executable, FLOW.name, "run"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=240)


def test_the_probe_step_passes_on_a_healthy_gpu_and_end_prints_its_checks(tmp_path, fake_smi):
    fake_smi(H100, row=0)
    done = _run(tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Verdict: PASS" in done.stdout + done.stderr and "NVIDIA H100 80GB HBM3" in done.stdout + done.stderr


def test_a_gpu_with_uncorrected_ecc_errors_fails_the_run(tmp_path, fake_smi):
    fake_smi(H100, row=0, **{"ecc.errors.uncorrected.volatile.total": "3"})
    done = _run(tmp_path)
    assert done.returncode != 0 and "the GPU probe failed" in done.stdout + done.stderr
