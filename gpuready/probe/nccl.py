"""NCCL across nodes: the launcher every node of a gang job runs (``launch``: the node's probe, then ``torchrun``
running ``worker`` on every GPU; the main node prints one report line), the all-reduce worker, and the verdicts.

Standard library only at import; shipped beside ``core.py``. ``GPUREADY_TORCHRUN`` replaces ``python -m
torch.distributed.run`` (the tests' stand-in). Keep it lean: a Batch job definition (24 KiB) carries both files.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

try:
    from . import core
except ImportError:  # run as a file beside core.py
    import core

REPORT_MARKER = "GPUREADY_NCCL_REPORT "
PASS, FAIL, SKIP = core.PASS, core.FAIL, core.SKIP
GIB = 2**30

# Typical all-reduce bus bandwidth, GB/s, from nccl-tests' all_reduce_perf on 2 nodes x 8 GPUs at 2 GiB messages
# (aws-samples/awsome-distributed-training micro-benchmarks/nccl-tests/README.md, commit 0162aacd5da0: 78.33 on
# 2 x p4de.24xlarge, 443.72 on 2 x p5.48xlarge). p4d has p4de's network (4 x 100 Gbps EFA) and p5e has p5's
# (32 x 100 Gbps EFA), with the same NVSwitch, so they share the figure.
# instance type: (bus GB/s, GPUs per node, message bytes)
TYPICAL_BUS_BANDWIDTH = {
    "p4d.24xlarge": (78.33, 8, 2 * GIB),
    "p4de.24xlarge": (78.33, 8, 2 * GIB),
    "p5.48xlarge": (443.72, 8, 2 * GIB),
    "p5e.48xlarge": (443.72, 8, 2 * GIB),
}


def find_report(text):
    """The last NCCL report in ``text`` (the main node's logs), or None."""
    return core.find_report(text, REPORT_MARKER)


# --- which network NCCL used -------------------------------------------------------------------------------------

DECISIVE = re.compile(r"Using network (.+?)\s*$|via NET/([^/\r\n]+)/", re.M)
"""What carries the channels: ``Using network X`` (NCCL >= 2.6, per rank), ``... via NET/X/0`` (channel setup)."""
PROVIDER = re.compile(r"NET/OFI Selected Provider is (\w+)")
OFI_FAILED = re.compile(r"NET/OFI .*(?:initialization failed|Initializing plugin failed)")
# Without a decisive line (older NCCL): what initialised, in the order NCCL tries networks (plugin, IB, sockets).
WEAK = (("efa", re.compile(r"NET/OFI Selected Provider is efa")), ("tcpx", re.compile(r"NET/GPUDirectTCPX")),
        ("tcpxo", re.compile(r"NET/FasTrak")), ("ib", re.compile(r"NET/IB ?: Using \[")),
        ("socket", re.compile(r"NET/(?:Fast)?Socket ?: Using")))


def _network(name, text):
    name = name.lower()
    if "libfabric" in name or name.startswith(("ofi", "aws")):
        providers = set(PROVIDER.findall(text)) - {"efa"}
        return "socket" if providers else "efa"  # libfabric over its tcp provider is TCP all the same
    for key, value in (("gpudirecttcpx", "tcpx"), ("fastrak", "tcpxo"), ("socket", "socket"), ("ib", "ib")):
        if key in name:
            return value
    return "unknown"


MNNVL = re.compile(r"MNNVL 1 cliqueId \w+ cliqueSize (\d+)")
"""NCCL's line when it puts ranks of this job in one multi-node NVLink clique (GB200/GB300 NVL72 through an IMEX
channel): ``MNNVL 1 cliqueId 7f cliqueSize 8 cliqueRank 5 ...``, ``cliqueSize`` counting the job's ranks."""


def mnnvl(log_text):
    """The most ranks NCCL says share one multi-node NVLink clique (0: none, the ranks talk over the network)."""
    return max(map(int, MNNVL.findall(log_text)), default=0)


def transport(log_text):
    """The inter-node transport NCCL chose, read from its INFO lines: efa, ib, socket, tcpx, tcpxo or unknown.

    The network NCCL says it uses decides, not a plugin that loaded and failed (aws-ofi-nccl failing, then ``Using
    network Socket``, is socket). One rank on sockets is enough to say socket: that rank's links set the pace.
    """
    used = {_network(m.group(1) or m.group(2), log_text) for m in DECISIVE.finditer(log_text)} - {"unknown"}
    if used:
        return "socket" if "socket" in used else sorted(used)[0]
    for name, pattern in WEAK:
        if pattern.search(log_text) and not (name == "efa" and OFI_FAILED.search(log_text)):
            return name
    return "unknown"


# --- verdicts ----------------------------------------------------------------------------------------------------

FIXES = {
    "efa": "the image needs libfabric and aws-ofi-nccl (AWS's EFA installer, or an AWS Deep Learning Container), "
           "the container the /dev/infiniband/uverbsN devices (Batch: linuxParameters.devices; EKS: a "
           "vpc.amazonaws.com/efa request), memlock unlimited, and FI_PROVIDER=efa",
    "ib": "the container needs the RDMA devices (/dev/infiniband; AKS ND: rdma/shared_ib through NVIDIA's Network "
          "Operator), IPC_LOCK and an image with rdma-core (libibverbs); NCCL_IB_DISABLE must be unset",
    "tcpx": "GKE A3 High needs the nccl-tcpx-installer DaemonSet's plugin on LD_LIBRARY_PATH, the GPU NICs "
            "(multi-networking) and the tcpx-daemon sidecar; NCCL_NET=GPUDirectTCPX_v7 names the plugin",
    "tcpxo": "GKE A3 Mega needs the nccl-tcpxo-installer's FasTrak plugin, the tcpxo-daemon sidecar and its "
             "nccl-env-profile.sh sourced before the job",
}


def _transport_check(report, expected, nodes):
    used = report.get("transport") or "unknown"
    if nodes <= 1:
        return core.check("nccl_transport", SKIP, used, expected, "one node: NCCL crosses no network",
                          required=False)
    if expected in (None, "", "socket") or used == expected:
        return core.check("nccl_transport", PASS, used, expected or "socket")
    why = f"NCCL used {used}, not {expected}" if used != "unknown" else \
        "no NCCL INFO line names the network NCCL used" + (" (the run failed first)" if report.get("error") else "")
    fixes = globals().get("FIXES", {})  # jobs carry no FIXES (batch_probe.SDK_SIDE): their log has the verdict alone
    return core.check("nccl_transport", FAIL, used, expected, f"{why}: {fixes.get(expected, '')}".rstrip(": "))


def _bandwidth_check(report, nodes, instance_type):
    measured = report.get("busbw_gbps")
    if report.get("error") or not isinstance(measured, (int, float)):
        return core.check("nccl_bus_bandwidth", FAIL, None, None, "no measurement: the all-reduce did not run")
    measured = round(measured, 1)
    if (report.get("world_size") or 0) <= 1:
        return core.check("nccl_bus_bandwidth", SKIP, measured, None, "one rank: nothing crosses a link",
                          required=False)
    typical = TYPICAL_BUS_BANDWIDTH.get(instance_type or "")
    per_node = (report.get("world_size") or 0) / max(nodes, 1)
    if not typical or per_node != typical[1] or (report.get("bytes") or 0) < typical[2] / 2:
        why = f"no typical figure for {instance_type or 'this instance type'}" if not typical else \
            f"the typical figure is for {typical[1]} GPUs per node and messages of {typical[2] // GIB} GiB"
        return core.check("nccl_bus_bandwidth", PASS, measured, None, why, required=False)
    floor = core.VERDICT_FLOOR * typical[0]
    ok = measured >= floor
    return core.check("nccl_bus_bandwidth", PASS if ok else FAIL, measured, typical[0],
                      "" if ok else f"below {core.VERDICT_FLOOR:.0%} of what {instance_type} typically reaches "
                                    f"({floor:.0f} GB/s): a slow link, a degraded NIC, or traffic on TCP")


def checks(report, *, nodes, expected_transport, instance_type=None):
    """The verdicts on a gang job's NCCL report (core.check dicts); ``report`` None is one failing check."""
    if report is None:
        return [core.check("nccl_report", FAIL, None, "a GPUREADY_NCCL_REPORT line", "the main node printed no "
                           "NCCL report: its log ends before the all-reduce finished (see the node's log)")]
    error = report.get("error")
    hosts = len(set(report.get("hosts") or []))
    correct = report.get("correct") is True and not error
    return [
        core.check("nccl_hosts", PASS if hosts >= nodes else FAIL, hosts, nodes,
                   "" if hosts >= nodes else "fewer distinct hosts than nodes took part in the all-reduce"),
        core.check("nccl_all_reduce_correct", PASS if correct else FAIL, report.get("correct"), True,
                   f"the run failed: {error}" if error else ("" if correct else "the all-reduce returned wrong sums")),
        _transport_check(report, expected_transport, nodes),
        _bandwidth_check(report, nodes, instance_type),
    ]


# --- the launcher (every node) -----------------------------------------------------------------------------------

class RendezvousError(Exception):
    pass


def own_address():
    """This node's address on its default route (a UDP connect sends nothing), else its hostname's."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        try:
            udp.connect(("10.255.255.255", 1))
            return udp.getsockname()[0]
        except OSError:
            return socket.gethostbyname(socket.gethostname())


def rendezvous(env, nodes, main_address=None):
    """(node rank, main node address). Batch: the main node is rank 0 and listens on its own address (only child
    nodes get one). Kubernetes: the Indexed Job's index, and ``main_address``, pod 0's Service name."""
    if "AWS_BATCH_JOB_NODE_INDEX" in env:
        total = int(env.get("AWS_BATCH_JOB_NUM_NODES", nodes))
        if total != nodes:
            raise RendezvousError(f"AWS Batch started {total} nodes (AWS_BATCH_JOB_NUM_NODES), --nodes says {nodes}")
        rank = (int(env["AWS_BATCH_JOB_NODE_INDEX"]) - int(env.get("AWS_BATCH_JOB_MAIN_NODE_INDEX", 0))) % total
        address = env.get("AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS") if rank else own_address()
        if not address:
            raise RendezvousError("a child node without AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS: is the job a "
                                  "multi-node parallel job?")
    elif "JOB_COMPLETION_INDEX" in env:
        rank, address = int(env["JOB_COMPLETION_INDEX"]), main_address
        if not address:
            raise RendezvousError("--main-address (pod 0's headless Service name) is required on Kubernetes")
    else:
        raise RendezvousError("no rendezvous: neither AWS Batch's AWS_BATCH_JOB_NODE_INDEX nor a Kubernetes "
                              "Indexed Job's JOB_COMPLETION_INDEX is set")
    if not 0 <= rank < nodes:
        raise RendezvousError(f"node rank {rank} outside 0..{nodes - 1}")
    return rank, address


def torchrun_env(env):
    """The job's environment with NCCL's INFO lines on (TRACE has them too): the transport verdict reads them."""
    keep = env.get("NCCL_DEBUG", "").upper() in ("INFO", "TRACE")
    return {**env, "NCCL_DEBUG": env["NCCL_DEBUG"] if keep else "INFO"}


def stream(command, env, timeout, out=None):
    """Run ``command``, copying its output line by line to ``out`` (stdout); returns (exit code or None on timeout,
    the NCCL lines, the last lines). The whole process group is stopped at the deadline."""
    out = out or sys.stdout
    nccl_lines, tail = [], collections.deque(maxlen=40)
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                               start_new_session=True)

    def pump():
        for raw in process.stdout:
            line = raw.decode(errors="replace")
            out.write(line)
            out.flush()
            tail.append(line.rstrip())
            if "NCCL" in line and len(nccl_lines) < 100_000:
                nccl_lines.append(line)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        code = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        code = None
        os.killpg(process.pid, signal.SIGKILL)  # torchrun and its workers: one session
        process.wait()
    reader.join(timeout=5)
    return code, "".join(nccl_lines), list(tail)


def _last_complaint(tail):
    for line in reversed(tail):
        if re.search(r"error|warn|timed? ?out|exception|refused|failed", line, re.I):
            return line.strip()[:300]
    return next((line.strip()[:300] for line in reversed(tail) if line.strip()), "no output")


def bandwidth(nbytes, seconds, world):
    """(algbw, busbw) in GB/s of an all-reduce of ``nbytes`` per rank taking ``seconds``: nccl-tests' definitions,
    algbw = bytes / time, busbw = algbw x 2(n-1)/n."""
    algbw = nbytes / seconds / 1e9
    return algbw, algbw * 2 * (world - 1) / world


def assemble(result, nodes, gpus_per_node, log_text, error=None):
    """The report (INTERFACES.md section 3) from the worker's result (None when it wrote none) and the NCCL lines."""
    result = result or {}
    version = result.get("nccl_version") or (re.findall(r"NCCL version (\d+\.\d+\.\d+)", log_text) or [None])[-1]
    return {"version": 1, "nodes": nodes, "world_size": result.get("world_size", nodes * gpus_per_node),
            "hosts": result.get("hosts", []), "correct": bool(result.get("correct")) and not error,
            "bytes": result.get("bytes", 0), "algbw_gbps": result.get("algbw_gbps"),
            "busbw_gbps": result.get("busbw_gbps"), "transport": transport(log_text), "nccl_version": version,
            "mnnvl_ranks": mnnvl(log_text), "error": error}


def _say(text):
    print(f"gpuready nccl: {text}", file=sys.stderr, flush=True)


def _print_report(report):
    print(REPORT_MARKER + json.dumps(report, separators=(",", ":")), flush=True)


def launch(args):
    env = os.environ
    try:
        rank, address = rendezvous(env, args.nodes, args.main_address)
    except (RendezvousError, ValueError) as e:
        _print_report(assemble(None, args.nodes, args.gpus_per_node, "", f"rendezvous: {e}"))
        return 2
    try:
        print(core.report_line(core.probe(gpus_expected=args.gpus_per_node, quick=not args.full, seconds=0)), flush=True)
    except Exception as e:  # noqa: BLE001 (the all-reduce still tells what the node can do)
        _say(f"the probe failed: {e!r}")
    path = os.path.join(tempfile.mkdtemp(prefix="gpuready-nccl-"), "result.json")
    nbytes, iters = (2 * GIB, 20) if args.full else (GIB, 5)
    nbytes = args.message_mib * 2**20 if args.message_mib else nbytes
    base = shlex.split(env.get("GPUREADY_TORCHRUN", "")) or [sys.executable, "-m", "torch.distributed.run"]
    wait = str(args.rendezvous_timeout)
    command = [*base, "--nnodes", str(args.nodes), "--nproc-per-node", str(args.gpus_per_node), "--node-rank",
               str(rank), "--master-addr", address, "--master-port", str(args.port), "--rdzv-conf", "timeout=" + wait,
               os.path.abspath(__file__), "worker", "--result", path, "--bytes", str(nbytes), "--iters", str(iters),
               "--timeout", wait, "--backend", args.backend]
    _say(f"node {rank} of {args.nodes}, main node {address}:{args.port}")
    code, log_text, tail = stream(command, torchrun_env(env), args.timeout)
    error = None if code == 0 else f"torchrun exited {code} on node {rank}: {_last_complaint(tail)}" if code else \
        f"no result within {args.timeout} s: a node never joined {address}:{args.port} or NCCL hung " \
        f"({_last_complaint(tail)})"
    if rank != 0:
        if error:
            _say(error)
        return 0 if error is None else 1
    try:
        with open(path) as f:
            result = json.load(f)
    except (OSError, ValueError):
        result = None
    if not isinstance(result, dict):
        result, error = None, error or "torchrun exited 0 but the all-reduce worker wrote no result"
    report = assemble(result, args.nodes, args.gpus_per_node, log_text, error)
    _print_report(report)
    for c in checks(report, nodes=args.nodes, expected_transport=args.transport, instance_type=args.instance_type):
        _say(f"{c['name']} {c['verdict']} {c['measured']} {c['detail']}".rstrip())
    return 0 if report["error"] is None and report["correct"] else 1


# --- the worker (every GPU, under torchrun) ----------------------------------------------------------------------

HOSTNAME_BYTES = 255
"""Longest hostname (RFC 1123); gathered as fixed-size byte tensors, since all_gather_object needs numpy."""


def _gather_hostnames(torch, dist, world, device):
    """Every rank's hostname, in rank order."""
    mine = socket.gethostname().encode()[:HOSTNAME_BYTES].ljust(HOSTNAME_BYTES, b"\0")
    local = torch.tensor(list(mine), dtype=torch.uint8, device=device)
    gathered = [torch.empty_like(local) for _ in range(world)]
    dist.all_gather(gathered, local)
    return [bytes(t.tolist()).rstrip(b"\0").decode(errors="replace") for t in gathered]


def worker(args):
    import datetime

    import torch
    import torch.distributed as dist

    gpu = args.backend == "nccl"
    device = "cuda" if gpu else "cpu"
    if gpu:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
    sync = torch.cuda.synchronize if gpu else (lambda: None)
    dist.init_process_group(args.backend, timeout=datetime.timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    hosts = _gather_hostnames(torch, dist, world, device)
    ones = torch.full((2**20,), float(rank + 1), device=device)
    dist.all_reduce(ones)
    correct = torch.tensor([int(bool((ones == world * (world + 1) / 2).all()))], device=device)
    dist.all_reduce(correct, op=dist.ReduceOp.MIN)
    data = torch.zeros(args.bytes // 4, dtype=torch.float32, device=device)
    for _ in range(max(2, args.iters // 4)):
        dist.all_reduce(data)
    sync()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(args.iters):
        dist.all_reduce(data)
    sync()
    seconds = torch.tensor([(time.perf_counter() - start) / args.iters], dtype=torch.float64, device=device)
    dist.all_reduce(seconds, op=dist.ReduceOp.MAX)  # the slowest rank's time, as the job sees it
    if rank == 0:
        algbw, busbw = bandwidth(args.bytes, float(seconds), world)
        version = torch.cuda.nccl.version() if gpu else None
        result = {"world_size": world, "hosts": list(dict.fromkeys(hosts)), "correct": bool(correct.item()),
                  "bytes": args.bytes, "seconds": float(seconds), "algbw_gbps": round(algbw, 2),
                  "busbw_gbps": round(busbw, 2), "backend": args.backend,
                  "nccl_version": (".".join(map(str, version)) if isinstance(version, tuple) else str(version))
                  if gpu else None}
        with open(args.result + ".tmp", "w") as f:
            json.dump(result, f)
        os.replace(args.result + ".tmp", args.result)
    dist.destroy_process_group()
    return 0


def parser():
    top = argparse.ArgumentParser(prog="nccl.py")
    sub = top.add_subparsers(dest="command", required=True)
    run = sub.add_parser("launch")
    run.add_argument("--nodes", type=int, required=True)
    run.add_argument("--gpus-per-node", type=int, required=True)
    run.add_argument("--main-address")
    run.add_argument("--port", type=int, default=29500)
    run.add_argument("--transport", choices=("efa", "ib", "socket", "tcpx", "tcpxo"))
    run.add_argument("--instance-type")
    run.add_argument("--full", action="store_true")  # 2 GiB messages, 20 iterations (default: 1 GiB, 5)
    run.add_argument("--rendezvous-timeout", type=int, default=600)  # seconds for every node to arrive
    run.add_argument("--timeout", type=int, default=1800)  # seconds for the whole run
    run.add_argument("--message-mib", type=int)  # all-reduce size (default: 1024, 2048 with --full)
    # gloo: the whole path (rendezvous, torchrun, collectives, report) on CPUs, as a rehearsal without a GPU
    run.add_argument("--backend", choices=("nccl", "gloo"), default="nccl")
    work = sub.add_parser("worker")
    work.add_argument("--result", required=True)
    work.add_argument("--bytes", type=int, required=True)
    work.add_argument("--iters", type=int, required=True)
    work.add_argument("--timeout", type=int, default=600)
    work.add_argument("--backend", choices=("nccl", "gloo"), default="nccl")
    return top


def main(argv=None):
    """``launch`` on every node of a gang job; ``worker`` under torchrun."""
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    return launch(args) if args.command == "launch" else worker(args)


if __name__ == "__main__":
    sys.exit(main())
