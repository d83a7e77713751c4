"""What the Pulumi CLI and its Node.js language host do with ``examples/typescript``, done by the test: install the
program's dependencies from its lock (``npm ci``), with the stand-in SDK (:mod:`tests.examples.standin_sdk`) where
``pulumi package add`` would have generated ``sdks/gpuready``, and run the program with the real ``@pulumi/pulumi``
runtime as ``pulumi-language-nodejs`` starts it: ``node @pulumi/pulumi/cmd/run --monitor ... --engine ...
--project ... --root-directory ... --stack ... --pwd ... [--dry-run] --parallel N .``, the stack's config in
``PULUMI_CONFIG`` (keys as ``<namespace>:config:<name>``), ``PULUMI_NODEJS_TYPESCRIPT=true`` (ts-node compiles and
type-checks ``index.ts``).

The copy runs in ``.cache/examples-typescript`` (ignored by git): the program's files are copied there on each run,
``node_modules`` installed there once per lock."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Mapping

from tests.conftest import ROOT
from tests.examples import standin_sdk

PROGRAM = ROOT / "examples" / "typescript"
FILES = ("Pulumi.yaml", "Pulumi.dev.yaml", "package.json", "package-lock.json", "tsconfig.json", "index.ts")
WORK = ROOT / ".cache" / "examples-typescript"


UNREACHABLE = ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT", "ENETUNREACH")
"""What npm prints when it cannot reach its registry (no network): the one failure that is not the program's."""


class RegistryUnreachable(RuntimeError):
    """``npm ci`` could not reach the registry for the example's dependencies."""


def missing_tools() -> list[str]:
    """The tools the TypeScript example needs that this machine lacks (``node``, ``npm``)."""
    return [tool for tool in ("node", "npm") if shutil.which(tool) is None]


def prepared(work: Path = WORK) -> Path:
    """``work`` holding the program, the stand-in SDK in ``sdks/gpuready`` and ``node_modules`` installed by
    ``npm ci`` from the checked-in lock (again only when the lock changes); returns ``work``. A failed install
    raises with npm's output."""
    work.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        shutil.copyfile(PROGRAM / name, work / name)
    standin_sdk.write(work / "sdks" / "gpuready")
    lock = hashlib.sha256((PROGRAM / "package-lock.json").read_bytes()).hexdigest()
    stamp = work / "node_modules" / ".gpuready-lock"
    if not stamp.is_file() or stamp.read_text() != lock:
        done = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts"], cwd=work,
                              capture_output=True, text=True, timeout=600)
        if done.returncode:
            unreachable = next((code for code in UNREACHABLE if code in done.stderr), None)
            if unreachable:
                raise RegistryUnreachable(f"npm ci could not reach the npm registry ({unreachable})")
            raise RuntimeError(f"npm ci failed in {work}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        stamp.write_text(lock)
    return work


def run(work: Path, monitor: str, engine: str, project: str, stack: str, config: Mapping[str, str],
        preview: bool) -> subprocess.CompletedProcess:
    """Run the program in ``work`` as ``pulumi-language-nodejs`` runs it for ``pulumi preview`` (``preview``) or
    ``pulumi up`` against the resource monitor and engine at ``monitor`` and ``engine``; returns the finished
    process (output captured)."""
    pulumi_config = {}
    for key, value in config.items():
        namespace, _, name = key.partition(":")
        pulumi_config[f"{namespace}:config:{name}"] = value
    env = {**os.environ, "PULUMI_CONFIG": json.dumps(pulumi_config), "PULUMI_CONFIG_SECRET_KEYS": "[]",
           "PULUMI_NODEJS_TYPESCRIPT": "true"}
    command = ["node", str(work / "node_modules" / "@pulumi" / "pulumi" / "cmd" / "run"), "--monitor", monitor,
               "--engine", engine, "--organization", "organization", "--project", project,
               "--root-directory", str(work), "--stack", stack, "--pwd", str(work),
               *(["--dry-run"] if preview else []), "--parallel", "8", "."]
    return subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=300)
