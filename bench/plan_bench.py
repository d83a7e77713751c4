"""Time ``gpuready plan`` as a whole process against the floor of loading what it must load.

The floor is a process that imports pulumi and pulumi_policy and touches every provider resource class the stack
creates (the provider packages load lazily, so each class is named). Runs are interleaved, the median of each is taken, and the ratio
plan / floor is printed per stack: the plan should cost little beyond loading the classes it must use.

    python bench/plan_bench.py                      # every reference stack, 7 runs each
    python bench/plan_bench.py --stack aws-batch --runs 11 --max-ratio 1.3
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time


def _classes(stack: str) -> list[str]:
    """``pulumi_aws.batch.ComputeEnvironment``-style paths of every provider resource the plan declares."""
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
        else:
            paths.add(f"pulumi_{package.replace('-', '_')}.{module.split('/')[0]}.{cls}")
    return sorted(paths)


def _floor_code(classes: list[str]) -> str:
    packages = sorted({c.split(".")[0] for c in classes})
    # pulumi_policy too: running the policy pack is part of every plan.
    return "\n".join(["import pulumi", "import pulumi_policy", *(f"import {p}" for p in packages),
                      *(f"{c}" for c in classes)])


def _time(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack", action="append", help="stack to time (repeatable; default every reference stack)")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--max-ratio", type=float, help="exit 1 if any stack's ratio exceeds this")
    args = parser.parse_args()
    worst = 0.0
    for stack in args.stack or ["aws-batch", "aws-batch-multinode", "eks", "gke", "aks"]:
        classes = _classes(stack)
        plan_cmd = [sys.executable, "-m", "gpuready", "plan", "--stack", stack]
        floor_cmd = [sys.executable, "-c", _floor_code(classes)]
        _time(plan_cmd), _time(floor_cmd)  # warm the file cache and bytecode
        plan_times, floor_times = [], []
        for _ in range(args.runs):
            plan_times.append(_time(plan_cmd))
            floor_times.append(_time(floor_cmd))
        plan_s, floor_s = statistics.median(plan_times), statistics.median(floor_times)
        ratio = plan_s / floor_s
        worst = max(worst, ratio)
        print(f"{stack}: plan {plan_s:.3f}s, floor {floor_s:.3f}s ({len(classes)} resource classes), "
              f"ratio {ratio:.2f} (median of {args.runs})")
    return 1 if args.max_ratio is not None and worst > args.max_ratio else 0


if __name__ == "__main__":
    sys.exit(main())
