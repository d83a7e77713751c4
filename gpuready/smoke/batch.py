"""The AWS Batch target: submit the probe to the stack's GPU queue, follow it, read its logs, never leave it running.

The probe file travels in a job definition of its own, registered for the run from the stack's GPU job definition
(:mod:`.batch_probe`), so any CUDA image with Python runs it; the definition is deregistered when the run ends.
Submission and registration are made at most once: neither is retried blindly; after an error what may have been
created is looked up first (the job by its unique name, the definition by its run tag).
"""

from __future__ import annotations

import sys
import time
import uuid
from typing import Any, Callable, Iterable, Mapping, Optional, TextIO, TypeVar

from gpuready_components import platforms

from ..errors import UserError
from ..probe import Check, ProbeReport, core
from . import batch_probe, diagnose
from .outputs import StackOutputs
from .result import SmokeResult
from .retry import FLOOR, Backoff, Deadline, HeldInterrupt, persist, retry
from .target import Request, SmokeTarget, drive

TERMINAL = ("SUCCEEDED", "FAILED")
RETRYABLE_CODES = ("Throttling", "ThrottlingException", "TooManyRequestsException", "ServiceUnavailable",
                   "InternalFailure", "InternalServerError", "RequestTimeout")
SUBMIT_TRIES = 4
SUBMIT_BACKOFF = Backoff(1.0, 10.0)
"""Pauses between tries of a submit (or register), each followed by a look for what the last one may have made."""
MIN_ATTEMPT_SECONDS = 60
"""The shortest ``attemptDurationSeconds`` Batch accepts."""


CLEANUP_GRACE = 4.0
"""Seconds after which no new TerminateJob (or DeregisterJobDefinition) attempt starts (each bounded to 2 s connect
+ 3 s read)."""
CLEANUP_WITHIN = 13.0
"""Seconds after ``--timeout`` (or after the error or Ctrl-C that stops the run sooner) by which the whole cleanup
has ended, every call of it bounded by what is left (:class:`BoundedClient`): the promise is ``--timeout`` plus 15 s,
and the run may reach its cleanup a moment after its deadline."""
CLEANUP_BACKOFF = Backoff(0.2, 1.0)


def clients(region: Optional[str], timeout: float = 1800) -> dict[str, Any]:
    """Clients whose every call ends by the run's deadline (``timeout`` seconds from now, until
    :meth:`BatchRun.waiting` starts the wait's; then the cleanup's, :meth:`Submission.cleaning`), each a
    :class:`BoundedClient` sharing one :class:`.retry.Deadline` (but the logs', read once the work ended, for
    ``log_wait``): at most 3 s to connect and 5 s to read (AWS answers these calls in well under a second), less
    when less time is left. Calls whose failures the target retries itself, within its deadline (submit, poll,
    terminate), make one attempt each; the others up to three."""
    try:
        import boto3
        from botocore.config import Config
    except ImportError:
        from gpuready_components.sdk import install_command

        raise UserError(f"boto3 is not installed: {install_command('aws')}") from None
    deadline = Deadline(time.monotonic() + timeout)
    connect, read = max(1.0, min(3.0, timeout / 6)), max(1.0, min(5.0, timeout / 3))
    session = boto3.session.Session(region_name=region)

    def bounded(service: str, attempts: int, connect: float = connect, read: float = read,
                until: Deadline = deadline) -> BoundedClient:
        return BoundedClient(lambda connect, read, attempts: session.client(service, config=Config(
            retries={"mode": "standard", "total_max_attempts": attempts}, connect_timeout=connect,
            read_timeout=read)), connect, read, attempts, until)
    return {"batch": bounded("batch", 3), "submit": bounded("batch", 1), "poll": bounded("batch", 1),
            "cleanup": bounded("batch", 1, min(connect, 2.0), min(read, 3.0)),
            # the logs of work that ended, read for up to log_wait seconds however --timeout stands
            "logs": bounded("logs", 2, until=Deadline()),
            # EC2's model alone takes ~0.4 s to load: only a diagnosis needs these
            "ec2": lambda: bounded("ec2", 3), "ecr": lambda: bounded("ecr", 3)}


class BoundedClient:
    """A boto3 client (what ``make(connect, read, attempts)`` makes) whose every call ends by ``deadline``, give or
    take :data:`.retry.FLOOR`: its connect and read timeouts shortened to the time left, and one attempt where the
    time left cannot hold ``attempts`` (botocore's own retries pause up to 2 s between them). A client is made for
    each shortened timeout that is needed (a few, near the deadline: cheap once the service's model is loaded)."""

    STEP = 0.25
    """Timeouts are shortened in steps of this many seconds (fewer clients)."""

    def __init__(self, make: Callable[[float, float, int], Any], connect: float, read: float, attempts: int,
                 deadline: Deadline) -> None:
        self.make, self.base, self.attempts, self.deadline = make, (connect, read), attempts, deadline
        self.made: dict[tuple[float, float, int], Any] = {}

    def current(self) -> Any:
        """The client for a call made now."""
        whole = self.attempts * sum(self.base) + 2 * (self.attempts - 1)
        if self.deadline.left() >= whole:
            key = (*self.base, self.attempts)
        else:
            key = (*(max(FLOOR, int(limit / self.STEP) * self.STEP) for limit in self.deadline.limits(*self.base)), 1)
        if key not in self.made:
            self.made[key] = self.make(*key)
        return self.made[key]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.current(), name)


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
LOOK_BACKOFF = Backoff(1.0, 4.0)


def find_landed(look: Callable[[], Optional[str]], sleep: Callable[[float], None],
                deadline: Optional[float] = None) -> Optional[str]:
    """What ``look`` finds, looked up with backoff (no pause reaching ``deadline``), or None."""
    def attempt() -> str:
        found = look()
        if not found:
            raise NothingYet
        return found
    try:
        return retry(attempt, retryable=lambda error: isinstance(error, NothingYet) or _retryable(error),
                     backoff=LOOK_BACKOFF, tries=FIND_TRIES, deadline=deadline, sleep=sleep)
    except Exception as error:  # noqa: BLE001 (a failed look-up is no proof of absence)
        if isinstance(error, NothingYet) or _retryable(error):
            return None
        raise


class NothingYet(Exception):
    """A look-up that found nothing (yet: Batch's lists are eventually consistent)."""


def create_once(create: Callable[[], str], look: Callable[[], Optional[str]], sleep: Callable[[float], None],
                lost: Optional[list[Exception]] = None, what: str = "submit the smoke-test job") -> str:
    """``create()`` (a job or a job definition: its id); after a retryable error, adopt what it created if that
    landed (what ``look`` finds, with backoff), else create again. A retry follows only a look-up that found
    nothing, so no path creates two. ``lost`` collects the errors after which something may exist although
    nothing was found."""
    lost = [] if lost is None else lost
    errors: list[Exception] = []

    def landed(error: Exception) -> Optional[str]:
        return find_landed(look, sleep) if _answer_lost(error) else None

    def attempt() -> str:
        found = landed(errors[-1]) if errors else None  # after the pause: did the last try land?
        if found:
            return found
        try:
            return create()
        except Exception as error:  # noqa: BLE001 (sorted below)
            errors.append(error)
            if _answer_lost(error):
                lost.append(error)
            if not _retryable(error):
                found = landed(error)
                if found:
                    return found
            raise
    try:
        return retry(attempt, retryable=_retryable, backoff=SUBMIT_BACKOFF, tries=SUBMIT_TRIES, sleep=sleep)
    except Exception as error:  # noqa: BLE001 (the last try: it may still land)
        if not _retryable(error):
            raise
        sleep(SUBMIT_BACKOFF.pause(SUBMIT_TRIES - 1))
        found = landed(error)
        if found:
            return found
        raise UserError(f"could not {what} after {SUBMIT_TRIES} tries: {describe_error(error)}") from None


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


K = TypeVar("K")


def read_until(logs: Any, streams: Mapping[K, tuple[str, str]], done: Callable[[K, str], bool], *, log_wait: float,
               poll: float, sleep: Callable[[float], None]) -> dict[K, str]:
    """The text of each log stream of ``streams`` (key: (group, stream)), read again until ``done(key, text)``
    holds for every one or ``log_wait`` seconds have passed: CloudWatch Logs can lag a job's end by seconds."""
    texts: dict[K, str] = {}
    deadline = time.monotonic() + log_wait
    while True:
        for key, (group, stream) in streams.items():
            if key not in texts or not done(key, texts[key]):
                texts[key] = read_logs(logs, group, stream)
        if all(done(key, text) for key, text in texts.items()) or time.monotonic() >= deadline:
            return texts
        sleep(min(poll, 5.0))


def read_logs(logs: Any, group: str, stream: str) -> str:
    """Every message of a log stream, oldest first ("" for a stream not there yet)."""
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


def log_location(job: dict[str, Any], stack: StackOutputs) -> tuple[str, Optional[str]]:
    container = job.get("container") or {}
    options = (container.get("logConfiguration") or {}).get("options") or {}
    group = options.get("awslogs-group") or stack.get("logGroupName") or "/aws/batch/job"
    attempts = job.get("attempts") or []
    stream = container.get("logStreamName") or (attempts[-1].get("container", {}).get("logStreamName")
                                                if attempts else None)
    return group, stream




def batch_platforms() -> tuple[str, ...]:
    """The platforms whose outputs the Batch targets read (``platform``): every one the registry knows whose smoke
    targets are Batch runs (:class:`BatchRun`)."""
    return tuple(platform.name for platform in platforms.every(kubernetes=False)
                 if any(issubclass(load(), BatchRun) for load in platform.targets.values()))


class BatchRun(SmokeTarget):
    """What the Batch targets share: one :class:`Submission` (the run's probe job definition and its jobs, each
    created once), undone by :meth:`cleanup` (every job terminated, then the definition deregistered, unless
    ``--keep``); a Ctrl-C is a failing ``job_finished``."""

    submission: Optional["Submission"] = None
    """Set by :meth:`prepare` once the run may submit."""
    aws: dict[str, Any]
    """The run's clients (:func:`clients`)."""
    progress: TextIO
    sleep: Callable[[float], None]

    def team_queue(self, stack: StackOutputs, queue: str, gang: bool = False) -> tuple[str, dict[str, str]]:
        """Where the run's jobs go, and what their SubmitJob adds: with ``--team``, the team's fair-share queue
        (``jobQueueArn``; ``multiNodeJobQueueArn`` for a ``gang``) and its ``shareIdentifier`` (a fair-share queue
        refuses a job without one, a first-in first-out queue one with it); without, on a stack with teams, the
        queue that takes jobs without a share identifier (the teams' ``metaflowJobQueueArn``, said on ``progress``;
        for a ``gang``, ``queue``, the stack's multi-node queue), else a UserError asking for ``--team``; on a stack
        without teams, ``queue`` as it was."""
        from . import kueue

        teams = kueue.stack_teams(stack)
        teamless = {queue} if gang else {t.get("metaflowJobQueueArn") for t in teams}
        plain = next(iter(teamless)) if len(teamless) == 1 and None not in teamless else None
        team = kueue.choose(teams, self.request.team, stack.platform, teamless=plain)
        if team is not None:
            fair = team.get("multiNodeJobQueueArn" if gang else "jobQueueArn")
            if not fair:
                raise UserError(f"--team {team['name']}: the stack's teams have no fair-share "
                                f"{'multi-node ' if gang else ''}queue (no {'multiNodeJobQueueArn' if gang else 'jobQueueArn'} "
                                "in their outputs): deploy this gpuready version's stack, or leave --team out")
            return str(fair), {"shareIdentifier": str(team["shareIdentifier"])}
        if teams and gang:
            return queue, {}
        if teams:
            print(f"gpuready: no --team: the job goes to {plain}, the queue for jobs without a team (Metaflow's, no "
                  "share identifier); pass --team NAME to go through a team's fair share", file=self.progress)
            return str(plain), {}
        return queue, {}

    def prepare(self, queue: str, name: str, registration: dict[str, Any],
                submit_request: Optional[dict[str, Any]] = None, command: str = "smoke") -> None:
        """Make the run ready to submit, at the end of :meth:`preflight`: ``registration`` is the probe's job
        definition (``RegisterJobDefinition`` request), ``submit_request`` the one job's ``SubmitJob`` request (its
        ``jobDefinition`` filled in by :meth:`submit`), ``name`` the run's name (:func:`run_name`)."""
        self.registration, self.submit_request = registration, submit_request
        self.result.job["name"] = name
        self.submission = Submission(self.result, self.aws, queue, name, registration["jobDefinitionName"],
                                     keep=self.request.keep, progress=self.progress, sleep=self.sleep,
                                     command=command)

    def submit(self) -> None:
        """Register the probe's job definition, then submit the one job."""
        self.submit_request["jobDefinition"] = self.submission.register(self.registration)
        self.result.job["id"] = self.submission.submit(self.submit_request)

    def waiting(self) -> float:
        """Start the wait for the submitted work: ``--timeout`` counts from now, and every call of the run's clients
        ends by then (:class:`BoundedClient`); now, for :func:`wait`'s ``started``."""
        now = time.monotonic()
        deadline = getattr(self.aws.get("poll"), "deadline", None)
        if isinstance(deadline, Deadline):
            deadline.at = now + self.request.timeout
        return now

    def cleanup(self, reason: str) -> None:
        if self.submission is None:
            return
        try:
            self.submission.cleanup(f"gpuready {self.submission.command}: {reason}")
        finally:
            self.submission.release()

    def interrupted(self) -> Any:
        self.result.checks.append(Check("job_finished", core.FAIL, self.result.job.get("status"), "SUCCEEDED",
                                        "interrupted" + ("" if self.request.keep else "; job terminated")))
        return self.result


class BatchTarget(BatchRun):
    """The probe as one job on the stack's GPU queue (``--gpus`` GPUs, the job definition's vCPUs and memory), its
    report read from the job's CloudWatch log stream. Progress goes to ``progress`` (default: stderr); a job that
    waits in RUNNABLE or STARTING is explained after ``explain_after`` seconds; the logs are read for up to
    ``log_wait`` seconds (CloudWatch Logs lags a job's end)."""

    def __init__(self, outputs: Mapping[str, Any], request: Request, *, poll: float = 5.0,
                 explain_after: float = 300.0, log_wait: float = 60.0, region: Optional[str] = None,
                 progress: Optional[TextIO] = None, sleep: Callable[[float], None] = time.sleep) -> None:
        super().__init__(outputs, request)
        self.gpus = request.gpus or 1
        self.poll, self.explain_after, self.log_wait, self.region = poll, explain_after, log_wait, region
        self.progress, self.sleep = progress or sys.stderr, sleep
        self.job: Optional[dict[str, Any]] = None
        """The job's last description, once it ended."""

    def preflight(self) -> bool:
        self.stack = stack = StackOutputs(self.outputs, batch_platforms())
        queue, definition = stack.get("jobQueueArn") or stack["jobQueueName"], stack["jobDefinitionArn"]
        queue, share = self.team_queue(stack, queue)
        want = {"GPU": self.gpus, "VCPU": int(stack["jobVcpus"]), "MEMORY": int(stack["jobMemoryMib"])}
        self.aws = aws = clients(queue_region(queue, self.region), self.request.timeout)
        self.result = SmokeResult(target="batch", job={"queue": queue, "definition": definition, **share})
        why = diagnose.unplaceable(want, queue_environments(aws["batch"], queue))
        if why:  # never submit a job that can only wait
            not_placeable(self.result, f"{self.gpus} GPU, {want['VCPU']} vCPU, {want['MEMORY']} MiB", why)
            return False
        name, tags = run_name()
        registration = batch_probe.definition(describe_definition(aws["batch"], definition), gpus=self.gpus,
                                              full=self.request.full, tags=tags)
        self.prepare(queue, name, registration, {
            "jobName": name, "jobQueue": queue,
            "containerOverrides": {"resourceRequirements": [{"type": "GPU", "value": str(self.gpus)}],
                                   "environment": [{"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"}]},
            "timeout": attempt_timeout(self.request.timeout),
            "tags": tags, **share})
        return True

    def follow(self) -> bool:
        self.job, _ = wait(self.result, self.submission.state, self.aws["poll"],
                           lambda job, nodes: diagnose.explain(self.aws["batch"], job, self.aws["ec2"](),
                                                               self.aws["ecr"](),
                                                               self.stack.get("gpuReservations") or ()),
                           self.submission.cleanup, timeout=self.request.timeout, keep=self.request.keep,
                           poll=self.poll, explain_after=self.explain_after, progress=self.progress,
                           sleep=self.sleep, started=self.waiting())
        return self.job is not None

    def collect(self) -> None:
        job, result = self.job, self.result
        status, reason = job.get("status"), job.get("statusReason") or ""
        exit_code = (job.get("container") or {}).get("exitCode")
        result.checks.append(Check("job_status", core.PASS if status == "SUCCEEDED" else core.FAIL, status,
                                   "SUCCEEDED", f"{reason} (exit code {exit_code})" if status != "SUCCEEDED" else ""))
        group, stream = log_location(job, self.stack)
        result.job.update({"log_group": group, "log_stream": stream})
        texts = read_until(self.aws["logs"], {stream: (group, stream)} if stream else {},
                           lambda _, text: core.find_report(text) is not None, log_wait=self.log_wait,
                           poll=self.poll, sleep=self.sleep)
        report = core.find_report(texts.get(stream, "")) if stream else None
        result.add_probe(ProbeReport.from_json(report) if report else None)


def run(outputs: dict[str, Any], *, gpus: int = 1, timeout: float = 1800, keep: bool = False, full: bool = False,
        poll: float = 5.0, explain_after: float = 300.0, log_wait: float = 60.0, region: Optional[str] = None,
        progress: Optional[TextIO] = None, sleep: Callable[[float], None] = time.sleep,
        team: Optional[str] = None) -> SmokeResult:
    """Run the probe as a Batch job on the stack's GPU queue (``team``'s, with its share identifier, when given) and
    report what it found (:class:`BatchTarget`); what it waits for is printed to ``progress`` (default: stderr)."""
    return drive(BatchTarget(outputs, Request(timeout=timeout, gpus=gpus, keep=keep, full=full, team=team),
                             poll=poll,
                             explain_after=explain_after, log_wait=log_wait, region=region, progress=progress,
                             sleep=sleep))


def queue_region(queue: str, region: Optional[str]) -> Optional[str]:
    """``region``, else the one in the queue's ARN (None for a bare queue name: the SDK's default region)."""
    return region or (queue.split(":")[3] if queue.startswith("arn:") else None)


def attempt_timeout(timeout: float) -> dict[str, int]:
    """A job's ``timeout``: Batch stops a running job after this long, should gpuready lose track of it (a submit
    that landed after its answer was lost and every look-up), never longer than the run itself."""
    return {"attemptDurationSeconds": max(MIN_ATTEMPT_SECONDS, int(timeout))}


def queue_environments(batch: Any, queue: str) -> list[dict[str, Any]]:
    """The compute environments of ``queue`` (DescribeComputeEnvironments), in queue order; a UserError when the
    queue does not exist."""
    found, envs = diagnose.environments(batch, queue)
    if found is None:
        raise UserError(f"job queue {queue} does not exist in {batch.meta.region_name}: are these the outputs of "
                        "a stack deployed with these AWS credentials, in this region?")
    return envs


def not_placeable(result: SmokeResult, asked: str, why: str) -> SmokeResult:
    """``result`` with a failing ``job_placeable`` check (``asked``: what the job asks for) and ``why``: a job that
    could only wait is not submitted."""
    result.checks.append(Check("job_placeable", core.FAIL, asked, None, "not submitted"))
    result.diagnosis.append(why)
    return result


def run_name(command: str = "smoke") -> tuple[str, dict[str, str]]:
    """A run's unique name (``gpuready-COMMAND-...``: its job's, and the look-up key after a lost answer) and the
    tags it puts on what it creates."""
    name = f"gpuready-{command}-{uuid.uuid4().hex[:12]}"
    return name, {f"gpuready:{command}": "true", "gpuready:run": name}


class Submission:
    """One run's probe job definition and its jobs on ``queue`` (one; a sweep's several): each created at most once
    (:func:`create_once`: after an error, what may have landed is looked up by its name before any retry), and
    undone on every way out (:meth:`cleanup`: every job terminated; :meth:`release`: then the definition
    deregistered), unless ``keep``. ``command`` (``smoke``, ``sweep``) names the run in the reasons its jobs are
    terminated with."""

    def __init__(self, result: Any, clients: dict[str, Any], queue: str, name: str, family: str, *,
                 keep: bool, progress: Any, sleep: Callable[[float], None], command: str = "smoke") -> None:
        self.result, self.clients, self.queue, self.name, self.family = result, clients, queue, name, family
        self.keep, self.progress, self.sleep, self.command = keep, progress, sleep, command
        self.jobs: list[dict[str, Any]] = []
        """Each job submitted: its name, id, whether a submit was sent, whether it ended or was undone."""
        self.probe: dict[str, Any] = {"arn": None, "sent": False, "done": False}
        """The probe's job definition: its ARN, whether a register was sent, whether it was undone."""
        self.until: Optional[float] = None
        """When the cleanup must have ended (:data:`CLEANUP_WITHIN`), from its first step on."""

    def cleaning(self) -> float:
        """The cleanup's deadline, set at its first step: :data:`CLEANUP_WITHIN` after the run's deadline (or after
        now, if sooner); the clients' calls are bounded by it from then on."""
        if self.until is None:
            deadline = getattr(self.clients["cleanup"], "deadline", None)
            self.until = deadline.extend(CLEANUP_WITHIN) if isinstance(deadline, Deadline) else \
                time.monotonic() + CLEANUP_WITHIN
        return self.until

    @property
    def state(self) -> dict[str, Any]:
        """The first job submitted (a smoke run's only one); :func:`wait` marks it ``done`` when it ends."""
        return self.jobs[0]

    def register(self, registration: dict[str, Any]) -> str:
        """Register the probe's job definition (``RegisterJobDefinition`` request); its ARN."""
        batch, lost = self.clients["batch"], []
        self.probe["sent"] = True
        try:
            self.probe["arn"] = create_once(lambda: self.clients["submit"].register_job_definition(**registration)
                                            ["jobDefinitionArn"],
                                            lambda: find_definition(batch, self.family, self.name), self.sleep, lost,
                                            "register the probe's job definition")
        except Exception:
            self.probe["sent"] = bool(lost)  # every attempt refused: no definition to look for
            raise
        self.result.job["probe_definition"] = self.probe["arn"]
        return self.probe["arn"]

    def submit(self, request: dict[str, Any], what: str = "submit the smoke-test job") -> str:
        """Submit a job (``SubmitJob`` request; its ``jobName`` unique to the run); its id. ``what`` names it in
        the error after the last try."""
        batch, lost = self.clients["batch"], []
        job = {"name": request["jobName"], "id": None, "sent": True, "done": False}
        self.jobs.append(job)
        try:
            job["id"] = create_once(lambda: self.clients["submit"].submit_job(**request)["jobId"],
                                    lambda: find_job(batch, self.queue, job["name"]), self.sleep, lost, what)
        except Exception:
            job["sent"] = bool(lost)  # every attempt refused: no job to look for
            raise
        return job["id"]

    def cleanup(self, reason: str) -> None:
        """Terminate every job that exists or may exist (a submit sent, its answer lost) and has not ended; once
        each, raising nothing but a Ctrl-C (after every job is terminated, when it can be). A multi-node job's
        nodes end with it. ``result.job["terminated"]``: whether the job was terminated (several jobs: how many)."""
        batch, held = self.clients["batch"], HeldInterrupt()
        undone = [job for job in self.jobs if job["sent"] and not job["done"]]
        if self.keep or not undone:
            return
        until = self.cleaning()
        for job in undone:  # a Ctrl-C meanwhile: the others are terminated first
            job["done"] = True
            _undo(job, "terminated", job["id"],
                  lambda job=job: find_landed(lambda: find_job(batch, self.queue, job["name"]), self.sleep, until),
                  lambda job_id: self.clients["cleanup"].terminate_job(jobId=job_id, reason=reason),
                  lambda error, job=job: f"could not terminate {job['name']} ({describe_error(error)}): "
                                         f"terminate it with `aws batch terminate-job --job-id "
                                         f"{job['id'] or job['name']} --reason cleanup`", self.progress, held,
                  until)
        terminated = sum(bool(job.get("terminated")) for job in self.jobs)
        self.result.job["terminated"] = terminated if len(self.jobs) > 1 else bool(terminated)
        held.raise_held()

    def release(self) -> None:
        """Deregister the probe's job definition if it exists or may exist (a register sent, its answer lost),
        unless a job left running by ``keep`` may still need it; once, raising nothing but a Ctrl-C."""
        probe, name, family, batch = self.probe, self.name, self.family, self.clients["batch"]
        if probe["done"] or not probe["sent"]:
            return
        if self.keep and any(job["sent"] and not job["done"] for job in self.jobs):
            print(f"gpuready: {name}: kept, and {probe['arn'] or family} that it runs from: once it ends, "
                  f"`aws batch deregister-job-definition --job-definition {probe['arn'] or family}`",
                  file=self.progress)
            return
        probe["done"], held, until = True, HeldInterrupt(), self.cleaning()
        _undo(self.result.job, "probe_definition_deregistered", probe["arn"],
              lambda: find_landed(lambda: find_definition(batch, family, name), self.sleep, until),
              lambda arn: self.clients["cleanup"].deregister_job_definition(jobDefinition=arn),
              lambda error: f"could not deregister {probe['arn'] or family} ({describe_error(error)}): deregister "
                            f"it with `aws batch deregister-job-definition --job-definition "
                            f"{probe['arn'] or family + ':<revision>'}`", self.progress, held, until)
        held.raise_held()


def describe_definition(batch: Any, arn: str) -> dict[str, Any]:
    """The stack's job definition, as ``DescribeJobDefinitions`` returns it."""
    found = batch.describe_job_definitions(jobDefinitions=[arn]).get("jobDefinitions") or []
    if not found:
        raise UserError(f"job definition {arn} does not exist in {batch.meta.region_name}: are these the outputs "
                        "of a stack deployed with these AWS credentials, in this region?")
    return found[0]


def _undo(record: dict[str, Any], key: str, known: Optional[str], look: Callable[[], Optional[str]],
          undo: Callable[[str], Any], failed: Callable[[BaseException], str], progress: Any,
          held: HeldInterrupt, until: float = float("inf")) -> None:
    """``undo`` what ``known`` names or else what ``look`` finds, retried on any error for :data:`CLEANUP_GRACE`
    seconds, and not past ``until`` (TerminateJob and DeregisterJobDefinition are idempotent, and a job left
    running bills a GPU instance); ``record[key]`` says whether something was undone. A failure is printed
    (``gpuready: `` and ``failed(error)``), never raised; a Ctrl-C meanwhile goes to ``held``, for the caller to
    raise once all is undone."""
    try:
        target = known or look()
        if target:
            persist(lambda: undo(target), backoff=CLEANUP_BACKOFF,
                    deadline=min(time.monotonic() + CLEANUP_GRACE, until), held=held)
        record[key] = bool(target)
    except BaseException as error:  # noqa: BLE001 (reported: the cleanup must not hide the verdict)
        print(f"gpuready: {failed(error)}", file=progress)
        held.note(error)


WAITING = ("RUNNABLE", "STARTING")
DESCRIBE_LIMIT = 100
"""Job ids one ``DescribeJobs`` call takes (Batch's API limit)."""


class Poller:
    """``DescribeJobs`` for many jobs: :data:`DESCRIBE_LIMIT` ids a call (:func:`wait`: a job and its nodes; a
    sweep's jobs, only those not yet finished: :meth:`follow`).

    ``calls`` counts the calls made, ``rounds`` the rounds, ``polled`` the job ids asked about over all rounds:
    ``calls / polled`` is the describe calls per job per poll round."""

    def __init__(self, client: Any, limit: int = DESCRIBE_LIMIT) -> None:
        self.client, self.limit = client, limit
        self.calls = self.rounds = self.polled = 0
        self.error: Optional[Exception] = None
        """The passing fault of the last round's failed call, or None when every call of the round answered."""

    def poll(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The jobs among ``ids`` Batch described this round, by id. A call failing on a passing fault leaves its
        jobs out (asked again next round, ``error`` says why); any other error is raised."""
        ids = list(dict.fromkeys(ids))
        self.rounds, self.polled, self.error = self.rounds + 1, self.polled + len(ids), None
        found: dict[str, dict[str, Any]] = {}
        for start in range(0, len(ids), self.limit):
            self.calls += 1
            try:
                jobs = self.client.describe_jobs(jobs=ids[start:start + self.limit]).get("jobs") or []
            except Exception as error:  # noqa: BLE001 (a passing fault: those jobs are asked again next round)
                if not _retryable(error):
                    raise
                self.error = error
                continue
            found.update((j["jobId"], j) for j in jobs)
        return found

    def follow(self, ids: list[str], *, timeout: float, poll: float, sleep: Callable[[float], None],
               changed: Callable[[dict[str, dict[str, Any]], float], None] = lambda jobs, waited: None
               ) -> dict[str, dict[str, Any]]:
        """Poll ``ids`` until every job is SUCCEEDED or FAILED, or ``timeout`` seconds pass: the last detail seen of
        each (jobs never described are absent). ``changed(jobs, waited)`` is called when a status changed."""
        started, last, seen = time.monotonic(), {}, {}
        pending = list(ids)
        while True:
            last.update(self.poll(pending))
            waited = time.monotonic() - started
            statuses = {i: j.get("status") for i, j in last.items()}
            if statuses != seen:
                seen = statuses
                changed(last, waited)
            pending = [i for i in ids if statuses.get(i) not in TERMINAL]
            if not pending or waited >= timeout:
                return last
            sleep(min(poll, max(0.1, timeout - waited)))


def wait(result: SmokeResult, state: dict[str, Any], batch: Any,
         explain: Callable[[dict[str, Any], dict[int, dict[str, Any]]], list[str]], cleanup: Callable[[str], None], *,
         timeout: float, keep: bool, poll: float, explain_after: float, progress: Any,
         sleep: Callable[[float], None], nodes: int = 0, started: Optional[float] = None
         ) -> tuple[Optional[dict[str, Any]], dict[int, dict[str, Any]]]:
    """Poll the submitted job (``state["id"]``) until it ends: its last description, and with ``nodes`` (a
    multi-node job) each node's (``jobId#i``, by index), described with it from the time it runs (the nodes exist
    from then), in one ``DescribeJobs`` call per 100 ids. Status changes go to ``progress``; a job (or node) in
    RUNNABLE or STARTING for ``explain_after`` seconds is explained once (``explain(job, nodes)``). After
    ``timeout``, the job is terminated (``cleanup``), a failing ``job_finished`` check added, and None returned
    with what was last seen of the nodes. ``timeout`` counts from ``started`` (:func:`time.monotonic`; default:
    now)."""
    job_id, name, poller = state["id"], result.job["name"], Poller(batch)
    status, job, explained, failures = None, {}, False, 0
    started = time.monotonic() if started is None else started
    seen: dict[int, dict[str, Any]] = {}
    while True:
        children = nodes and status in ("RUNNING", *TERMINAL)
        ids = [job_id] + ([f"{job_id}#{i}" for i in range(nodes)] if children else [])
        described = list(poller.poll(ids).values())
        unread = poller.error  # why the last DescribeJobs failed, if it did
        if unread is None:
            failures = 0
        elif time.monotonic() - started < timeout:  # a passing fault is retried with backoff, until the timeout
            failures += 1
            sleep(min(Backoff(0.25, poll).pause(failures), max(0.1, timeout - (time.monotonic() - started))))
            continue
        else:
            described = []  # past the deadline: the timeout's verdict, on the last status seen
        waited = time.monotonic() - started
        job = next((j for j in described if j.get("jobId") == job_id), job)
        for node in described:
            index = _node_index(node, job_id)
            if index is not None:
                if node.get("status") != seen.get(index, {}).get("status"):
                    print(f"gpuready: {name}#{index}: {node.get('status')} after {waited:.0f} s", file=progress)
                seen[index] = node
        if job.get("status") != status:
            status = job.get("status")
            result.job["status"] = status
            print(f"gpuready: {name}: {status} after {waited:.0f} s", file=progress)
            if nodes and status in TERMINAL and not children:
                continue  # the nodes, once more, with the job's end
        if status in TERMINAL:
            state["done"] = True
            return job, seen
        stuck = status in WAITING or any(n.get("status") in WAITING for n in seen.values())
        if stuck and waited >= explain_after and not explained:
            explained = True
            result.diagnosis = explain(job, seen)
            for line in result.diagnosis:
                print(f"gpuready: {name}: {line}", file=progress)
        if waited >= timeout:
            cleanup("gpuready smoke: timed out")  # before the diagnosis, which may fail
            result.checks.append(Check("job_finished", core.FAIL, status, "SUCCEEDED",
                                       f"not finished after {timeout:g} s" + ("" if keep else "; terminated")
                                       + (f"; its status could not be read: {describe_error(unread)}" if unread
                                          else "")))
            if not result.diagnosis and stuck:
                result.diagnosis = explain(job, seen)
            return None, seen
        sleep(min(poll, max(0.1, timeout - waited)))


def _node_index(job: dict[str, Any], parent: str) -> Optional[int]:
    """The node index of ``job`` when it is a node (``parent#i``) of the multi-node job ``parent``."""
    head, _, index = (job.get("jobId") or "").partition("#")
    return int(index) if head == parent and index.isdigit() else None
