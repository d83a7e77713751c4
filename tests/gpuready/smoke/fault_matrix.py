"""The fault matrix: each fault injected at each step of `gpuready smoke`, on each target, through the CLI.

A Batch case runs against moto's server, a Kubernetes case against the fake API server (fake_kube.py); a fault proxy
(fault_proxy.py) stands in front of either. Each case records what a user and their bill would notice: the exit
code, the verdict lines, the time taken against ``--timeout``, how many jobs were created, how many were left
running, and whether a traceback escaped. Used by test_fault_matrix.py and bench/fault_matrix.py.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import logging
import os
import tempfile
import time
import traceback
from pathlib import Path
from typing import Iterator, Optional

import requests

from gpuready.cli import main
from gpuready.probe import analyse_capture, core

from .fake_kube import FakeKube
from .fault_proxy import KUBE_ERRORS, FaultProxy, kube_action
from .moto_batch import LOG_GROUP, aws_client, build_queue, configure_moto, free_port, probe_definitions

TARGETS = ("batch", "kubernetes")
STEPS = ("submit", "first-describe", "polling", "logs", "cancel")
FAULTS = ("throttle", "5xx", "client", "reset", "reset-after", "hang", "interrupt")

CALLS = {
    "batch": {"submit": "/v1/submitjob", "first-describe": "/v1/describejobs", "polling": "/v1/describejobs",
              "logs": "GetLogEvents", "cancel": "/v1/terminatejob"},
    "kubernetes": {"submit": "create-job", "first-describe": "watch-pods", "polling": "watch-pods",
                   "logs": "read-log", "cancel": "delete-job"},
}
"""The API call each step makes; ``polling`` faults the second of them."""

WAITS = {"batch": ("polling", "cancel"), "kubernetes": ("polling",)}
"""Steps reached only by a job that waits for capacity until ``--timeout`` (the others' jobs end at once; a
Kubernetes Job is deleted however it ends)."""

TIMEOUT = 1.0
"""``--timeout`` of every case, in seconds."""
GRACE = 15.0
"""How far past ``--timeout`` a case may end."""
GPUS = 2
"""The job asks for 2 GPUs and its probe finds the 1 of the recorded H100: the verdict is FAIL (exit 1) whenever the
report is read, so exit 0 can only mean a defect."""

LIVE = ("SUBMITTED", "PENDING", "RUNNABLE", "STARTING", "RUNNING")
CAPTURE = Path(__file__).resolve().parents[2] / "data" / "nvidia-smi" / "h100-80gb-hbm3_driver-590.48.01.txt"


def report_logs() -> str:
    """What the probe prints on a 1-GPU H100 node asked for 2 GPUs."""
    report = analyse_capture(CAPTURE.read_bytes(), GPUS)
    return f"starting probe\n{core.report_line(dataclasses.asdict(report))}\n"


@dataclasses.dataclass
class Outcome:
    target: str
    step: str
    fault: str
    code: Optional[int]
    """The CLI's exit code (None: an exception escaped it)."""
    seconds: float
    verdicts: int
    """Lines that give the run's verdict: ``Verdict: ...`` on stdout or a ``gpuready: ...`` error on stderr."""
    submitted: int
    """Jobs created (a Batch job, a Kubernetes Job)."""
    leaked: int
    """Jobs left running or what they ran from left behind (Batch: SUBMITTED..RUNNING and never terminated, or the
    probe's job definition still ACTIVE; Kubernetes: a Job or ConfigMap left)."""
    traceback: bool
    injected: bool
    """The fault was met: the run reached the faulted call."""
    stdout: str
    stderr: str

    @property
    def expected_codes(self) -> tuple[int, ...]:
        return (1, 130) if self.fault == "interrupt" else (1, 2)

    def problems(self) -> list[str]:
        """What is wrong with this outcome, in words (empty: all is well)."""
        found = []
        if not self.injected:
            found.append("the fault was never injected")
        if self.code not in self.expected_codes:
            found.append(f"exit code {self.code}, expected one of {self.expected_codes}")
        if self.verdicts != 1:
            found.append(f"{self.verdicts} verdict lines")
        if self.leaked:
            found.append(f"{self.leaked} job(s) left running")
        if self.submitted > 1:
            found.append(f"{self.submitted} jobs submitted")
        if self.traceback:
            found.append("a traceback")
        if self.seconds > TIMEOUT + GRACE:
            found.append(f"took {self.seconds:.1f} s with --timeout {TIMEOUT:g}")
        return found


def _verdict_lines(stdout: str, stderr: str) -> int:
    errors = [line for line in stderr.splitlines() if line.startswith("gpuready: ")
              and not line.startswith(("gpuready: gpuready-smoke-", "gpuready: could not"))]
    return sum(line.startswith("Verdict: ") for line in stdout.splitlines()) + len(errors)


def _cli(outputs: dict, workdir: Path) -> tuple[Optional[int], str, str, bool, float]:
    path = workdir / "outputs.json"
    path.write_text(json.dumps(outputs))
    out, err, escaped = io.StringIO(), io.StringIO(), False
    started = time.monotonic()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(["smoke", "--outputs", str(path), "--timeout", f"{TIMEOUT:g}", "--gpus", str(GPUS)])
        except BaseException:  # noqa: BLE001 (an escaped exception is what this records)
            code, escaped = None, True
            traceback.print_exc(file=err)
    return code, out.getvalue(), err.getvalue(), escaped or "Traceback" in err.getvalue(), \
        time.monotonic() - started


def _plan(target: str, step: str, fault: str) -> dict[str, list[str]]:
    return {CALLS[target][step]: ["pass"] * (step == "polling") + [fault]}


class BatchWorld:
    """moto's server with the stack's queue; jobs either wait RUNNABLE (as Batch holds them when no capacity comes)
    or succeed at once with the probe's report in their log stream."""

    def __init__(self) -> None:
        from moto.batch_simple.models import BatchSimpleBackend
        from moto.server import ThreadedMotoServer

        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
        self.waits, self.held, self.logs = False, {}, report_logs()
        self._backend, self._original = BatchSimpleBackend, BatchSimpleBackend._mark_job_as_finished
        world = self

        def schedule(backend, include_start_attempt, job):
            world.held[job.job_id] = job
            if world.waits:
                backend.backend._jobs[job.job_id] = job
                job.status = "RUNNABLE"
                return
            world._original(backend, include_start_attempt, job)
            logs = aws_client("logs", world.endpoint)
            logs.create_log_stream(logGroupName=LOG_GROUP, logStreamName=job.log_stream_name)
            logs.put_log_events(logGroupName=LOG_GROUP, logStreamName=job.log_stream_name, logEvents=[
                {"timestamp": int(time.time() * 1000), "message": line} for line in world.logs.splitlines()])

        self._schedule = schedule

    def __enter__(self) -> "BatchWorld":
        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's server logs every request
        self.server.start()
        self._backend._mark_job_as_finished = self._schedule
        return self

    def __exit__(self, *exc) -> None:
        self._backend._mark_job_as_finished = self._original
        self.server.stop()

    def case(self, step: str, fault: str, workdir: Path) -> Outcome:
        requests.post(f"{self.endpoint}/moto-api/reset", timeout=120)  # slow under load: not a time limit under test
        configure_moto(self.endpoint)
        outputs = build_queue(self.endpoint)
        self.waits, self.held = step in WAITS["batch"], {}
        proxy = FaultProxy(self.port)
        proxy.plan = _plan("batch", step, fault)
        try:
            with _env(AWS_ENDPOINT_URL=proxy.url):
                code, out, err, escaped, seconds = _cli(outputs, workdir)
        finally:
            proxy.close()
        batch = aws_client("batch", self.endpoint)
        jobs = [j for status in (*LIVE, "SUCCEEDED", "FAILED")
                for j in batch.list_jobs(jobQueue="gpu", jobStatus=status)["jobSummaryList"]]
        leaked = [j for j in jobs if j["status"] in LIVE and not self.held[j["jobId"]].stop] + \
            probe_definitions(self.endpoint)
        return Outcome("batch", step, fault, code, seconds, _verdict_lines(out, err), len(jobs), len(leaked),
                       escaped, (CALLS["batch"][step], fault) in proxy.seen, out, err)


class KubeWorld:
    """The fake Kubernetes API server; the Job's pod either stays Pending or fails at once with the probe's report
    in its logs."""

    def __enter__(self) -> "KubeWorld":
        self.logs = report_logs()
        return self

    def __exit__(self, *exc) -> None:
        pass

    def case(self, step: str, fault: str, workdir: Path) -> Outcome:
        phases = ("Pending",) if step in WAITS["kubernetes"] else ("Pending", "Failed")
        server = FakeKube(phases=phases, logs=self.logs)
        proxy = FaultProxy(server.server.server_address[1], classify=kube_action, errors=KUBE_ERRORS)
        proxy.plan = _plan("kubernetes", step, fault)
        outputs = {"platform": "eks", "kubeconfig": server.kubeconfig().replace(server.url, proxy.url),
                   "gpuNodeTaints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}],
                   "gpuNodeLabels": {"nvidia.com/gpu.present": "true"}}
        try:
            code, out, err, escaped, seconds = _cli(outputs, workdir)
        finally:
            proxy.close()
            server.close()
        jobs = [name for kind, name in server.created if kind == "Job"]
        return Outcome("kubernetes", step, fault, code, seconds, _verdict_lines(out, err), len(jobs),
                       len(server.objects), escaped, (CALLS["kubernetes"][step], fault) in proxy.seen, out, err)


@contextlib.contextmanager
def _env(**values: str) -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextlib.contextmanager
def worlds() -> Iterator[dict]:
    """Both targets' worlds, AWS settings pointing at moto: ``{"batch": BatchWorld, "kubernetes": KubeWorld}``."""
    aws = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
    with _env(**aws), BatchWorld() as batch, KubeWorld() as kube, tempfile.TemporaryDirectory() as tmp:
        os.environ.pop("AWS_PROFILE", None)
        yield {"batch": batch, "kubernetes": kube, "workdir": Path(tmp)}


def cases() -> list[tuple[str, str, str]]:
    return [(target, step, fault) for target in TARGETS for step in STEPS for fault in FAULTS]
