"""The ``gpuready`` command line. Exit codes: 0 done, 1 a mandatory policy violated, 2 a mistake to fix (the
message says how), 3 an internal error, 130 interrupted (Ctrl-C), 143 terminated (SIGTERM), 141 stdout closed
(``| head``)."""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import os
import signal
import sys
from pathlib import Path
from typing import Iterator, Optional, Sequence

from .errors import UserError


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is so that the same cleanup as Ctrl-C runs."""


def _seconds(text: str) -> float:
    """argparse type: a finite number of seconds above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a finite number of seconds above 0, e.g. 1800")
    return value


def _at_least_one(unit: str):
    """argparse type: a whole number of ``unit`` (GPU, node), at least 1."""
    def whole(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < 1:
            raise argparse.ArgumentTypeError(f"{text!r}: ask for at least 1 {unit}")
        return value
    return whole


def _percent(text: str) -> int:
    """argparse type: a whole percentage from 1 to 100."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole percentage") from None
    if not 1 <= value <= 100:
        raise argparse.ArgumentTypeError(f"{text!r}: give a percentage from 1 to 100, e.g. 20")
    return value


class _RefreshClouds:
    """The clouds ``catalog refresh`` knows (:func:`gpuready.refresh.clouds`), read only when that command is parsed
    or its help shown: the registry behind them loads Pulumi, which other commands need not wait for."""

    def __contains__(self, cloud: object) -> bool:
        return cloud in self._clouds()

    def __iter__(self) -> Iterator[str]:
        return iter(self._clouds())

    @staticmethod
    def _clouds() -> tuple[str, ...]:
        from .refresh import clouds

        return clouds()


class _Version(argparse.Action):
    """``--version``: gpuready's version (pyproject.toml's, from the installed package's metadata), looked up only
    when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str) -> None:
        super().__init__(option_strings, argparse.SUPPRESS, nargs=0, default=argparse.SUPPRESS,
                         help="show gpuready's version and exit")

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        from . import __version__

        print(f"gpuready {__version__}")
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpuready", description=__doc__.split(".")[0] + ".")
    parser.add_argument("--version", action=_Version)
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

    probe = commands.add_parser(
        "probe", help="check this machine's GPUs, or a saved nvidia-smi capture",
        description="Run the GPU probe here (driver, GPUs, health, CUDA compatibility, throughput with PyTorch), or "
                    "analyse a saved `nvidia-smi --query-gpu=... --format=csv` capture from any node.")
    probe.add_argument("--nvidia-smi-output", type=Path, metavar="FILE",
                       help="a saved --query-gpu CSV (with or without header and units) to analyse instead")
    probe.add_argument("--gpus", type=int, default=0, help="GPUs the node should have (fewer is a failure)")
    probe.add_argument("--full", action="store_true",
                       help="the sustained tier: larger benchmarks, then every GPU under load for --seconds")
    probe.add_argument("--seconds", type=_seconds, default=None, metavar="S",
                       help="how long --full keeps the GPUs loaded (default 300)")
    probe.add_argument("--sharing", choices=("time-slicing", "mps", "mig"),
                       help="the GPUs are shared on purpose: memory others hold warns instead of failing")
    probe.add_argument("--json", action="store_true", help="print the report as JSON")
    probe.add_argument("--junit", type=Path, metavar="FILE", help="also write the checks as JUnit XML")

    smoke = commands.add_parser(
        "smoke", help="run the GPU probe on a deployed stack (or here) and report what the GPUs did",
        description="Submit the GPU probe to a deployed stack's GPU capacity, follow it, explain a job that does "
                    "not start, and report each check. Exit 0 only when every required check passes.")
    where = smoke.add_mutually_exclusive_group(required=True)
    where.add_argument("--stack", "-s", help="read the stack's outputs with `pulumi stack output`")
    where.add_argument("--outputs", type=Path, metavar="FILE", help="the stack's outputs as JSON")
    where.add_argument("--local", action="store_true", help="run the probe on this machine")
    smoke.add_argument("--gpus", type=_at_least_one("GPU"), default=None,
                       help="GPUs to ask for (default: 1; local: any)")
    smoke.add_argument("--nodes", type=_at_least_one("node"), default=1,
                       help="nodes of one gang job, each running the probe, with NCCL across all their GPUs (1)")
    smoke.add_argument("--timeout", type=_seconds, default=1800, help="seconds before the job is cancelled (1800)")
    smoke.add_argument("--keep", action="store_true", help="leave the job running on timeout or Ctrl-C")
    smoke.add_argument("--full", action="store_true",
                       help="the probe's sustained tier: every GPU under load for 300 s (single nodes)")
    smoke.add_argument("--json", action="store_true", help="print the result as JSON")
    smoke.add_argument("--junit", type=Path, metavar="FILE", help="also write the checks as JUnit XML")
    smoke.add_argument("--team", metavar="TEAM",
                       help="go through TEAM's queue (a name in the stack's teams output): its Kueue LocalQueue in "
                            "its namespace, or its Batch share identifier (default on Kubernetes stacks with teams: "
                            "the operators' queue)")
    smoke.add_argument("--trust-kubeconfig-exec", action="store_true",
                       help="let the outputs' kubeconfig run any credential command (default: only the ones "
                            "gpuready stacks write: aws eks get-token, gke-gcloud-auth-plugin, kubelogin)")

    sweep = commands.add_parser(
        "sweep", help="run the GPU probe on every GPU node of a deployed stack, a row per node",
        description="Run the GPU probe on every GPU node of a deployed stack (Kubernetes: one Job pinned to each "
                    "node; AWS Batch: one whole-instance job per instance) and show a row per node: GPU model and "
                    "count, health, GEMM and memory bandwidth against what the model typically reaches, verdict. "
                    "Exit 0 only when every node passes.")
    where = sweep.add_mutually_exclusive_group(required=True)
    where.add_argument("--stack", "-s", help="read the stack's outputs with `pulumi stack output`")
    where.add_argument("--outputs", type=Path, metavar="FILE", help="the stack's outputs as JSON")
    sweep.add_argument("--nodes", type=_at_least_one("node"), default=None,
                       help="Kubernetes: sweep at most N of the GPU nodes; Batch: N instances (default: as many of "
                            "the queue's largest type as maxVcpus allows, at most 16)")
    sweep.add_argument("--timeout", type=_seconds, default=1800,
                       help="seconds before unfinished jobs are cancelled (1800)")
    sweep.add_argument("--full", action="store_true",
                       help="the probe's sustained tier: every GPU under load for 300 s (single nodes)")
    sweep.add_argument("--json", action="store_true", help="print the result as JSON")
    sweep.add_argument("--junit", type=Path, metavar="FILE", help="also write JUnit XML, one testcase per node")
    sweep.add_argument("--quarantine", "--taint-failing", dest="quarantine", action="store_true",
                       help="Kubernetes: take each failing node out of service (taint gpuready.io/sweep=failed:"
                            "NoSchedule, label gpuready.io/sweep=failed, the cause in gpuready.io/sweep-reason); "
                            "never by default")
    sweep.add_argument("--repair", action="store_true",
                       help="Kubernetes: ask the platform to reboot or replace the machine behind each failing node "
                            "(EKS managed node group or Karpenter, GKE, AKS), as the GPU signals table says; a dry run "
                            "that prints what it would do unless --apply; an audit line per node")
    sweep.add_argument("--apply", action="store_true",
                       help="with --repair: act (quarantine, drain, annotate gpuready.io/repair, then ask the cloud)")
    sweep.add_argument("--max-repairs", type=_at_least_one("machine"), default=None, metavar="N",
                       help="with --repair: machines under repair at once, those already under way included (1)")
    sweep.add_argument("--max-unhealthy", type=_percent, default=None, metavar="PERCENT",
                       help="with --repair: repair nothing in a pool whose failing and under-way share is above "
                            "PERCENT (20, EKS's default: a cause that broad is not one bad GPU)")
    sweep.add_argument("--team", metavar="TEAM",
                       help="go through TEAM's queue (a name in the stack's teams output), as gpuready smoke --team "
                            "(default on Kubernetes stacks with teams: the operators' queue)")
    sweep.add_argument("--trust-kubeconfig-exec", action="store_true",
                       help="let the outputs' kubeconfig run any credential command (default: only the ones "
                            "gpuready stacks write)")

    catalog = commands.add_parser(
        "catalog", help="keep the GPU catalog current from the clouds' own APIs",
        description="Commands on gpuready's GPU catalog (components/catalog/gpu_instances.csv).")
    catalog_commands = catalog.add_subparsers(dest="catalog_command", required=True, metavar="COMMAND")
    refresh = catalog_commands.add_parser(
        "refresh", help="rebuild one cloud's rows from its APIs and show the diff",
        description="Rebuild one cloud's catalog rows from its APIs (AWS: EC2 DescribeInstanceTypes and the Price "
                    "List API; GCP: Compute Engine machine and accelerator types and the Cloud Billing Catalog; "
                    "Azure: Resource SKUs and the Retail Prices API), print what changed, and write the catalog "
                    "only with --write. Rows the API no longer lists are reported and kept.")
    refresh.add_argument("--cloud", required=True, choices=_RefreshClouds(), metavar="CLOUD",
                         help="the cloud whose rows to rebuild: %(choices)s")
    refresh.add_argument("--from", dest="recorded", type=Path, metavar="DIR",
                         help="read recorded API answers (JSON files) from DIR instead of the APIs where present")
    refresh.add_argument("--write", action="store_true", help="write the refreshed rows to the catalog CSV")
    refresh.add_argument("--catalog", type=Path, metavar="FILE",
                         help="the catalog CSV to compare with and write (default: gpuready's own)")
    refresh.add_argument("--json", action="store_true", help="print the diff as JSON")
    return parser


def _catalog(args: argparse.Namespace) -> int:
    from gpuready_components import catalog

    from .refresh import fetch
    from .refresh.diff import compare, render_text

    path = args.catalog or catalog.CATALOG_CSV
    if args.write:
        _writable(path, "--catalog")
    try:
        current = catalog.read_csv(path)
    except (OSError, KeyError, ValueError) as e:
        raise UserError(f"--catalog {path}: not a catalog CSV ({e})") from None
    diff = compare(current, fetch(args.cloud, args.recorded))
    if args.write:
        catalog.write_csv(path, diff.rows)
    if args.json:
        json.dump({**diff.to_json(), "written": str(path) if args.write else None}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_text(diff, str(path) if args.write else None))
    return 0


@contextlib.contextmanager
def _rare_collections() -> Iterator[None]:
    """Run CPython's cycle collector rarely until the block ends (mypy does the same for the same reason).

    Pulumi's provider packages create about a million objects that live until exit; at the default threshold (a
    collection every 700 new objects) the collector walks them again and again while they load (measured: 0.3 s of
    the gke plan's 2.1 s). The plan's own garbage is small, so collecting every 50,000 objects costs little memory."""
    threshold = gc.get_threshold()
    gc.set_threshold(50_000, *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)


def _plan(args: argparse.Namespace) -> int:
    with _rare_collections():
        return _plan_and_show(args)


def _plan_and_show(args: argparse.Namespace) -> int:
    from .plan import plan
    from .plan.report import render_text

    if args.no_policies and (args.junit or args.policy_config):
        raise UserError("--no-policies with --junit or --policy-config: choose one")
    _writable(args.junit, "--junit")
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


def _probe(args: argparse.Namespace) -> int:
    from .probe import ProbeReport, analyse_capture, core
    from .smoke.result import SmokeResult

    _writable(args.junit, "--junit")
    if args.nvidia_smi_output and (args.full or args.seconds is not None):
        raise UserError("--full and --seconds load this machine's GPUs; a capture is only read: drop them, or drop "
                        "--nvidia-smi-output")
    if args.nvidia_smi_output:
        try:
            capture = args.nvidia_smi_output.read_bytes()  # analyse_capture decodes BOM and UTF-16 captures
        except OSError as e:
            raise UserError(f"cannot read {args.nvidia_smi_output}: {e.strerror}") from None
        report = analyse_capture(capture, args.gpus, args.sharing)
        target = f"capture {args.nvidia_smi_output}"
    else:
        if args.seconds is not None and not args.full:
            raise UserError("--seconds is how long --full loads the GPUs: add --full, or drop --seconds")
        report = ProbeReport.from_json(core.probe(
            gpus_expected=args.gpus, quick=not args.full, sharing=args.sharing,
            seconds=core.BURN_SECONDS if args.seconds is None else args.seconds))
        target = "this machine"
    result = SmokeResult(target=target, title="GPU probe", checks=list(report.checks), probe=report)
    return _show(result, args)


def _show(result, args: argparse.Namespace) -> int:
    from .smoke.result import render_text, write_junit

    if args.json:
        json.dump(result.to_json(), sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_text(result))
    if args.junit:
        write_junit(result, args.junit)
    return 0 if result.passed else 1


def _writable(path: Optional[Path], option: str) -> None:
    """A UserError unless ``path`` can be written (checked before any job is submitted)."""
    if path is None:
        return
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise UserError(f"{option} {path} is a directory: name a file, e.g. {path / 'gpuready.xml'}")
    if not folder.is_dir():
        raise UserError(f"{option} {path}: the directory {folder} does not exist: create it or name another file")
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise UserError(f"{option} {path} is not writable: name a file you may write")


def _smoke(args: argparse.Namespace) -> int:
    _writable(args.junit, "--junit")
    if args.local:
        from .smoke import local

        return _show(local.run(gpus=args.gpus or 0, timeout=args.timeout, full=args.full), args)
    from .smoke import run_on_stack

    return _show(run_on_stack(stack=args.stack, outputs_file=args.outputs, gpus=args.gpus, timeout=args.timeout,
                              keep=args.keep, full=args.full, trust_kubeconfig_exec=args.trust_kubeconfig_exec,
                              nodes=args.nodes, team=args.team), args)


def _sweep(args: argparse.Namespace) -> int:
    from .smoke import sweep, sweep_on_stack

    _writable(args.junit, "--junit")
    after = None
    if args.repair:
        from .repair import Limits, after_sweep

        default = Limits()
        after = after_sweep(Limits(apply=args.apply, max_repairs=args.max_repairs or default.max_repairs,
                                   max_unhealthy=args.max_unhealthy or default.max_unhealthy))
    else:
        given = [o for o, v in (("--apply", args.apply), ("--max-repairs", args.max_repairs),
                                ("--max-unhealthy", args.max_unhealthy)) if v]
        if given:
            raise UserError(f"{given[0]} goes with --repair (a dry run of the repairs; --apply acts): add --repair, "
                            f"or drop {given[0]}")
    result = sweep_on_stack(stack=args.stack, outputs_file=args.outputs, nodes=args.nodes, timeout=args.timeout,
                            full=args.full, quarantine=args.quarantine or (args.repair and args.apply),
                            trust_kubeconfig_exec=args.trust_kubeconfig_exec, team=args.team, after=after)
    if args.json:
        json.dump(result.to_json(), sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(sweep.render_text(result))
    if args.junit:
        sweep.write_junit(result, args.junit)
    return 0 if result.passed else 1


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "smoke" and args.local and args.team:
        parser.error(f"--team {args.team} goes through a team's queue on a deployed stack: give --stack or "
                     "--outputs, not --local")
    if args.command == "smoke" and args.local and args.nodes > 1:
        parser.error(f"--nodes {args.nodes} runs a gang job on a deployed stack: give --stack or --outputs, "
                     "not --local")

    def terminate(signum, frame):
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, terminate) if _main_thread() else None
    try:
        code = _dispatch(args)
        sys.stdout.flush()  # here, so that a closed pipe is met inside this try
        return code
    except KeyboardInterrupt as e:
        stopped = "terminated" if isinstance(e, Terminated) else "interrupted"
        print(f"gpuready: {args.command}: {stopped}", file=sys.stderr)
        return 143 if isinstance(e, Terminated) else 130
    except BrokenPipeError:  # stdout closed early (`| head`): say nothing more, like other Unix tools
        _silence_stdout()
        return 141
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a file (captured): nothing to flush into a closed pipe
        pass


def _dispatch(args: argparse.Namespace) -> int:
    try:
        return {"plan": _plan, "probe": _probe, "smoke": _smoke, "sweep": _sweep, "catalog": _catalog}[args.command](args)
    except UserError as e:
        print(f"gpuready: {e}", file=sys.stderr)
        return e.exit_code
    except BrokenPipeError:
        raise
    except Exception as e:  # noqa: BLE001 (the CLI's last line of defence: one paragraph, not a traceback)
        from gpuready_components.errors import ConfigError
        from gpuready_components.sdk import MissingExtra

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
