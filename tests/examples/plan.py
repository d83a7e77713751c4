"""The plan of the examples in other languages, as ``gpuready plan`` words it: each program is run against the test's
engine (:mod:`tests.provider.engine`: a resource monitor over Pulumi's mock monitor and gpuready's offline answers,
the gpuready components constructed by ``provider/`` in its own process), and what it registered is described,
summed up and checked by the policy rules as ``gpuready plan`` does a Python stack.

``examples/expected-plan.txt`` is the plan of ``examples/yaml`` under ``pulumi up``; regenerate it, after a change
to the program or to what the components create, with::

    .venv/bin/python -m tests.examples.plan > examples/expected-plan.txt
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from pulumi.output import Unknown

from gpuready.plan import PlanResult, planned
from gpuready.plan.render import _unwrap_secrets
from gpuready.plan.report import render_text
from gpuready.plan.secrets import texts
from gpuready.rendering import Rendering
from tests.conftest import ROOT
from tests.provider import engine

EXAMPLES = ROOT / "examples"
EXPECTED = EXAMPLES / "expected-plan.txt"
STACK = "dev"
STACK_FILE = f"Pulumi.{STACK}.yaml"
"""How the plan names the stack file (each example has its own, with the same config)."""
HEADER = ("# The plan of examples/yaml and examples/typescript under `pulumi up`, on the test's engine "
          "(tests/examples/plan.py).\n"
          "# Regenerate: .venv/bin/python -m tests.examples.plan > examples/expected-plan.txt")


@contextlib.contextmanager
def served(project: str, config: Mapping[str, str], preview: bool) -> Iterator[tuple[str, engine.Monitor,
                                                                                    engine.Engine]]:
    """The test's engine for ``project``'s dev stack with ``config``: the resource monitor and engine (yields
    their address, the monitor and the engine), the provider started as Pulumi starts it, and every gpuready
    component a program registers constructed by it (``preview``: as under ``pulumi preview``)."""
    with engine.callbacks(preview, project, STACK, config) as (address, monitor, served_engine), \
            engine.provider(address) as stub:
        engine.constructs(monitor, stub, address, config, preview)
        yield address, monitor, served_engine


def rendering(monitor: engine.Monitor, config: Mapping[str, str]) -> Rendering:
    """What the program registered with ``monitor``, and the outputs it registered on its stack, as a rendering
    (secret outputs unwrapped and named, their text among the secrets never shown)."""
    outputs, secret, secrets = {}, set(), set(monitor.secrets)
    for key, value in monitor.stack_outputs.items():
        outputs[key], is_secret = _unwrap_secrets(value)
        if is_secret:
            secret.add(key)
            secrets |= set(texts(outputs[key]))
    return Rendering(project=monitor.project, stack=monitor.stack, config=dict(config),
                     resources=sorted(monitor.records, key=lambda r: r.urn), outputs=outputs,
                     secret_outputs=frozenset(secret), secrets=frozenset(secrets))


def plan_of(rendered: Rendering) -> PlanResult:
    """``gpuready plan``'s result for a rendering, its policy rules run."""
    return planned(rendered, STACK_FILE)


@dataclass(frozen=True)
class Planned:
    """One run of an example: the plan, what was rendered, and the host's run."""

    result: PlanResult
    rendering: Rendering
    run: Any


def yaml_plan(preview: bool = False, program: Any = None) -> Planned:
    """The plan of ``examples/yaml`` (or ``program``, a :class:`~tests.examples.yaml_host.Program`), run as the YAML
    language host runs it."""
    from tests.examples import yaml_host

    program = program or yaml_host.load(EXAMPLES / "yaml", STACK)
    with served(program.name, program.stack_config, preview) as (address, monitor, _):
        run = yaml_host.execute(program, address, preview)
        rendered = rendering(monitor, program.stack_config)
    return Planned(plan_of(rendered), rendered, run)


def text(result: PlanResult) -> str:
    """The plan as ``gpuready plan`` prints it, then the stack's outputs (secrets shown as ``[secret]``)."""
    lines = [f"  {key}: {json.dumps(_whole(value), sort_keys=True)}" for key, value in sorted(result.outputs.items())]
    return f"{HEADER}\n\n{render_text(result)}\nStack outputs:\n" + "\n".join(lines) + "\n"


def _whole(value: Any) -> Any:
    """``value`` with each whole float an int (the wire carries every number as a float), each unknown
    ``[unknown]``."""
    if isinstance(value, Unknown):
        return "[unknown]"
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _whole(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole(v) for v in value]
    return value


def main() -> None:
    print(text(yaml_plan().result), end="")


if __name__ == "__main__":
    main()

