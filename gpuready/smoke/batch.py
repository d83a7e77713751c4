"""The AWS Batch target: submit the probe to the stack's GPU queue, follow it, read its logs, never leave it running.

The probe file travels in a job definition of its own, registered for the run from the stack's GPU job definition
(:mod:`.batch_probe`), so any CUDA image with Python runs it; the definition is deregistered when the run ends.
Submission and registration are made at most once: neither is retried blindly; after an error what may have been
created is looked up first (the job by its unique name, the definition by its run tag).
"""

from __future__ import annotations

import itertools
import sys
import time
import uuid
from typing import Any, Callable, Optional, TextIO

from ..errors import UserError
from ..probe import Check, ProbeReport, core
from . import batch_probe, diagnose
from .outputs import StackOutputs
from .result import SmokeResult

TERMINAL = ("SUCCEEDED", "FAILED")
RETRYABLE_CODES = ("Throttling", "ThrottlingException", "TooManyRequestsException", "ServiceUnavailable",
                   "InternalFailure", "InternalServerError", "RequestTimeout")
SUBMIT_TRIES = 4
MIN_ATTEMPT_SECONDS = 60
"""The shortest ``attemptDurationSeconds`` Batch accepts."""


CLEANUP_GRACE = 4.0
"""Seconds after which no new TerminateJob (or DeregisterJobDefinition) attempt starts (each bounded to 2 s connect
+ 3 s read)."""


def _clients(region: Optional[str], timeout: float = 1800):
    """Clients whose every call fits well inside ``timeout`` seconds: at most 3 s to connect and 5 s to read (AWS
    answers these calls in well under a second). Calls whose failures the target retries itself, within its
    deadline (submit, poll, terminate), make one attempt each; the others up to three."""
    try:
        import boto3
        from botocore.config import Config
    except ImportError:
        raise UserError("boto3 is not installed: pip install 'gpuready[aws]'") from None
    connect, read = max(1.0, min(3.0, timeout / 6)), max(1.0, min(5.0, timeout / 3))

    def config(attempts: int, connect: float = connect, read: float = read) -> Config:
        return Config(retries={"mode": "standard", "total_max_attempts": attempts}, connect_timeout=connect,
                      read_timeout=read)
    session = boto3.session.Session(region_name=region)
    return {"batch": session.client("batch", config=config(3)), "submit": session.client("batch", config=config(1)),
            "poll": session.client("batch", config=config(1)),
            "cleanup": session.client("batch", config=config(1, min(connect, 2.0), min(read, 3.0))),
            "logs": session.client("logs", config=config(2)),
            # EC2's model alone takes ~0.4 s to load: only a diagnosis needs these
            "ec2": lambda: session.client("ec2", config=config(3)),
            "ecr": lambda: session.client("ecr", config=config(3))}


def _retryable(error: Exception) -> bool:
    from botocore.exceptions import ClientError, ConnectionError as BotoConnectionError, HTTPClientError

    if isinstance(error, (BotoConnectionError, HTTPClientError)):
        return True
    if isinstance(error, ClientError):
        code = error.response.get("Error", {}).get("Code", "")
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        return code in RETRYABLE_CODES or status >= 500 or status == 429
    return False


def find_job(batch: Any, queue: str, name: str) -> Optional[str]:
    """The id of the job named ``name`` in ``queue``, or None."""
    jobs = batch.list_jobs(jobQueue=queue, filters=[{"name": "JOB_NAME", "values": [name]}]).get("jobSummaryList")
    return jobs[0]["jobId"] if jobs else None


def find_definition(batch: Any, family: str, run: str) -> Optional[str]:
    """The ARN of the ACTIVE definition in ``family`` tagged ``gpuready:run`` = ``run``, or None."""
    for page in batch.get_paginator("describe_job_definitions").paginate(jobDefinitionName=family, status="ACTIVE"):
        for found in page.get("jobDefinitions") or []:
            if (found.get("tags") or {}).get("gpuready:run") == run:
                return found["jobDefinitionArn"]
    return None


FIND_TRIES = 3
"""Batch's lists are eventually consistent: what a lost answer may have created is looked for this many times."""


def find_landed(look: Callable[[], Optional[str]], sleep: Callable[[float], None]) -> Optional[str]:
    """What ``look`` finds, looked up with backoff, or None."""
    for attempt in range(FIND_TRIES):
        try:
            found = look()
        except Exception as error:  # noqa: BLE001 (a failed look-up is no proof of absence)
            if not _retryable(error):
                raise
            found = None
        if found:
            return found
        if attempt < FIND_TRIES - 1:
            sleep(min(2 ** attempt, 4))
    return None


def create_once(create: Callable[[], str], look: Callable[[], Optional[str]], sleep: Callable[[float], None],
                lost: Optional[list[Exception]] = None, what: str = "submit the smoke-test job") -> str:
    """``create()`` (a job or a job definition: its id); after a retryable error, adopt what it created if that
    landed (what ``look`` finds, with backoff), else create again. A retry follows only a look-up that found
    nothing, so no path creates two. ``lost`` collects the errors after which something may exist although
    nothing was found."""
    last: Optional[Exception] = None
    lost = [] if lost is None else lost
    for attempt in range(SUBMIT_TRIES):
        try:
            return create()
        except Exception as error:  # noqa: BLE001 (sorted below)
            if _answer_lost(error):
                lost.append(error)
            if not _retryable(error):
                found = find_landed(look, sleep) if _answer_lost(error) else None
                if found:
                    return found
                raise
            last = error
        sleep(min(2 ** attempt, 10))
        found = find_landed(look, sleep) if _answer_lost(last) else None
        if found:
            return found
    raise UserError(f"could not {what} after {SUBMIT_TRIES} tries: {describe_error(last)}")


def _answer_lost(error: Exception) -> bool:
    """True when the request may have reached AWS and taken effect: no answer came back, or a 5xx did (a throttled
    or refused call did not)."""
    from botocore.exceptions import ClientError

    if not isinstance(error, ClientError):
        return True
    return error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) >= 500


def describe_error(error: Optional[BaseException]) -> str:
    """One line naming an AWS error: its code and message, or the network failure."""
    if error is None:
        return "no error"
    response = getattr(error, "response", None)
    if isinstance(response, dict) and response.get("Error"):
        err = response["Error"]
        return f"{err.get('Code') or type(error).__name__}: {err.get('Message') or error}"
    return f"{type(error).__name__}: {error}"


def read_logs(logs: Any, group: str, stream: str) -> str:
    lines, token = [], None
    while True:
        kwargs = {"logGroupName": group, "logStreamName": stream, "startFromHead": True}
        if token:
            kwargs["nextToken"] = token
        try:
            page = logs.get_log_events(**kwargs)
        except logs.exceptions.ResourceNotFoundException:
            return ""
        lines += [e["message"] for e in page.get("events") or []]
        if page.get("nextForwardToken") in (None, token):
            return "\n".join(lines)
        token = page["nextForwardToken"]


def _log_location(job: dict[str, Any], stack: StackOutputs) -> tuple[str, Optional[str]]:
    container = job.get("container") or {}
    options = (container.get("logConfiguration") or {}).get("options") or {}
    group = options.get("awslogs-group") or stack.get("logGroupName") or "/aws/batch/job"
    attempts = job.get("attempts") or []
    stream = container.get("logStreamName") or (attempts[-1].get("container", {}).get("logStreamName")
                                                if attempts else None)
    return group, stream


def run(outputs: dict[str, Any], *, gpus: int = 1, timeout: float = 1800, keep: bool = False, full: bool = False,
        poll: float = 5.0, explain_after: float = 300.0, log_wait: float = 60.0, region: Optional[str] = None,
        progress: Optional[TextIO] = None, sleep: Callable[[float], None] = time.sleep) -> SmokeResult:
    """Run the probe as a Batch job on the stack's GPU queue and report what it found; what it waits for is printed
    to ``progress`` (default: stderr)."""
    progress = progress or sys.stderr
    stack = StackOutputs(outputs, ("aws-batch",))
    queue, definition = stack.get("jobQueueArn") or stack["jobQueueName"], stack["jobDefinitionArn"]
    want = {"GPU": gpus, "VCPU": int(stack["jobVcpus"]), "MEMORY": int(stack["jobMemoryMib"])}
    region = region or (queue.split(":")[3] if queue.startswith("arn:") else None)
    clients = _clients(region, timeout)
    batch, submit_client, logs = clients["batch"], clients["submit"], clients["logs"]

    def explain(job: dict[str, Any]) -> list[str]:
        return diagnose.explain(batch, job, clients["ec2"](), clients["ecr"]())
    result = SmokeResult(target="batch", job={"queue": queue, "definition": definition})

    found, envs = diagnose.environments(batch, queue)
    if found is None:
        raise UserError(f"job queue {queue} does not exist in {batch.meta.region_name}: are these the outputs of "
                        "a stack deployed with these AWS credentials, in this region?")
    why = diagnose.unplaceable(want, envs)
    if why:  # never submit a job that can only wait
        result.checks.append(Check("job_placeable", core.FAIL, f"{gpus} GPU, {want['VCPU']} vCPU, "
                                   f"{want['MEMORY']} MiB", None, "not submitted"))
        result.diagnosis.append(why)
        return result

    name = f"gpuready-smoke-{uuid.uuid4().hex[:12]}"
    tags = {"gpuready:smoke": "true", "gpuready:run": name}
    stack_definition = _described(batch, definition)
    registration = batch_probe.definition(stack_definition, gpus=gpus, full=full, tags=tags)
    family = registration["jobDefinitionName"]
    request = {"jobName": name, "jobQueue": queue,
               "containerOverrides": {"resourceRequirements": [{"type": "GPU", "value": str(gpus)}],
                                      "environment": [{"name": "NVIDIA_DRIVER_CAPABILITIES",
                                                       "value": "compute,utility"}]},
               # Batch stops a running job after this long, should gpuready lose track of it (a submit that
               # landed after its answer was lost and every look-up): never longer than the run itself
               "timeout": {"attemptDurationSeconds": max(MIN_ATTEMPT_SECONDS, int(timeout))},
               "tags": tags}
    result.job["name"] = name
    state: dict[str, Any] = {"id": None, "sent": False, "done": False}
    probe: dict[str, Any] = {"arn": None, "sent": False, "done": False}

    def cleanup(reason: str) -> None:
        """Terminate the job if it exists or may exist (a submit sent, its answer lost); once, raising nothing but
        a Ctrl-C (after the job is terminated, when it can be)."""
        if keep or state["done"] or not state["sent"]:
            return
        state["done"] = True
        _undo(result.job, "terminated", state["id"], lambda: find_landed(lambda: find_job(batch, queue, name), sleep),
              lambda job_id: clients["cleanup"].terminate_job(jobId=job_id, reason=reason),
              lambda error: f"could not terminate {name} ({describe_error(error)}): terminate it with "
                            f"`aws batch terminate-job --job-id {state['id'] or name} --reason cleanup`", progress)

    def release() -> None:
        """Deregister the probe's job definition if it exists or may exist (a register sent, its answer lost),
        unless a job left running by ``keep`` may still need it; once, raising nothing but a Ctrl-C."""
        if probe["done"] or not probe["sent"]:
            return
        if keep and state["sent"] and not state["done"]:
            print(f"gpuready: {name}: kept, and {probe['arn'] or family} that it runs from: once it ends, "
                  f"`aws batch deregister-job-definition --job-definition {probe['arn'] or family}`", file=progress)
            return
        deregister_probe(clients, result.job, probe, family, name, sleep, progress)

    try:
        register_probe(clients, registration, name, probe, sleep)
        request["jobDefinition"] = result.job["probe_definition"] = probe["arn"]
        state["sent"], lost = True, []
        try:
            state["id"] = create_once(lambda: submit_client.submit_job(**request)["jobId"],
                                      lambda: find_job(batch, queue, name), sleep, lost)
        except Exception:
            state["sent"] = bool(lost)  # every attempt refused: no job to look for
            raise
        result.job["id"] = state["id"]
        return _follow(result, state, clients["poll"], logs, stack, explain, cleanup, timeout=timeout, keep=keep,
                       poll=poll, explain_after=explain_after, log_wait=log_wait, progress=progress, sleep=sleep)
    except KeyboardInterrupt as stop:
        cleanup("gpuready smoke: interrupted")
        if type(stop) is not KeyboardInterrupt:  # SIGTERM (the CLI's subclass): cleaned up, now stop
            raise
        result.checks.append(Check("job_finished", core.FAIL, result.job.get("status"), "SUCCEEDED",
                                   "interrupted" + ("" if keep else "; job terminated")))
        return result
    finally:
        try:
            cleanup("gpuready smoke: stopped by an error")
        finally:
            release()


def register_probe(clients: dict[str, Any], registration: dict[str, Any], run: str, probe: dict[str, Any],
                   sleep: Callable[[float], None]) -> str:
    """Register the probe's job definition (``registration``, tagged ``gpuready:run`` = ``run``) at most once; its
    ARN. ``probe`` (``arn``, ``sent``) records what may exist, for :func:`deregister_probe`."""
    family = registration["jobDefinitionName"]
    probe["sent"], lost = True, []
    try:
        probe["arn"] = create_once(lambda: clients["submit"].register_job_definition(**registration)
                                   ["jobDefinitionArn"], lambda: find_definition(clients["batch"], family, run), sleep,
                                   lost, "register the probe's job definition")
    except Exception:
        probe["sent"] = bool(lost)  # every attempt refused: no definition to look for
        raise
    return probe["arn"]


def deregister_probe(clients: dict[str, Any], record: dict[str, Any], probe: dict[str, Any], family: str, run: str,
                     sleep: Callable[[float], None], progress: Any) -> None:
    """Deregister the definition :func:`register_probe` made (or may have made), once; ``record`` says whether it
    was. A failure is printed with the command that finishes the job, never raised."""
    probe["done"] = True
    _undo(record, "probe_definition_deregistered", probe["arn"],
          lambda: find_landed(lambda: find_definition(clients["batch"], family, run), sleep),
          lambda arn: clients["cleanup"].deregister_job_definition(jobDefinition=arn),
          lambda error: f"could not deregister {probe['arn'] or family} ({describe_error(error)}): deregister "
                        f"it with `aws batch deregister-job-definition --job-definition "
                        f"{probe['arn'] or family + ':<revision>'}`", progress)


def _described(batch: Any, arn: str) -> dict[str, Any]:
    """The stack's job definition, as ``DescribeJobDefinitions`` returns it."""
    found = batch.describe_job_definitions(jobDefinitions=[arn]).get("jobDefinitions") or []
    if not found:
        raise UserError(f"job definition {arn} does not exist in {batch.meta.region_name}: are these the outputs "
                        "of a stack deployed with these AWS credentials, in this region?")
    return found[0]


def _undo(record: dict[str, Any], key: str, known: Optional[str], look: Callable[[], Optional[str]],
          undo: Callable[[str], Any], failed: Callable[[BaseException], str], progress: Any) -> None:
    """``undo`` what ``known`` names or else what ``look`` finds, retried on any error for :data:`CLEANUP_GRACE`
    seconds; ``record[key]`` says whether something was undone. A failure is printed (``gpuready: `` and
    ``failed(error)``), never raised; a Ctrl-C meanwhile is raised once ``undo`` is done."""
    try:
        target = known or look()
        interrupted = _persist(lambda: undo(target)) if target else None
        record[key] = bool(target)
    except BaseException as error:  # noqa: BLE001 (reported: the cleanup must not hide the verdict)
        print(f"gpuready: {failed(error)}", file=progress)
        interrupted = error if isinstance(error, KeyboardInterrupt) else None
    if interrupted is not None:
        raise interrupted


def _follow(result: SmokeResult, state: dict[str, Any], batch: Any, logs: Any, stack: StackOutputs,
            explain: Callable[[dict[str, Any]], list[str]], cleanup: Callable[[str], None], *, timeout: float,
            keep: bool, poll: float, explain_after: float, log_wait: float, progress: Any,
            sleep: Callable[[float], None]) -> SmokeResult:
    """Follow the submitted job to its end (or ``timeout``), then read its report from the logs."""
    job_id, name = state["id"], result.job["name"]
    started, status, job, explained, failures = time.monotonic(), None, {}, False, 0
    unread: Optional[Exception] = None  # why the last DescribeJobs failed, if it did
    while True:
        try:
            described, unread = batch.describe_jobs(jobs=[job_id]).get("jobs") or [], None
            failures = 0
        except Exception as error:  # noqa: BLE001 (a passing fault is retried with backoff, until the timeout)
            if not _retryable(error):
                raise
            unread = error
            if time.monotonic() - started < timeout:
                failures += 1
                sleep(min(poll, 0.25 * 2 ** failures, max(0.1, timeout - (time.monotonic() - started))))
                continue
            described = []  # past the deadline: the timeout's verdict, on the last status seen
        job = described[0] if described else job
        if job.get("status") != status:
            status = job.get("status")
            result.job["status"] = status
            print(f"gpuready: {name}: {status} after {time.monotonic() - started:.0f} s", file=progress)
        if status in TERMINAL:
            state["done"] = True
            break
        waited = time.monotonic() - started
        if status in ("RUNNABLE", "STARTING") and waited >= explain_after and not explained:
            explained = True
            result.diagnosis = explain(job)
            for line in result.diagnosis:
                print(f"gpuready: {name}: {line}", file=progress)
        if waited >= timeout:
            cleanup("gpuready smoke: timed out")  # before the diagnosis, which may fail
            result.checks.append(Check("job_finished", core.FAIL, status, "SUCCEEDED",
                                       f"not finished after {timeout:g} s" + ("" if keep else "; terminated")
                                       + (f"; its status could not be read: {describe_error(unread)}" if unread
                                          else "")))
            if not result.diagnosis and status in ("RUNNABLE", "STARTING"):
                result.diagnosis = explain(job)
            return result
        sleep(min(poll, max(0.1, timeout - waited)))

    reason = job.get("statusReason") or ""
    exit_code = (job.get("container") or {}).get("exitCode")
    result.checks.append(Check("job_status", core.PASS if status == "SUCCEEDED" else core.FAIL, status, "SUCCEEDED",
                               f"{reason} (exit code {exit_code})" if status != "SUCCEEDED" else ""))
    group, stream = _log_location(job, stack)
    result.job.update({"log_group": group, "log_stream": stream})
    report, deadline = None, time.monotonic() + log_wait
    while stream:  # CloudWatch Logs can lag the job's end by a few seconds
        report = core.find_report(read_logs(logs, group, stream))
        if report is not None or time.monotonic() >= deadline:
            break
        sleep(min(poll, 5.0))
    result.add_probe(ProbeReport.from_json(report) if report else None)
    return result


def _persist(call: Callable[[], Any]) -> Optional[KeyboardInterrupt]:
    """``call()`` (TerminateJob, DeregisterJobDefinition), retried on any error for :data:`CLEANUP_GRACE` seconds:
    both are idempotent, and a job left running bills a GPU instance. A Ctrl-C meanwhile does not stop it: it is
    returned, for the caller to raise."""
    deadline, interrupted = time.monotonic() + CLEANUP_GRACE, None
    for attempt in itertools.count():
        try:
            call()
            return interrupted
        except (Exception, KeyboardInterrupt) as error:  # noqa: BLE001 (retried; the caller reports the last)
            interrupted = error if isinstance(error, KeyboardInterrupt) else interrupted
            pause = min(0.2 * 2 ** attempt, 1.0)
            if time.monotonic() + pause >= deadline:
                raise
        time.sleep(pause)
