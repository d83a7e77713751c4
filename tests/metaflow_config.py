"""What Metaflow's own config module reads from a profile file: the test of every Metaflow profile gpuready writes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def metaflow_reads(profile: dict, folder: Path) -> dict:
    """Metaflow's ``metaflow_config`` values (names without ``METAFLOW_``) for each key of ``profile``, saved as
    ``folder/config_gpu.json`` and selected with ``METAFLOW_PROFILE=gpu``, in a fresh interpreter."""
    (folder / "config_gpu.json").write_text(json.dumps(profile))
    names = [key.removeprefix("METAFLOW_") for key in profile]
    code = ("import json, metaflow.metaflow_config as c; "
            f"print(json.dumps({{n: getattr(c, n) for n in {names!r}}}))")
    env = {"METAFLOW_HOME": str(folder), "METAFLOW_PROFILE": "gpu", "PATH": "/usr/bin:/bin", "HOME": str(folder)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])
