"""Time ``gpuready plan`` as a whole process against the floor of loading what it must load.

The floor is a process that imports pulumi and pulumi_policy and touches every provider resource class the stack
creates (the provider packages load lazily, so each class is named), and with Kubernetes objects their metadata type
(``pulumi_kubernetes.meta.v1``, which registering any of them loads). Runs are interleaved, the median of each is taken, and the ratio
plan / floor is printed per stack: the plan should cost little beyond loading the classes it must use.

The runs write and read Python's bytecode cache as an installed gpuready does after its first run (pip writes it
at install): the bench drops ``PYTHONDONTWRITEBYTECODE`` from their environment, since with it set every run would
compile gpuready's own modules from source (the provider packages' bytecode came with their install), and the
warm-up run writes the cache.

Each run is timed twice: wall-clock and the CPU time the process used (user + system, from ``wait4``). Both are
single-threaded work with no I/O to wait on, so on a quiet machine the two agree; on a shared one the wall clock
mostly measures the other processes, while CPU time still measures the plan. ``--clock`` picks the ratio that
``--max-ratio`` judges (default ``cpu``); both are printed.

    python bench/plan_bench.py                      # every reference stack, 7 runs each
    python bench/plan_bench.py --stack aws-batch --runs 11 --max-ratio 1.3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def _classes(stack: str) -> list[str]:
    """``pulumi_aws.batch.ComputeEnvironment``-style paths of every provider resource the plan declares (and, with
    Kubernetes objects, the metadata type that declaring one loads)."""
    out = subprocess.run([sys.executable, "-m", "gpuready", "plan", "--stack", stack, "--json"], check=True,
                         capture_output=True, text=True).stdout
    paths = set()
    for resource in json.loads(out)["resources"]:
        package, module, cls = resource["type"].split(":")
        if package == "gpuready":
            continue
        if package == "pulumi" and module == "providers":
            paths.add(f"pulumi_{cls.replace('-', '_')}.Provider")
        elif package == "kubernetes":  # core/v1 -> core.v1, helm.sh/v3 -> helm.v3
            group, _, version = module.partition("/")
            known = group in ("core", "apps", "batch", "helm.sh", "rbac.authorization.k8s.io", "policy",
                              "scheduling.k8s.io", "storage.k8s.io", "networking.k8s.io", "admissionregistration.k8s.io")
            # another group's objects (Kueue's, Karpenter's) are CustomResources of pulumi_kubernetes.apiextensions
            paths.add(f"pulumi_kubernetes.{group.split('.')[0]}.{version}.{cls}" if known else
                      "pulumi_kubernetes.apiextensions.CustomResource")
            # Every Kubernetes object's metadata output is an ObjectMeta, in a package of its own that registering
            # any Kubernetes resource loads (its output types resolve then), however its metadata is given.
            paths.add("pulumi_kubernetes.meta.v1.outputs.ObjectMeta")
        else:
            paths.add(f"pulumi_{package.replace('-', '_')}.{module.split('/')[0]}.{cls}")
    return sorted(paths)


def _floor_code(classes: list[str]) -> str:
    packages = sorted({c.split(".")[0] for c in classes})
    # pulumi_policy too: running the policy pack is part of every plan.
    return "\n".join(["import pulumi", "import pulumi_policy", *(f"import {p}" for p in packages),
                      *(f"{c}" for c in classes)])


REFERENCE_STACKS = ("aws-batch", "aws-batch-multinode", "aws-batch-reserved", "eks", "eks-capacity-block",
                    "eks-karpenter-reserved", "gke", "gke-reservation", "gke-flex-start", "aks", "aks-reservation",
                    "eks-nvl72", "gke-nvl72", "aks-nvl72")
"""The stacks timed by default: every reference stack (tests/test_bench.py holds this to the golden plans' list)."""


_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
"""The runs' environment: this one, bytecode cache allowed."""


def _time(cmd: list[str]) -> tuple[float, float]:
    """Wall-clock seconds and CPU seconds (user + system) of one run of ``cmd``."""
    start = time.perf_counter()
    process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, env=_ENV)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        raise subprocess.CalledProcessError(process.returncode, cmd)
    return wall, usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack", action="append", help="stack to time (repeatable; default every reference stack)")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu", help="the ratio --max-ratio judges")
    parser.add_argument("--max-ratio", type=float, help="exit 1 if any stack's ratio exceeds this")
    args = parser.parse_args(argv)
    worst = 0.0
    for stack in args.stack or REFERENCE_STACKS:
        classes = _classes(stack)
        plan_cmd = [sys.executable, "-m", "gpuready", "plan", "--stack", stack]
        floor_cmd = [sys.executable, "-c", _floor_code(classes)]
        _time(plan_cmd), _time(floor_cmd)  # warm the file cache and bytecode
        plan_runs, floor_runs = [], []
        for _ in range(args.runs):
            plan_runs.append(_time(plan_cmd))
            floor_runs.append(_time(floor_cmd))
        ratios = {}
        for i, clock in enumerate(("wall", "cpu")):
            plan_s = statistics.median(run[i] for run in plan_runs)
            floor_s = statistics.median(run[i] for run in floor_runs)
            ratios[clock] = (plan_s, floor_s, plan_s / floor_s)
        worst = max(worst, ratios[args.clock][2])
        print(f"{stack}: " + ", ".join(f"{clock} plan {p:.3f}s floor {f:.3f}s ratio {r:.2f}"
                                       for clock, (p, f, r) in ratios.items()) +
              f" ({len(classes)} resource classes, median of {args.runs})", flush=True)
    return 1 if args.max_ratio is not None and worst > args.max_ratio else 0


if __name__ == "__main__":
    sys.exit(main())
