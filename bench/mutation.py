"""Mutation testing of the core modules with mutmut: how many small breakages of each module its tests catch.

For each module named (all of :data:`MODULES` when none is), a copy of this checkout is laid in a scratch folder,
mutmut makes its mutants of that one module (an operator flipped, a number changed, a call's argument dropped...)
and runs, for each, only the tests of :data:`MODULES` that reach the mutated function. A mutant the tests fail on is
*killed*; one they pass is a *survivor*: a breakage no test sees, or an equivalent change (see
docs/mutation-testing.md, which records the last score and why each survivor is left).

    python bench/mutation.py                                   # every module, one after the other
    python bench/mutation.py components/inputs.py              # one (or several) of them
    python bench/mutation.py --list                            # the modules and their tests
    python bench/mutation.py --jobs 1 gpuready/probe/core.py   # mutmut's parallel children (default 2)
    python bench/mutation.py --keep DIR --again MODULE         # after adding tests: re-run what survived in DIR

Prints, per module, killed / survived / timeout / other and the share killed, then the survivors' names (show one
with ``mutmut show NAME`` in the scratch folder it names); ``--json FILE`` writes the same. Exit 1 when a module
kills less than :data:`TARGET`. Needs the ``mutation`` extra (``pip install -e '.[...,test,mutation]'``).

Why a copy: ``components/`` installs as ``gpuready_components`` (pyproject's package-dir), and mutmut finds a
mutated module by the path it copied it from; in the copy the folder carries the package's name (``components``
stays as a link to it, for the tests that read files there).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = 0.85
"""The share of mutants a module's tests must kill (issue 29)."""

TIMEOUT = (4.0, 5.0)
"""A mutant's tests may take this many times their clean CPU time, plus these seconds, before it counts as a hang
(caught: a mutant that makes Pulumi's runtime wait forever is seen by any user). mutmut's default, 15 times, lets
one hanging mutant cost a minute."""

PACKAGES = {"components": "gpuready_components", "stacks": "gpuready_stacks", "platforms": "gpuready_platforms"}
"""Folders that install under another name (pyproject.toml's ``package-dir``)."""

MODULES = {
    "gpuready/probe/core.py": ("tests/gpuready/probe/test_core_exact.py", "tests/gpuready/probe/test_core_torch.py",
                               "tests/gpuready/probe/test_core.py",
                               "tests/gpuready/probe/test_node_state.py", "tests/gpuready/probe/test_capture_input.py"),
    "components/inputs.py": ("tests/components/test_inputs.py", "tests/components/eks_gpu/test_validation.py",
                             "tests/components/batch_gpu/test_validation.py"),
    "gpuready/policy/rules/batch.py": ("tests/gpuready/policy/rules/test_batch.py",),
    "gpuready/policy/rules/capacity.py": ("tests/gpuready/policy/rules/test_capacity.py",),
    "gpuready/policy/rules/kubernetes.py": ("tests/gpuready/policy/rules/test_kubernetes.py",),
    "gpuready/policy/rules/nvl72.py": ("tests/gpuready/policy/rules/test_nvl72.py",),
    "gpuready/policy/rules/reservations.py": ("tests/gpuready/policy/rules/test_reservations.py",),
    "gpuready/policy/rules/scaling.py": ("tests/gpuready/policy/rules/test_scaling.py",),
    "gpuready/policy/rules/security.py": ("tests/gpuready/policy/rules/test_security.py",),
    "gpuready/policy/rules/queues.py": ("tests/gpuready/policy/rules/test_queues.py",
                                        "tests/gpuready/policy/test_queue_rules.py"),
    "components/platforms.py": ("tests/components/test_platforms.py", "tests/stacks/test_platforms.py",
                                "tests/gpuready/smoke/test_dispatch.py", "tests/platforms", "tests/test_layers.py"),
    "components/package.py": ("tests/provider/test_schema.py", "tests/provider/test_process.py",
                              "tests/components/test_package.py"),
    # what issue 40 asked of the code added for teams, reservations, alerts and repair
    "components/capacity.py": ("tests/components/test_capacity.py", "tests/components/test_ecs_fit.py",
                               "tests/gpuready/policy/rules/test_reservations.py",
                               "tests/components/aks_gpu/test_reservation.py",
                               "tests/components/gke_gpu/test_reservation.py",
                               "tests/components/eks_gpu/test_reservation.py"),
    "components/gke_gpu/reservation.py": ("tests/components/gke_gpu/test_reservation.py",),
    "components/k8s_gpu/health.py": ("tests/components/k8s_gpu/test_health.py",),
    "gpuready/repair/__init__.py": ("tests/gpuready/repair/test_init.py", "tests/gpuready/repair/test_gke_aks.py"),
    "components/queue_arithmetic.py": ("tests/components/test_queue_arithmetic.py",
                                       "tests/components/k8s_gpu/test_kueue.py"),
    "components/teams.py": ("tests/components/test_teams.py", "tests/components/k8s_gpu/test_kueue.py"),
    "components/k8s_gpu/gpu_hours.py": ("tests/components/k8s_gpu/test_gpu_hours.py",),
    "components/eks_gpu/reservation.py": ("tests/components/eks_gpu/test_reservation.py",
                                          "tests/components/eks_gpu/test_auto_mode_reservation.py",
                                          "tests/components/eks_gpu/test_karpenter.py"),
    "components/aks_gpu/reservation.py": ("tests/components/aks_gpu/test_reservation.py",),
    "components/batch_gpu/reservation.py": ("tests/components/batch_gpu/test_reservation.py",),
    "components/aws_reservations.py": ("tests/components/eks_gpu/test_reservation.py",
                                       "tests/components/batch_gpu/test_reservation.py"),
    "components/gke_gpu/alerts.py": ("tests/components/gke_gpu/test_alerts.py",),
    "components/eks_gpu/repair.py": ("tests/components/eks_gpu/test_repair.py",),
    "gpuready/repair/rest.py": ("tests/gpuready/repair/test_rest.py", "tests/gpuready/repair/test_gcp.py",
                                "tests/gpuready/repair/test_azure.py"),
}
"""Module -> the tests that exercise it, few enough that one mutant's run takes seconds (the whole suite takes
minutes). The order is the order they run in when none is named."""

DESELECT = {
    "gpuready/probe/core.py": ("tests/gpuready/probe/test_core.py::"
                               "test_the_probe_file_runs_alone_with_only_the_standard_library",),
    "components/platforms.py": (
        "tests/platforms/test_gpu_vm.py::test_it_touches_nothing_outside_its_folder_and_its_one_registration",
        "tests/platforms/test_gpu_vm.py::test_installed_like_a_builtin_it_plans_from_its_entry_point_alone",
        "tests/platforms/test_gpu_vm.py::test_installed_like_a_builtin_the_component_package_serves_it"),
    # the provider's tests in its own process (the same tests run on the same server in a thread, which mutmut sees)
    "components/package.py": ("tests/provider/test_process.py::own_process",),
    # Ctrl-C delivered by the fault proxy (``_thread.interrupt_main``): mutmut's fork server ignores SIGINT, and its
    # children with it, so no KeyboardInterrupt is raised there
    "gpuready/repair/rest.py": (
        "tests/gpuready/repair/test_gcp.py::test_ctrl_c_while_a_recreate_waits_stops_it_and_nothing_is_sent_again",
        "tests/gpuready/repair/test_azure.py::test_ctrl_c_while_a_redeploy_waits_stops_it_and_nothing_is_sent_again"),
}
"""Tests that cannot run on a mutated copy: mutmut's switch between mutants is code its copy imports, so the probe's
file no longer runs with the standard library alone (what that test checks, of the real file); a scan of the whole
tree, which sees mutmut's own copy of the tests; and tests that start gpuready in a process of its own, where the
mutated copy cannot find mutmut's configuration; and tests that deliver Ctrl-C to themselves, which mutmut's children
ignore."""

MUTMUT = (
    "import sys\n"
    "from mutmut.state import state\n"
    "from mutmut.workers.isolation import ForkServerRunner\n"
    "submit = ForkServerRunner.submit\n"
    "ForkServerRunner.submit = lambda self, name, tests, *rest: submit(\n"
    "    self, name, sorted(tests, key=lambda test: state().duration_by_test.get(test, 0.0)), *rest)\n"
    "from mutmut.__main__ import cli\n"
    "cli()\n")
"""``mutmut`` with each mutant's tests run fastest first. Its fork server runs them in no set order (its plain fork
runner sorts them), so a mutant a 10 ms test kills could first wait for every slow end-to-end test: here, about 6 s
a mutant instead of under one."""

CAUGHT = ("killed", "timeout", "segfault")
"""mutmut's statuses of a mutant the tests stop (a crash or a hang is seen, too)."""


def package_path(module: str) -> str:
    """``components/inputs.py`` -> ``gpuready_components/inputs.py``: the path under the package's installed name."""
    top, _, rest = module.partition("/")
    return f"{PACKAGES.get(top, top)}/{rest}"


def stage(module: str, where: Path) -> Path:
    """A copy of the checkout's files (tracked and new, not ignored) in ``where``, with mutmut's settings for
    ``module`` appended to its pyproject.toml."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                           capture_output=True).stdout.decode().split("\0")
    for name in filter(None, files):
        source = ROOT / name
        if not source.is_file():
            continue
        top, _, rest = name.partition("/")
        target = where / (PACKAGES.get(top, top) + "/" + rest if rest else top)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    for folder, package in PACKAGES.items():
        if not (where / folder).is_symlink():  # laid by an earlier run (--again)
            (where / folder).symlink_to(package, target_is_directory=True)
    package = package_path(module).split("/")[0]
    others = sorted({p.name for p in where.iterdir()} - {package, "mutants"})
    settings = {
        "source_paths": [package], "only_mutate": [package_path(module)], "also_copy": others,
        "pytest_add_cli_args_test_selection": list(MODULES[module]),
        "pytest_add_cli_args": ["-p", "no:cacheprovider", "-q", "-x", *(
            ("-k", " and ".join(f"not {test.rpartition('::')[2]}" for test in DESELECT[module]))
            if module in DESELECT else ())],  # by name: mutmut runs the tests from its own copy, under other paths
        "use_git_change_detection": False,
        "process_isolation": "forkserver",  # Pulumi's runtime holds gRPC threads: a fork of a process that ran it hangs
        "timeout_multiplier": TIMEOUT[0], "timeout_constant": TIMEOUT[1],
    }
    with open(where / "pyproject.toml", "a") as pyproject:
        pyproject.write("\n[tool.mutmut]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in settings.items()))
    return where


def score(where: Path, module: str) -> dict:
    """Counts by status and the survivors' names, from the ``.meta`` file mutmut leaves beside the mutated copy."""
    from mutmut.stats import status_by_exit_code

    meta = json.loads((where / "mutants" / (package_path(module) + ".meta")).read_text())
    statuses = {name: status_by_exit_code[code] for name, code in meta["exit_code_by_key"].items()}
    counts: dict[str, int] = {}
    for status in statuses.values():
        counts[status] = counts.get(status, 0) + 1
    caught = sum(n for s, n in counts.items() if s in CAUGHT)
    tested = caught + counts.get("survived", 0) + counts.get("no tests", 0)
    return {"module": module, "mutants": len(statuses), "counts": counts,
            "killed_share": round(caught / tested, 4) if tested else None,
            "survivors": sorted(n for n, s in statuses.items() if s == "survived"),
            "untested": sorted(n for n, s in statuses.items() if s == "no tests")}


def run(module: str, jobs: int, keep: Path | None, again: bool = False) -> dict:
    """One module's mutation run in ``keep`` (a new scratch folder when None). ``again``: in the folder of an earlier
    run, with the checkout's tests and code as they are now: the mutants of functions that changed are made and run
    anew, then the earlier run's survivors and untested mutants are run again; the others' results stand (a test
    added kills, it does not revive)."""
    where = Path(tempfile.mkdtemp(prefix="gpuready-mutation-")) if keep is None else keep
    earlier = score(where, module) if again else None
    if keep is not None and where.exists() and not again:
        shutil.rmtree(where)
    where.mkdir(parents=True, exist_ok=True)
    stage(module, where)
    if again:  # mutmut maps new tests to the functions they reach, not old tests to new functions: map them all anew
        (where / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)
    start = time.monotonic()
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    runs = [[]] + ([earlier["survivors"] + earlier["untested"]] if earlier and (earlier["survivors"] or
                                                                                 earlier["untested"]) else [])
    log = ""
    for names in runs:
        done = subprocess.run([sys.executable, "-c", MUTMUT, "run", "--max-children", str(jobs), *names],
                              cwd=where, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        log += done.stdout
    (where / "mutmut-run.log").write_text(log)
    try:
        result = score(where, module)
    except FileNotFoundError:
        sys.exit(f"{module}: mutmut made no results (exit {done.returncode}); its output is in "
                 f"{where / 'mutmut-run.log'}")
    result.update(seconds=round(time.monotonic() - start), folder=str(where))
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help=f"of: {', '.join(MODULES)} (default: all, in that order)")
    parser.add_argument("--jobs", type=int, default=2, help="mutmut's parallel children (default 2)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--keep", type=Path, help="lay the copy in this folder (replaced) instead of a new one")
    parser.add_argument("--again", action="store_true",
                        help="with --keep: re-run the last run's survivors and untested mutants there, with the "
                             "tests as they are now (and the mutants of functions changed since)")
    parser.add_argument("--list", action="store_true", help="print the modules and their tests, run nothing")
    args = parser.parse_args(argv)
    unknown = [m for m in args.modules if m not in MODULES]
    if unknown:
        print(f"bench/mutation.py: unknown module {unknown[0]!r}: use one of {', '.join(MODULES)}", file=sys.stderr)
        return 2
    if args.again and not args.keep:
        print("bench/mutation.py: --again needs --keep DIR, the folder of the run to continue", file=sys.stderr)
        return 2
    if args.list:
        for module, tests in MODULES.items():
            print(f"{module}: {' '.join(tests)}")
        return 0
    results = []
    for module in args.modules or list(MODULES):
        keep = args.keep / module.replace("/", "_") if args.keep else None
        if args.again and not (keep / "mutants" / (package_path(module) + ".meta")).exists():
            print(f"bench/mutation.py: no earlier run of {module} in {keep}: run it without --again first",
                  file=sys.stderr)
            return 2
        result = run(module, args.jobs, keep, args.again)
        results.append(result)
        counts = ", ".join(f"{n} {s}" for s, n in sorted(result["counts"].items()))
        share = "no mutant tested" if result["killed_share"] is None else f"{result['killed_share']:.1%}"
        print(f"{module}: {result['mutants']} mutants: {counts}; killed {share} in {result['seconds']} s "
              f"({result['folder']})", flush=True)
        for name in result["survivors"]:
            print(f"    survived: {name}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0 if all((r["killed_share"] or 0) >= TARGET for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
