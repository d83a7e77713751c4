"""Run the smoke-test fault matrix (tests/gpuready/smoke/fault_matrix.py) and print its figures.

Every fault (throttling, 5xx, the API's refusal, a reset before or after the call takes effect, a hang, Ctrl-C) is
injected at every step (submit, first describe, polling, logs, cancel) of `gpuready smoke` on AWS Batch (moto's
server) and Kubernetes (the fake API server), through the CLI, with --timeout 1. Exit 1 if any case goes wrong.

    python bench/fault_matrix.py            # the figures
    python bench/fault_matrix.py --cases    # and one line per case
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.gpuready.smoke.fault_matrix import FAULTS, GRACE, STEPS, TARGETS, TIMEOUT, cases, worlds  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", action="store_true", help="print one line per case")
    args = parser.parse_args()
    started, outcomes = time.monotonic(), []
    with worlds() as world:
        for target, step, fault in cases():
            outcome = world[target].case(step, fault, world["workdir"])
            outcomes.append(outcome)
            if args.cases:
                print(f"{target:10} {step:14} {fault:11} exit {outcome.code}  {outcome.seconds:4.1f} s  "
                      f"{'; '.join(outcome.problems()) or 'ok'}", flush=True)
    wrong = [o for o in outcomes if o.problems()]
    codes = Counter(o.code for o in outcomes)
    print(f"fault matrix: {len(TARGETS)} targets x {len(STEPS)} steps x {len(FAULTS)} faults, "
          f"--timeout {TIMEOUT:g} s, {time.monotonic() - started:.0f} s in all")
    print(f"  faults injected   {sum(o.injected for o in outcomes)}")
    print(f"  runs              {len(outcomes)}")
    print("  exit codes        " + ", ".join(f"{code}: {n}" for code, n in sorted(codes.items(), key=str)))
    print(f"  leaked jobs       {sum(o.leaked for o in outcomes)}")
    print(f"  duplicate submits {sum(max(0, o.submitted - 1) for o in outcomes)}")
    print(f"  tracebacks        {sum(o.traceback for o in outcomes)}")
    print(f"  not one verdict   {sum(o.verdicts != 1 for o in outcomes)}")
    print(f"  slowest run       {max(o.seconds for o in outcomes):.1f} s (allowed {TIMEOUT + GRACE:g} s)")
    for o in wrong:
        print(f"  WRONG {o.target} {o.step} {o.fault}: {'; '.join(o.problems())}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
