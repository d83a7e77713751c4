"""Shared fixtures: Pulumi's mock runtime, set per test, and the path of the reference data the tests read."""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from gpuready.plan.render import Rendering, run

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
"""Vendor artefacts the tests check against (charts, nvidia-smi captures, events), each with its provenance."""

BESIDE = str(ROOT.parent / "shared") + os.sep
"""Where reference data lives in the developers' workspace; a user's clone has nothing there."""


def _refuse_reads_beside_the_checkout(event: str, args: tuple) -> None:
    if event in ("open", "os.listdir", "os.scandir") and args and isinstance(args[0], (str, os.PathLike)):
        if os.path.abspath(args[0]).startswith(BESIDE):
            raise RuntimeError(f"a test read {args[0]}, which a user's clone does not have: copy what it needs "
                               f"into tests/data with its provenance")


sys.addaudithook(_refuse_reads_beside_the_checkout)


@pytest.fixture(autouse=True, scope="session")
def _ctrl_c_as_at_a_terminal() -> Iterator[None]:
    """Ctrl-C reaches the tests as it reaches a command at a terminal. The fault proxy presses it with
    ``_thread.interrupt_main``, which does nothing where SIGINT is ignored, as it is in a process a shell without job
    control starts in the background (``pytest ... &`` in a script, mutmut's runner): the Ctrl-C tests then failed
    whenever the suite was started that way. A user's ``gpuready`` at a terminal has Python's own handler."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)

CAMEL = re.compile(r"^[a-z][a-zA-Z0-9]*$")
FREE_FORM_KEYS = {"tags", "tagsAll", "options", "labels", "annotations", "values", "metadata", "resourceLabels",
                  "nodeLabels", "matchLabels"}
"""Maps whose keys are the user's, a driver's or a chart's, not the provider schema's (tags, awslogs options,
Kubernetes labels, Helm values)."""


@pytest.fixture
def render() -> Callable[..., Rendering]:
    """Run a function that declares resources under Pulumi's mock runtime; return what it declared.

    Mocks are set anew on every call (the last ``set_mocks`` wins across test modules).
    """

    def _render(program: Callable[[], Any], config: dict[str, str] | None = None) -> Rendering:
        return run(program, project="gpuready", stack="test", config={"aws:region": "us-east-1", **(config or {})})

    return _render


def non_camel_keys(value: Any, path: str = "") -> Iterator[str]:
    """Every dict key under ``value`` that is not camelCase, outside free-form maps, as a dotted path."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not CAMEL.match(str(key)):
                yield f"{path}.{key}"
            if key not in FREE_FORM_KEYS:
                yield from non_camel_keys(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from non_camel_keys(item, f"{path}[{i}]")


def one(rendering: Rendering, type_: str, name: str):
    """The single resource of ``type_`` called ``name``."""
    (found,) = [r for r in rendering.of_type(type_) if r.name == name]
    return found


@contextlib.contextmanager
def plugin_channel(command: list[str], cwd: Path, what: str, env: dict[str, str] | None = None) -> Iterator[Any]:
    """A Pulumi plugin in a process of its own, started with ``command`` in ``cwd`` as the engine starts it; yields a
    gRPC channel to the port it prints (the test fails with its stderr when it prints none). The process is ended
    however the block ends."""
    import grpc

    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=errors)
        try:
            ready, _, _ = select.select([process.stdout], [], [], 120)
            line = process.stdout.readline() if ready else b""
            if not line.strip().isdigit():
                errors.seek(0)
                pytest.fail(f"the {what} printed no port ({line!r}): "
                            f"{errors.read().decode(errors='replace')[-3000:]}")
            with grpc.insecure_channel(f"127.0.0.1:{int(line)}") as channel:
                grpc.channel_ready_future(channel).result(timeout=30)
                yield channel
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            process.stdout.close()


def render_component(render: Callable[..., Rendering], build: Callable[[], Any]) -> tuple[Rendering, Any]:
    """Render a program that builds one component; returns (rendering, the component)."""
    holder = {}

    def program():
        holder["component"] = build()

    return render(program), holder["component"]


def explicit_dependencies(render: Callable[..., Rendering], type_: str, build: Callable[[], Any]) -> tuple[
        Rendering, list[str]]:
    """Render a program that builds components; returns (rendering, names of what resources of ``type_`` were
    declared to depend on), as a stack transformation sees their ``depends_on``."""
    names: list[str] = []

    def record(args):
        if args.type_ == type_:
            names.extend(getattr(r, "_name", None) for r in args.opts.depends_on or [])

    def program():
        import pulumi

        pulumi.runtime.register_stack_transformation(record)
        build()

    return render(program), names
