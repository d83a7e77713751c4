"""Run a Pulumi Python program under Pulumi's mock runtime and record every resource it declares.

No Pulumi CLI, engine, provider plugin or credential is involved: the program's own code runs, and each resource
registration is answered by :class:`PlanMocks`, which echoes the inputs back with placeholder ids and ARNs (and the
outputs each reader stands in), and each invoke by its offline answer (a platform's ``answers``; any other invoke answers ``{}``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import runpy
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

import pulumi
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import rpc, settings
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _ensure_event_loop, _sync_await

from gpuready_components import platforms
from gpuready_components.errors import ConfigError

from ..rendering import RenderedResource, Rendering
from ..resources import by_token
from ..resources.base import Site, ec2_id
from .secrets import mask, texts

ACCOUNT_ID = "123456789012"
"""AWS's documented example account, used in placeholder ARNs."""
AZURE_CLIENT = {"clientId": "04b07795-8ddb-461a-bbee-02f9e1bf7b46", "objectId": "00000000-0000-4000-8000-000000000001",
                "subscriptionId": "00000000-0000-4000-8000-000000000000",
                "tenantId": "00000000-0000-4000-8000-00000000000a"}
"""What ``azure-native:authorization:getClientConfig`` answers offline: a user signed in with the Azure CLI (its
client id) in placeholder subscription and tenant."""


def mock_id(type_: str, name: str) -> str:
    """The id a resource gets offline: EC2's shape for EC2 resources, ``NAME-id`` otherwise."""
    reader = by_token().get(type_)
    if reader is None or not reader.ID_PREFIX:
        return f"{name}-id"
    return ec2_id(reader.ID_PREFIX, name)


ARN_RESOURCES = {
    "batch/computeEnvironment": "compute-environment/{}", "batch/jobQueue": "job-queue/{}",
    "batch/jobDefinition": "job-definition/{}:1", "batch/schedulingPolicy": "scheduling-policy/{}",
    "iam/instanceProfile": "instance-profile/{}", "iam/openIdConnectProvider": "oidc-provider/{}",
    "eks/nodeGroup": "nodegroup/{}", "eks/podIdentityAssociation": "podidentityassociation/{}",
    "cloudwatch/logGroup": "log-group:{}", "ec2/launchTemplate": "launch-template/{}",
    "ec2/securityGroup": "security-group/{}", "ec2/internetGateway": "internet-gateway/{}",
    "ec2/natGateway": "natgateway/{}", "ec2/routeTable": "route-table/{}", "ec2/placementGroup": "placement-group/{}",
    "ec2/eip": "elastic-ip/{}",
}
"""Pulumi's ``service/resource`` -> the resource part of its ARN as the service writes it (botocore's models, moto),
the name in ``{}`` (a job definition's first revision: ``:1``), where it is not Pulumi's own name; any other:
``resource/{}``."""
ARN_SERVICES = {"cloudwatch": "logs"}
"""Pulumi's module -> the service an ARN names, where they differ (a log group's ARN is ``arn:aws:logs:...``)."""
GLOBAL_SERVICES = frozenset({"iam"})
"""Services whose ARNs name no region (``arn:aws:iam::ACCOUNT:role/NAME``)."""


def _arn(type_: str, name: str, region: str) -> str:
    """The ARN of ``name`` of the resource type ``type_`` as its service gives it:
    ``aws:batch/jobQueue:JobQueue`` -> ``arn:aws:batch:REGION:ACCOUNT:job-queue/NAME``, ``aws:iam/role:Role`` ->
    ``arn:aws:iam::ACCOUNT:role/NAME``."""
    module, _, _ = type_.partition(":")[2].partition(":")
    service, _, kind = module.partition("/")
    resource = ARN_RESOURCES.get(module, f"{kind}/{{}}").format(name)
    where = "" if service in GLOBAL_SERVICES else region
    return f"arn:aws:{ARN_SERVICES.get(service, service)}:{where}:{ACCOUNT_ID}:{resource}"


class PlanMocks(pulumi.runtime.Mocks):
    """Answers registrations with the inputs plus the few outputs programs read back: ids, names, ARNs, and an EKS
    cluster's endpoint, certificate and OIDC issuer.

    With ``preview`` it answers as a first ``pulumi preview`` does: the inputs and the name only, so that ids, ARNs
    and every other output the cloud computes are unknown, and so is every input built from them.
    """

    def __init__(self, config: dict[str, str], preview: bool = False) -> None:
        self.preview = preview
        self.region = config.get("aws:region", "us-east-1")
        self.gcp_project = config.get("gcp:project", "example-project")
        self.azure_location = config.get("azure-native:location", "eastus")
        self.site = Site(self.region, ACCOUNT_ID, self.gcp_project, AZURE_CLIENT["subscriptionId"])

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[Optional[str], dict]:
        state = dict(args.inputs)
        state.setdefault("name", args.name)
        if self.preview:
            return None, state
        if args.typ.startswith("aws:"):
            state.setdefault("arn", _arn(args.typ, state["name"], self.region))
        reader = by_token().get(args.typ)
        id_, computed = reader.stand_in(args.name, state, self.site) if reader else (None, {})
        for key, value in computed.items():
            if isinstance(value, dict) and isinstance(state.get(key), dict):  # computed fields of an input block,
                state[key] = {**state[key], **value}  # and those the cloud answers in another shape than they went in
            state.setdefault(key, value)
        return id_ or mock_id(args.typ, args.name), state

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict:
        # A bare dict: the mock monitor rejects a (result, None) pair.
        answer = platforms.collect("answers", lambda p: p.answers).get(args.token)
        return answer(args.args, self) if answer else {}


def _unwrap_secrets(value: Any) -> tuple[Any, bool]:
    """``value`` with every secret replaced by its plain value, and whether there was one."""
    if rpc.is_rpc_secret(value):
        return _unwrap_secrets(rpc.unwrap_rpc_secret(value))[0], True
    if isinstance(value, dict):
        pairs = {k: _unwrap_secrets(v) for k, v in value.items()}
        return {k: v for k, (v, _) in pairs.items()}, any(s for _, s in pairs.values())
    if isinstance(value, list):
        pairs = [_unwrap_secrets(v) for v in value]
        return [v for v, _ in pairs], any(s for _, s in pairs)
    return value, False


class _RecordingMonitor(pulumi_mocks.MockMonitor):
    """The mock monitor, also keeping each registration's parent and inputs."""

    def __init__(self, mocks: pulumi.runtime.Mocks) -> None:
        super().__init__(mocks)
        self.records: list[RenderedResource] = []
        self.secrets: set[str] = set()
        self._lock = threading.Lock()

    def RegisterResource(self, request):  # noqa: N802 (gRPC method name)
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            inputs, masked, secret, found = {}, {}, set(), set()
            for key, value in rpc.deserialize_properties(request.object).items():
                inputs[key], is_secret = _unwrap_secrets(value)
                masked[key] = mask(value, found)
                if is_secret:
                    secret.add(key)
            record = RenderedResource(
                urn=response.urn, type=request.type, name=request.name, parent=request.parent,
                custom=bool(request.custom), remote=bool(request.remote), inputs=inputs, secret_inputs=frozenset(secret),
                masked_inputs=masked,
                property_dependencies={k: tuple(v.urns) for k, v in request.propertyDependencies.items() if v.urns},
                outputs=dict(self.resources[response.urn].state), provider=request.provider,
                dependencies=tuple(request.dependencies))
            with self._lock:
                self.records.append(record)
                self.secrets |= found
        return response


def _quiet_leftover_loops(unraisable) -> None:
    """Drop the error an abandoned event loop raises when it is collected at exit, pass on everything else.

    Pulumi's mock monitor gives each worker thread an event loop it never closes; collected at interpreter exit after
    its socket, such a loop prints a harmless ``ValueError`` traceback from ``BaseEventLoop.__del__``.
    """
    obj = getattr(unraisable.object, "__qualname__", "")
    if unraisable.exc_type is ValueError and obj == "BaseEventLoop.__del__":
        return
    _default_unraisablehook(unraisable)


_default_unraisablehook = sys.unraisablehook


def _config_error(error: BaseException) -> Optional[ConfigError]:
    """The ``ConfigError`` behind ``error``, or None: followed through causes, and through the context of Pulumi's
    own wrappers only ("While processing ..." per resource and input an output's failed apply reached, their causes
    and contexts sometimes in a loop), so that another error raised while handling a ``ConfigError`` stays itself."""
    seen: set[int] = set()
    stack = [error]
    while stack:
        found = stack.pop()
        if found is None or id(found) in seen:
            continue
        if isinstance(found, ConfigError):
            return found
        seen.add(id(found))
        stack.append(found.__cause__)
        if type(found) is ValueError and str(found).startswith("While processing "):
            stack.append(found.__context__)
    return None


def _forget_the_failed_run() -> None:
    """Cancel what a failed program left running and clear the error Pulumi's runtime keeps, so that the next
    ``run`` in this process starts clean (a deployment's process ends with its program; a test's does not)."""
    manager = settings._get_rpc_manager()
    for pending in [*manager.rpcs, *settings.SETTINGS.outputs]:
        if isinstance(pending, asyncio.Future):
            pending.cancel()
    manager.clear()
    settings.SETTINGS.outputs.clear()


def _quiet_config_errors(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The event loop's handler: drop the "exception was never retrieved" report of each other resource a failed
    input check reached (``run`` raises the check's error once), pass on everything else."""
    error = context.get("exception")
    if error is not None and _config_error(error) is not None:
        return
    loop.default_exception_handler(context)


@contextlib.contextmanager
def _program_context(program_dir: Path):
    cwd, path = os.getcwd(), list(sys.path)
    os.chdir(program_dir)
    try:
        yield
    finally:
        os.chdir(cwd)
        sys.path[:] = path


def run(program: Callable[[], object], *, project: str, stack: str, config: dict[str, str],
        preview: bool = False) -> Rendering:
    """Run ``program`` under Pulumi's mock runtime with ``config``; return every resource it declared.

    ``preview`` runs it as a first ``pulumi preview``: outputs the cloud computes are unknown
    (:class:`pulumi.output.Unknown` in the recorded inputs). Exceptions the program raises (for example a component's
    ``ConfigError``) propagate unchanged; so does a ``ConfigError`` raised when an output resolves (an input that is
    another resource's output, checked then), out of the errors Pulumi wraps it in.

    The instance types a stack program declares (``gpuready:extraInstanceTypes``) are known only to the component
    it hands them to: what reads the rendering knows them from the stamps on the resources
    (``catalog.stamp``), as the policy pack in its own process does.
    """
    sys.unraisablehook = _quiet_leftover_loops
    mocks = PlanMocks(config, preview)
    monitor = _RecordingMonitor(mocks)
    settings.set_root_resource(None)  # set_mocks reuses an existing root stack, and with it earlier exports
    pulumi.runtime.set_mocks(mocks, project=project, stack=stack, preview=preview, monitor=monitor)
    pulumi.runtime.set_all_config(dict(config), [])
    # Left in place: the futures a failed check reached report "exception was never retrieved" when collected,
    # which may be long after this run (and, run by the collector inside other code, must stay quiet).
    _ensure_event_loop().set_exception_handler(_quiet_config_errors)
    try:
        _sync_await(run_pulumi_func(program))
    except Exception as e:  # noqa: BLE001 (re-raised: a component's error as it is, anything else unchanged)
        _forget_the_failed_run()
        config_error = _config_error(e)
        if config_error is None:
            raise
        raise config_error from None
    root = pulumi.runtime.get_root_resource()
    outputs, secret_outputs = {}, set()
    for key, value in (getattr(root, "outputs", None) or {}).items():
        output = pulumi.Output.from_input(value)
        outputs[key] = _sync_await(output.future())
        if _sync_await(output.is_secret()):
            secret_outputs.add(key)
            monitor.secrets.update(texts(outputs[key]))
    resources = sorted(monitor.records, key=lambda r: r.urn)
    return Rendering(project=project, stack=stack, config=dict(config), resources=resources, outputs=outputs,
                     secret_outputs=frozenset(secret_outputs), secrets=frozenset(monitor.secrets))


def render(program_dir: Path, project: str, stack: str, config: dict[str, str]) -> Rendering:
    """Run the Pulumi program in ``program_dir`` (a directory with ``__main__.py``), as ``pulumi up`` would."""
    with _program_context(program_dir):
        return run(lambda: runpy.run_path(str(program_dir), run_name="__main__"), project=project, stack=stack,
                   config=config)
