"""The AWS Batch target on several nodes: one multi-node parallel (gang) job on the stack's multi-node queue.

Every node runs the probe and prints its report; the main node then runs the NCCL all-reduce across all GPUs of all
nodes (:mod:`gpuready.probe.nccl`, started by :func:`.batch_probe.launcher_command`). The launcher travels in a job
definition of the run's own (``<stack multi-node definition>-gpuready-probe``), registered, submitted, followed and
undone by the same :class:`.batch.Submission` as the single-node target: never two jobs, and the job terminated
(its nodes with it) and the definition deregistered on every way out. The nodes (``jobId#0``...) are followed from
the time the job runs, in one ``DescribeJobs`` call with it, and explained when they wait.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Callable, Mapping, Optional, TextIO

from gpuready_components import ecs_fit as fit

from ..errors import UserError
from ..probe import Check, ProbeReport, core, nccl
from ..resources.aws import BatchComputeEnvironment
from . import batch, batch_probe, diagnose, gang
from .outputs import StackOutputs
from .result import SmokeResult
from .target import Request, drive

OUTPUTS = ("multiNodeJobQueueArn", "multiNodeJobDefinitionArn", "multiNodeGpusPerNode", "multiNodeEfaInterfaces",
           "multiNodeInstanceTypes")
"""The stack outputs a multi-node run reads (exported with ``gpuready:multiNode``)."""


class BatchGangTarget(batch.BatchRun):
    """The probe on ``--nodes`` nodes of the stack's multi-node queue, as one multi-node parallel job, and NCCL across
    them. Each node asks for the stack's ``multiNodeGpusPerNode`` GPUs (``--gpus``, when given, must be that
    number). Progress goes to ``progress`` (default: stderr); nodes that wait are explained after
    ``explain_after`` seconds; the logs are read for up to ``log_wait`` seconds."""

    def __init__(self, outputs: Mapping[str, Any], request: Request, *, poll: float = 5.0,
                 explain_after: float = 300.0, log_wait: float = 60.0, region: Optional[str] = None,
                 progress: Optional[TextIO] = None, sleep: Callable[[float], None] = time.sleep) -> None:
        super().__init__(outputs, request)
        if request.nodes is None:
            raise ValueError("a gang job needs Request.nodes")
        self.nodes = request.nodes
        self.poll, self.explain_after, self.log_wait, self.region = poll, explain_after, log_wait, region
        self.progress, self.sleep = progress or sys.stderr, sleep
        self.job: Optional[dict[str, Any]] = None
        """The job's last description, once it ended."""

    def preflight(self) -> bool:
        nodes, gpus = self.nodes, self.request.gpus
        self.stack = stack = StackOutputs(self.outputs, batch.batch_platforms())
        missing = [key for key in OUTPUTS if stack.get(key) is None]
        if missing:
            raise UserError(f"{stack.source} lack {', '.join(missing)}: the stack has no multi-node queue. Set "
                            "gpuready:multiNode (e.g. `gpuready:multiNode: {nodes: 2}`) in its config, run "
                            "`pulumi up`, then read the outputs again")
        queue, definition = stack["multiNodeJobQueueArn"], stack["multiNodeJobDefinitionArn"]
        queue, share = self.team_queue(stack, queue, gang=True)  # a team's gang: its fair-share multi-node queue
        per_node, efa = int(stack["multiNodeGpusPerNode"]), int(stack["multiNodeEfaInterfaces"])
        types = list(stack["multiNodeInstanceTypes"])
        if gpus is not None and gpus != per_node:
            raise UserError(f"--gpus {gpus}: each node of a multi-node job asks for the stack's "
                            f"multiNodeGpusPerNode ({per_node}), every GPU of its instance: leave --gpus out")
        self.transport = transport = "efa" if efa > 0 else "socket"
        self.instance_type = types[0] if len(types) == 1 else None  # several: the bandwidth has no verdict
        self.aws = aws = batch.clients(batch.queue_region(queue, self.region), self.request.timeout)
        self.result = SmokeResult(target="batch", title=f"Smoke test on {nodes} nodes",
                                  job={"queue": queue, "definition": definition, "nodes_asked": nodes,
                                       "gpus_per_node": per_node, "transport_expected": transport})
        self.envs = batch.queue_environments(aws["batch"], queue)
        stack_definition = batch.describe_definition(aws["batch"], definition)
        ranges = (stack_definition.get("nodeProperties") or {}).get("nodeRangeProperties") or [{}]
        want = diagnose.needs(ranges[0].get("container") or {})
        why = unplaceable(want, nodes, self.envs)
        if why:  # never submit a job that can only wait
            batch.not_placeable(self.result, f"{nodes} x ({want['GPU']} GPU, {want['VCPU']} vCPU, "
                                f"{want['MEMORY']} MiB)", why)
            return False
        name, tags = batch.run_name()
        argv = ["launch", "--nodes", str(nodes), "--gpus-per-node", str(per_node), "--transport", transport,
                *(["--instance-type", self.instance_type] if self.instance_type else []),
                *(["--full"] if self.request.full else []), *batch_probe.launcher_limits(self.request.timeout)]
        registration = batch_probe.multinode_definition(stack_definition, nodes=nodes, argv=argv, tags=tags)
        self.main = int(registration["nodeProperties"].get("mainNode") or 0)
        self.prepare(queue, name, registration, {
            "jobName": name, "jobQueue": queue, "nodeOverrides": {"numNodes": nodes},
            "timeout": batch.attempt_timeout(self.request.timeout), "tags": tags, **share})
        return True

    def follow(self) -> bool:
        container = self.registration["nodeProperties"]["nodeRangeProperties"][0].get("container") or {}

        def explain(job: dict[str, Any], seen: dict[int, dict[str, Any]]) -> list[str]:
            return _explain(self.aws["batch"], job, seen, self.nodes, container,
                            lambda: (self.aws["ec2"](), self.aws["ecr"]()))
        self.job, seen = batch.wait(self.result, self.submission.state, self.aws["poll"], explain,
                                    self.submission.cleanup, timeout=self.request.timeout, keep=self.request.keep,
                                    poll=self.poll, explain_after=self.explain_after, progress=self.progress,
                                    sleep=self.sleep, nodes=self.nodes, started=self.waiting())
        self.result.job["nodes"] = [_node(i, seen.get(i), self.stack) for i in range(self.nodes)]
        return self.job is not None

    def collect(self) -> None:
        _verdicts(self.result, self.job, self.nodes, self.main, self.aws["logs"], self.transport, self.instance_type,
                  poll=self.poll, log_wait=self.log_wait, sleep=self.sleep)
        if any(c.name.startswith("nccl_") and c.verdict == core.FAIL for c in self.result.checks):
            self.result.diagnosis.extend(closed_default_groups(self.aws["ec2"](), self.envs))


def run(outputs: dict[str, Any], *, nodes: int, gpus: Optional[int] = None, timeout: float = 1800,
        keep: bool = False, full: bool = False, poll: float = 5.0, explain_after: float = 300.0,
        log_wait: float = 60.0, region: Optional[str] = None, progress: Optional[TextIO] = None,
        sleep: Callable[[float], None] = time.sleep) -> SmokeResult:
    """Run the probe on ``nodes`` nodes of the stack's multi-node queue, and NCCL across them
    (:class:`BatchGangTarget`); what it waits for is printed to ``progress`` (default: stderr)."""
    return drive(BatchGangTarget(outputs, Request(timeout=timeout, gpus=gpus, nodes=nodes, keep=keep, full=full),
                                 poll=poll, explain_after=explain_after, log_wait=log_wait, region=region,
                                 progress=progress, sleep=sleep))


def closed_default_groups(ec2: Any, envs: list[dict[str, Any]]) -> list[str]:
    """Why nodes may not reach each other: Batch gives each node's container a network interface of its own
    (awsvpc) in the compute environment's security groups, or in the VPC's default group when the environment names
    none, as it must when its launch template has network interfaces (EFA). One line for each such environment
    whose VPC's default group lets no traffic in from itself."""
    from botocore.exceptions import BotoCoreError, ClientError

    lines = []
    for env in envs:
        resources = env.get("computeResources") or {}
        if not resources.get("subnets"):
            continue
        try:
            if resources.get("securityGroupIds") and not _template_interfaces(ec2, resources.get("launchTemplate")):
                continue
            (subnet,) = ec2.describe_subnets(SubnetIds=resources["subnets"][:1])["Subnets"]
            groups = ec2.describe_security_groups(Filters=[{"Name": "vpc-id", "Values": [subnet["VpcId"]]},
                                                           {"Name": "group-name", "Values": ["default"]}])
        except (BotoCoreError, ClientError) as error:
            lines.append(f"{env.get('computeEnvironmentName')}: could not read its VPC's default security group, "
                         f"which its nodes' interfaces are in ({error})")
            continue
        for group in groups["SecurityGroups"]:
            if not any(rule.get("IpProtocol") == "-1" and (
                    any(pair.get("GroupId") == group["GroupId"] for pair in rule.get("UserIdGroupPairs") or ())
                    or any(r.get("CidrIp") == "0.0.0.0/0" for r in rule.get("IpRanges") or ()))
                    for rule in group.get("IpPermissions") or ()):
                lines.append(
                    f"{env.get('computeEnvironmentName')} names no security group, so Batch puts each node's network "
                    f"interface in its VPC's default group {group['GroupId']}, which lets no traffic in from itself: "
                    "the nodes cannot reach the main node's rendezvous. Add an inbound rule for all traffic from "
                    f"{group['GroupId']} itself (AWS's default), or ask your admin why it was removed")
    return lines


def _template_interfaces(ec2: Any, template: Optional[dict[str, Any]]) -> bool:
    """Whether the compute environment's launch template (its ``launchTemplate``) sets network interfaces."""
    if not template:
        return False
    key = {"LaunchTemplateId": template["launchTemplateId"]} if template.get("launchTemplateId") else \
        {"LaunchTemplateName": template["launchTemplateName"]}
    versions = ec2.describe_launch_template_versions(**key, Versions=[template.get("version") or "$Default"])
    return any(v.get("LaunchTemplateData", {}).get("NetworkInterfaces") for v in versions["LaunchTemplateVersions"])


def unplaceable(want: dict[str, int], nodes: int, envs: list[dict]) -> Optional[str]:
    """Why the queue's compute environments (``envs``) can never start ``nodes`` nodes each needing ``want``
    (:func:`.diagnose.needs`): no instance type holds one node, or no environment's maxvCpus holds ``nodes`` of
    the smallest type that does (each node is an instance of its own); None when they can, or when only types
    outside the catalog are offered."""
    why = diagnose.unplaceable(want, envs)
    if why:
        return why
    node, fitting = fit.Needs(want["GPU"], want["VCPU"], want["MEMORY"]), []
    for env in envs:
        pool = BatchComputeEnvironment(env)
        if pool.unknown_types:
            return None  # a type with no GPU facts (neither catalogued nor declared) may hold more
        holding = fit.holding(node, pool.gpu_rows)
        if not holding:
            continue
        smallest = min(holding, key=lambda i: i.vcpus)
        limit = pool.vcpus("max")
        if nodes * smallest.vcpus <= limit:
            return None
        fitting.append(f"{env.get('computeEnvironmentName')}: maxvCpus {limit}, {nodes} x {smallest.name} need "
                       f"{nodes * smallest.vcpus}")
    return (f"{nodes} nodes, each an instance of its own, do not fit the queue's compute environments "
            f"({'; '.join(fitting) or 'none holds a node'}): the job would stay RUNNABLE forever. Raise the "
            "multi-node compute environment's maxvCpus (gpuready:maxVcpus, then `pulumi up`) or ask for fewer "
            "nodes")


def _explain(client: Any, job: dict[str, Any], seen: dict[int, dict[str, Any]], nodes: int,
             container: dict[str, Any], diagnosis_clients: Callable[[], tuple[Any, Any]]) -> list[str]:
    """Why the job, or some of its nodes, waits: the job's own diagnosis while it waits as a whole (for what one
    node's ``container`` asks), else why its nodes wait for each other, with the first waiting node's diagnosis."""
    ec2, ecr = diagnosis_clients()
    if job.get("status") in batch.WAITING:  # a multi-node job's description holds no container of its own
        return diagnose.explain(client, {**job, "container": {**container, **(job.get("container") or {})}}, ec2,
                                ecr)
    waiting = {i: n for i, n in sorted(seen.items()) if n.get("status") in batch.WAITING}
    if not waiting:
        return []
    names = ", ".join(f"node{i} ({n.get('status')})" for i, n in waiting.items())
    first, node = next(iter(waiting.items()))
    return [f"{names} still wait while the job runs: Batch starts a multi-node job's {nodes} nodes as {nodes} "
            "instances in its compute environment's one subnet and placement group, and the nodes started wait for "
            "the others; EC2 may not have that many of these types free in one zone at once "
            "(INSUFFICIENT_INSTANCE_CAPACITY), or running work leaves too few vCPUs under maxvCpus"] + \
        [f"node{first}: {line}" for line in diagnose.explain(client, {"jobQueue": job.get("jobQueue"), **node,
                                                                       "container": {**container, **(
                                                                           node.get("container") or {})}}, ec2, ecr)]


def _node(index: int, detail: Optional[dict[str, Any]], stack: StackOutputs) -> dict[str, Any]:
    """What ``result.job["nodes"]`` says of a node: index, id, status, container instance, log stream (host: from
    its report)."""
    detail = detail or {}
    group, stream = batch.log_location(detail, stack) if detail else (None, None)
    container = detail.get("container") or {}
    instance = container.get("containerInstanceArn") or ""
    return {"index": index, "id": detail.get("jobId"), "status": detail.get("status"), "host": None,
            "container_instance": instance.rsplit("/", 1)[-1] or None,
            "log_group": group, "log_stream": stream, "exit_code": container.get("exitCode"),
            "reason": detail.get("statusReason") or container.get("reason")}


def _verdicts(result: SmokeResult, job: dict[str, Any], nodes: int, main: int, logs: Any, transport: str,
              instance_type: Optional[str], *, poll: float, log_wait: float, sleep: Callable[[float], None]) -> None:
    """The target's checks (the job, its nodes, their hosts), each node's probe checks (``node{i}.``), then the
    NCCL verdicts on the main node's report."""
    status, records = job.get("status"), result.job["nodes"]
    exit_code = (job.get("container") or {}).get("exitCode")
    result.checks.append(Check("job_status", core.PASS if status == "SUCCEEDED" else core.FAIL, status, "SUCCEEDED",
                               "" if status == "SUCCEEDED" else f"{job.get('statusReason') or ''} (exit code "
                               f"{exit_code})"))
    ran = [r for r in records if r["status"] == "SUCCEEDED"]
    result.checks.append(Check("nodes_ran", core.PASS if len(ran) == nodes else core.FAIL, len(ran), nodes, "; ".join(
        f"node{r['index']} {r['status'] or 'never started'}" + (f": {r['reason']}" if r["reason"] else "")
        + (f" (exit code {r['exit_code']})" if r["exit_code"] is not None else "")
        for r in records if r["status"] != "SUCCEEDED")))
    reports, texts = _read_reports(records, main, logs, poll=poll, log_wait=log_wait, sleep=sleep)
    for record in records:
        report = reports.get(record["index"])
        record["host"] = report.host if report else None
    # the ECS container instance names the machine (a container's hostname is its task's, under awsvpc)
    result.checks.append(gang.distinct_hosts(
        {r["index"]: r["container_instance"] or r["host"] for r in records}, reports, nodes,
        machine="container instance", fix="Batch runs each node of a multi-node job on an instance of its own"))
    for record in records:
        result.checks.extend(gang.node_checks(record["index"], reports.get(record["index"]), (
            "the node ended without a probe report in its logs: it did not run the probe, or its logs were lost")))
    if reports.get(main):
        result.probe = reports[main]
    nccl_report = nccl.find_report(texts.get(main, ""))
    result.job["nccl"] = nccl_report
    result.checks.extend(Check(**c) for c in nccl.checks(nccl_report, nodes=nodes, expected_transport=transport,
                                                         instance_type=instance_type))


def _read_reports(records: list[dict[str, Any]], main: int, logs: Any, *, poll: float, log_wait: float,
                  sleep: Callable[[float], None]) -> tuple[dict[int, ProbeReport], dict[int, str]]:
    """Each node's probe report and log text, read from its log stream; waits up to ``log_wait`` seconds for the
    reports, the main node's NCCL report included."""
    texts = batch.read_until(
        logs, {r["index"]: (r["log_group"], r["log_stream"]) for r in records if r["log_stream"]},
        lambda index, text: core.find_report(text) is not None and (index != main or nccl.find_report(text)
                                                                    is not None),
        log_wait=log_wait, poll=poll, sleep=sleep)
    reports = {index: ProbeReport.from_json(found) for index, text in texts.items()
               if (found := core.find_report(text)) is not None}
    return reports, texts
