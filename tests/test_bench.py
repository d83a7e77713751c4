"""The benches measure what they say: the plan bench's floor names real classes (a wrong path would make the floor
fail, or time the wrong thing); the sweep's polling bench counts the sweep's own poller's calls through moto."""

from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT


def _load(name):
    """The bench script ``bench/<name>.py`` as a module."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench():
    return _load("plan_bench")


@pytest.mark.parametrize("stack", ["aws-batch", "eks", "gke", "aks"])
def test_floor_classes_resolve_to_the_provider_classes_the_plan_uses(bench, stack):
    classes = bench._classes(stack)
    assert len(classes) >= 4
    for path in classes:
        module, _, name = path.rpartition(".")
        assert isinstance(getattr(importlib.import_module(module), name), type), path
    if stack == "eks":
        assert {"pulumi_kubernetes.helm.v3.Release", "pulumi_kubernetes.core.v1.Namespace",
                "pulumi_kubernetes.Provider", "pulumi_aws.eks.NodeGroup"} <= set(classes)
    assert ("pulumi_kubernetes.meta.v1.outputs.ObjectMeta" in classes) == (stack != "aws-batch")


def test_the_floor_loads_every_provider_module_the_plan_loads(bench):
    """The floor of an EKS plan loads each module of the provider packages the plan loads (the plan's own and the
    standard library's aside): a module the floor missed would be counted as the plan's own cost."""
    stack = "eks"
    listed = "\nimport sys\nprint(' '.join(sorted(m for m in sys.modules if m.startswith('pulumi_'))))"
    floor = subprocess.run([sys.executable, "-c", bench._floor_code(bench._classes(stack)) + listed],
                           capture_output=True, text=True, check=True).stdout.split()
    plan = ("import io, contextlib\nfrom gpuready.cli import main\nwith contextlib.redirect_stdout(io.StringIO()):\n"
            f"    main(['plan', '--stack', {stack!r}])" + listed)
    planned = subprocess.run([sys.executable, "-c", plan], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    assert sorted(set(planned) - set(floor)) == []


def test_the_plan_bench_times_every_reference_stack_with_the_bytecode_cache(bench):
    """By default every reference stack (the golden plans' list), in an environment that lets Python write its
    bytecode cache (as an installed gpuready's has after its first run); both clocks' ratios are printed."""
    from tests.stacks.test_golden_plans import STACKS

    assert bench.REFERENCE_STACKS == STACKS
    assert "PYTHONDONTWRITEBYTECODE" not in bench._ENV and bench._ENV["PATH"] == os.environ["PATH"]
    wall, cpu = bench._time([sys.executable, "-c", "sum(range(3_000_000))"])
    assert wall > 0 and cpu > 0
    with pytest.raises(subprocess.CalledProcessError):
        bench._time([sys.executable, "-c", "raise SystemExit(3)"])


@pytest.fixture(scope="module")
def sweep_poll():
    spec = importlib.util.spec_from_file_location("sweep_poll", ROOT / "bench" / "sweep_poll.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["sweep_poll"] = module  # its dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules["sweep_poll"]


def test_sweep_polling_asks_100_ids_a_call_for_unfinished_jobs_only(sweep_poll):
    figures = sweep_poll.measure(jobs=250, rounds=3)  # pending per round: 250, 250, 166, 82
    assert figures.rounds == 4 and figures.polled == 250 + 250 + 166 + 82
    assert figures.calls == figures.expected_calls == 3 + 3 + 2 + 1 and figures.largest_call == 100
    assert figures.per_job_per_round <= sweep_poll.TARGET


@pytest.fixture(scope="module")
def mutation():
    return _load("mutation")


def test_the_mutation_bench_names_modules_and_tests_that_exist(mutation):
    """Each module it mutates is a file that imports under the name mutmut gives its copy, each of its tests a path
    pytest can run; every policy rule module is among them."""
    for module, tests in mutation.MODULES.items():
        assert (ROOT / module).is_file(), module
        name = mutation.package_path(module).removesuffix(".py").replace("/", ".")
        assert importlib.util.find_spec(name).origin == str(ROOT / module), module
        assert tests and all((ROOT / t).exists() for t in tests), module
    for module, tests in mutation.DESELECT.items():
        assert module in mutation.MODULES and all((ROOT / t.split("::")[0]).is_file() for t in tests), module
    rules = {str(p.relative_to(ROOT)) for p in (ROOT / "gpuready" / "policy" / "rules").glob("*.py")}
    assert rules - {"gpuready/policy/rules/__init__.py"} <= set(mutation.MODULES)
    assert mutation.main(["no/such.py"]) == 2
