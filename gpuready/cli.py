"""The ``gpuready`` command line. Exit codes: 0 done, 1 a mandatory policy violated, 2 a mistake to fix (the
message says how), 3 an internal error."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Optional, Sequence

from . import __version__
from .errors import UserError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpuready", description=__doc__.split(".")[0] + ".")
    parser.add_argument("--version", action="version", version=f"gpuready {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    plan = commands.add_parser(
        "plan", help="show what `pulumi up` would create, offline (no credentials, no Pulumi CLI)",
        description="Render a stack offline under Pulumi's mock runtime and show each resource it would create, "
                    "its GPU facts, and the capacity and cost at full scale.")
    plan.add_argument("--stack", "-s", help="stack name: reads Pulumi.NAME.yaml from the project's stackConfigDir")
    plan.add_argument("--stack-file", type=Path, help="a stack config file that lives elsewhere")
    plan.add_argument("--program", type=Path,
                      help="directory of the Pulumi Python project to render (default: the one here or above)")
    plan.add_argument("--json", action="store_true", help="print the plan as JSON")
    plan.add_argument("--policy-config", type=Path, metavar="FILE",
                      help="policy config (the file `pulumi preview --policy-pack-config` takes): levels, caps, tags")
    plan.add_argument("--junit", type=Path, metavar="FILE", help="also write the policy results as JUnit XML")
    plan.add_argument("--no-policies", action="store_true", help="render only; do not run the policy pack")
    return parser


def _plan(args: argparse.Namespace) -> int:
    from .plan import plan
    from .plan.report import render_text

    if args.no_policies and (args.junit or args.policy_config):
        raise UserError("--no-policies with --junit or --policy-config: choose one")
    result = plan(args.stack, stack_file=args.stack_file, program=args.program, policies=not args.no_policies,
                  policy_config=args.policy_config)
    if args.json:
        json.dump(result.to_json(), sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_text(result))
    if result.policy is None:
        return 0
    if args.junit:
        from .policy.junit import write

        write(result.policy, result.stack, args.junit)
    return 1 if result.policy.mandatory else 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _plan(args)
    except UserError as e:
        print(f"gpuready: {e}", file=sys.stderr)
        return e.exit_code
    except Exception as e:  # noqa: BLE001 (the CLI's last line of defence: one paragraph, not a traceback)
        from components.errors import ConfigError
        from components.sdk import MissingExtra

        if isinstance(e, (ConfigError, MissingExtra)):
            print(f"gpuready: {args.command}: {e}", file=sys.stderr)
            return 2
        if os.environ.get("GPUREADY_DEBUG"):
            raise
        where = _where(e)
        print(f"gpuready: {args.command} failed: {type(e).__name__}: {e}{where}. "
              "Set GPUREADY_DEBUG=1 for the traceback.", file=sys.stderr)
        return 3


def _where(error: BaseException) -> str:
    tb = error.__traceback__
    last = None
    while tb is not None:
        last = tb
        tb = tb.tb_next
    return f" (at {last.tb_frame.f_code.co_filename}:{last.tb_lineno})" if last else ""


if __name__ == "__main__":
    sys.exit(main())
