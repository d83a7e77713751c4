"""Fixtures for the SDK's tests: a stand-in nvidia-smi that replays real captures."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from tests.conftest import DATA

CAPTURES = DATA / "nvidia-smi"
H100 = CAPTURES / "h100-80gb-hbm3_driver-590.48.01.txt"


def h100_idle() -> str:
    """The real H100 capture up to its first --query-gpu snapshot (idle, no memory held); the whole capture ends
    with a snapshot under load (gpu_burn and memhog holding 19,818 MiB)."""
    lines = H100.read_text().splitlines()
    idle = next(i for i, line in enumerate(lines) if line.startswith("2026/07/14 08:12:38"))
    return "\n".join(lines[:idle + 1]) + "\n"


@pytest.fixture
def fake_smi(tmp_path, monkeypatch):
    """Put a replaying nvidia-smi first on PATH, and hide PyTorch (a CPU build would see no GPU behind the
    replayed ones); returns a function setting what it replays."""
    script = tmp_path / "bin" / "nvidia-smi"
    script.parent.mkdir()
    replay = Path(__file__).parent / "probe" / "fake_smi.py"
    # -IS: the standard library alone, as nvidia-smi needs nothing else; a third of the start-up time
    script.write_text(f"#!{sys.executable} -IS\nimport runpy\nrunpy.run_path({str(replay)!r}, run_name='__main__')\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    dmesg = script.parent / "dmesg"
    dmesg.write_text(script.read_text().replace("import runpy", "import os, runpy; os.environ['FAKE_SMI_AS'] = 'dmesg'"))
    dmesg.chmod(script.stat().st_mode)
    (tmp_path / "smi-state").mkdir()
    monkeypatch.setenv("FAKE_SMI_STATE", str(tmp_path / "smi-state"))
    monkeypatch.setattr("gpuready.probe.core.KMSG", str(tmp_path / "no-kmsg"))
    monkeypatch.setenv("PATH", f"{script.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setitem(sys.modules, "torch", None)
    hidden = tmp_path / "no-torch"
    hidden.mkdir()
    (hidden / "torch.py").write_text("raise ImportError('hidden by the test: a node without PyTorch')\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, (str(hidden), os.environ.get("PYTHONPATH")))))

    def use(capture=H100, row=0, gpus=1, **overrides):
        monkeypatch.setenv("FAKE_SMI_CAPTURE", str(capture))
        monkeypatch.setenv("FAKE_SMI_ROW", str(row))
        monkeypatch.setenv("FAKE_SMI_GPUS", str(gpus))
        monkeypatch.setenv("FAKE_SMI_SET", ";".join(f"{k}={v}" for k, v in overrides.items()))
    return use
