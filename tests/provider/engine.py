"""What the engine does with a component package's provider, done by the test: start ``provider/`` as Pulumi starts a
Python plugin (``python <plugin dir> <engine address>`` in its own process, which prints its port), and serve the
resource monitor and engine the provider calls back during Construct: a gRPC ResourceMonitor over Pulumi's own
mock monitor answered by gpuready's offline mocks (:class:`~gpuready.plan.render.PlanMocks`), as ``gpuready plan``
renders a program."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from concurrent import futures
from typing import Any, Callable, Iterator, Mapping, Optional

import grpc
import pulumi
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime import rpc
from pulumi.runtime.sync_await import _sync_await
from pulumi.runtime.proto import (engine_pb2, engine_pb2_grpc, errors_pb2, provider_pb2, provider_pb2_grpc,
                                  resource_pb2, resource_pb2_grpc, status_pb2)

from gpuready.plan.render import PlanMocks, _RecordingMonitor
from tests.conftest import ROOT, plugin_channel

PLUGIN = ROOT / "provider"
PROJECT, STACK = "gpuready", "test"
STACK_URN = f"urn:pulumi:{STACK}::{PROJECT}::pulumi:pulumi:Stack::{PROJECT}-{STACK}"
"""The stack the engine parents a program's components to; the in-process render's root has the same URN."""
CONFIG = {"aws:region": "us-east-1"}
"""What the conftest's ``render`` sets."""


def stack_urn(project: str, stack: str) -> str:
    """The URN of the root stack resource of ``project``'s ``stack``."""
    return f"urn:pulumi:{stack}::{project}::pulumi:pulumi:Stack::{project}-{stack}"


Remote = Callable[[resource_pb2.RegisterResourceRequest], resource_pb2.RegisterResourceResponse]


class Monitor(_RecordingMonitor):
    """The mock monitor gpuready plan records with, naming its own project and stack (the test's by default) whatever
    this process's Pulumi settings say.

    As the engine does, it hands a registration with ``remote`` (a multi-language component, as a generated SDK or
    the YAML language host registers it) to ``remote`` (see :func:`constructs`), and keeps the outputs a program
    registers on its stack (``stack_outputs``, as the wire carries them)."""

    def __init__(self, mocks: PlanMocks, project: str = PROJECT, stack: str = STACK) -> None:
        super().__init__(mocks)
        self.project, self.stack = project, stack
        self.remote: Optional[Remote] = None
        self.stack_outputs: dict[str, Any] = {}

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        if parent:
            type_ = parent.split("::")[2].split("$").pop() + "$" + type_
        return f"urn:pulumi:{self.stack}::{self.project}::{type_}::{name}"

    def RegisterResource(self, request):  # noqa: N802 (gRPC method name)
        if request.remote:
            if self.remote is None:
                raise RuntimeError(f"{request.type} is a remote component and no provider constructs it")
            return self.remote(request)
        return super().RegisterResource(request)

    def RegisterResourceOutputs(self, request):  # noqa: N802 (gRPC method name)
        if request.urn == stack_urn(self.project, self.stack):
            self.stack_outputs = rpc.deserialize_properties(request.outputs, keep_unknowns=True)
        return empty_pb2.Empty()


def _monitor_servicer(mock: Monitor) -> resource_pb2_grpc.ResourceMonitorServicer:
    """The ResourceMonitor service, each call answered by ``mock``'s method of the same name (which takes the same
    protobuf request)."""
    class Servicer(resource_pb2_grpc.ResourceMonitorServicer):
        def SupportsFeature(self, request, context):  # noqa: N802 (gRPC method name)
            return resource_pb2.SupportsFeatureResponse(hasSupport=mock.SupportsFeature(request).hasSupport)

    for name in dir(resource_pb2_grpc.ResourceMonitorServicer):
        if name[:1].isupper() and name != "SupportsFeature" and hasattr(mock, name):
            setattr(Servicer, name, lambda self, request, context, _call=getattr(mock, name): _call(request))
    return Servicer()


class Engine(engine_pb2_grpc.EngineServicer):
    """The engine's Log (kept, with its severity) and root-resource calls (the root a program sets, else
    ``root``)."""

    def __init__(self, root: str = STACK_URN) -> None:
        self.logs: list[str] = []
        self.errors: list[str] = []
        self.root = root

    def Log(self, request, context):  # noqa: N802 (gRPC method name)
        self.logs.append(request.message)
        if request.severity == engine_pb2.ERROR:
            self.errors.append(request.message)
        return empty_pb2.Empty()

    def GetRootResource(self, request, context):  # noqa: N802 (gRPC method name)
        return engine_pb2.GetRootResourceResponse(urn=self.root)

    def SetRootResource(self, request, context):  # noqa: N802 (gRPC method name)
        self.root = request.urn
        return engine_pb2.SetRootResourceResponse()


@contextlib.contextmanager
def callbacks(preview: bool = False, project: str = PROJECT, stack: str = STACK,
              config: Mapping[str, str] = CONFIG) -> Iterator[tuple[str, Monitor, Engine]]:
    """A gRPC server in this process with the resource monitor and the engine; yields (address, monitor, engine).
    ``preview``: the monitor answers as a first ``pulumi preview`` does (what the cloud computes is unknown);
    ``config``: the stack's (the mocks read the regions and project from it)."""
    monitor = Monitor(PlanMocks(dict(config), preview), project, stack)
    engine = Engine(stack_urn(project, stack))
    # A remote component's Construct holds a thread while the provider registers its children on others.
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=32))
    resource_pb2_grpc.add_ResourceMonitorServicer_to_server(_monitor_servicer(monitor), server)
    engine_pb2_grpc.add_EngineServicer_to_server(engine, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}", monitor, engine
    finally:
        server.stop(grace=None)


@contextlib.contextmanager
def provider(engine_address: str, env: Optional[dict[str, str]] = None) -> Iterator[
        provider_pb2_grpc.ResourceProviderStub]:
    """The plugin in a process of its own, as the Python language host runs it (``python <plugin dir> <engine>``,
    in the plugin's folder, with ``env`` or this process's environment); yields a stub on the port it prints."""
    with plugin_channel([sys.executable, "-u", str(PLUGIN), engine_address], PLUGIN, "provider", env) as channel:
        yield provider_pb2_grpc.ResourceProviderStub(channel)


@contextlib.contextmanager
def provider_in_thread(engine_address: str) -> Iterator[provider_pb2_grpc.ResourceProviderStub]:
    """The same server ``provider/__main__.py`` runs (Pulumi's ``ProviderServicer`` over a
    :class:`~gpuready_components.package.GpureadyProvider`, on an asyncio gRPC server), in a thread of this process;
    yields a stub on its port. The engine's calls take the same path as in the plugin's process, and what they run
    is this process's ``gpuready_components.package``, which a mutation test can see and switch."""
    from pulumi.provider.server import ProviderServicer
    from pulumi.runtime._grpc_settings import _GRPC_CHANNEL_OPTIONS

    from gpuready_components.package import GpureadyProvider

    ready: futures.Future = futures.Future()

    async def serve() -> None:
        try:
            server = grpc.aio.server(options=_GRPC_CHANNEL_OPTIONS)
            provider_pb2_grpc.add_ResourceProviderServicer_to_server(
                ProviderServicer(GpureadyProvider(), [engine_address], engine_address), server)
            port = server.add_insecure_port("127.0.0.1:0")
            await server.start()
        except BaseException as e:  # noqa: BLE001 (the provider failed to start: the test sees why)
            ready.set_exception(e)
            return
        done = asyncio.Event()
        ready.set_result((port, asyncio.get_running_loop(), done))
        await done.wait()
        await server.stop(grace=None)

    thread = threading.Thread(target=asyncio.run, args=(serve(),), name="provider", daemon=True)
    thread.start()
    port, loop, done = ready.result(timeout=120)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            grpc.channel_ready_future(channel).result(timeout=30)
            yield provider_pb2_grpc.ResourceProviderStub(channel)
    finally:
        loop.call_soon_threadsafe(done.set)
        thread.join(timeout=30)


def construct(stub: provider_pb2_grpc.ResourceProviderStub, monitor_address: str, token: str, name: str,
              inputs: dict[str, Any], preview: bool = False,
              dependencies: Mapping[str, list[str]] | None = None) -> dict[str, Any]:
    """Construct ``token`` as the engine does for a program's ``new Component(name, inputs)`` (a child of the stack;
    ``preview``: under ``pulumi preview``; ``dependencies``: input -> URNs of the resources its value came from, as
    for ``subnetIds: [subnet.id]``); returns its URN and the outputs it answered, deserialized (unknowns kept)."""
    struct = struct_pb2.Struct()
    struct.update(inputs)
    depends = {key: provider_pb2.ConstructRequest.PropertyDependencies(urns=urns)
               for key, urns in (dependencies or {}).items()}
    response = stub.Construct(provider_pb2.ConstructRequest(
        project=PROJECT, stack=STACK, config=CONFIG, dryRun=preview, parallel=8, monitorEndpoint=monitor_address,
        type=token, name=name, parent=STACK_URN, inputs=struct, inputDependencies=depends,
        organization="organization"), timeout=300)
    return {"urn": response.urn, "state": rpc.deserialize_properties(response.state, keep_unknowns=True)}


def constructs(monitor: Monitor, stub: provider_pb2_grpc.ResourceProviderStub, monitor_address: str,
               config: Mapping[str, str], preview: bool = False) -> None:
    """Have ``monitor`` answer a remote component's registration as the engine does: a Construct of the provider
    ``stub`` (the gpuready package's, the only one served: another package's token is an error) with the
    registration's name, parent, inputs, their dependencies and options, the stack's ``config`` and ``preview``;
    the registration gets the URN and outputs it answers. A failed Construct fails the registration with the
    provider's status and message."""
    def remote(request: resource_pb2.RegisterResourceRequest) -> resource_pb2.RegisterResourceResponse:
        if not request.type.startswith("gpuready:"):
            raise RuntimeError(f"no provider serves the remote component {request.type}")
        dependencies = {key: provider_pb2.ConstructRequest.PropertyDependencies(urns=list(value.urns))
                        for key, value in request.propertyDependencies.items()}
        response = stub.Construct(provider_pb2.ConstructRequest(
            project=monitor.project, stack=monitor.stack, config=dict(config), dryRun=preview, parallel=8,
            monitorEndpoint=monitor_address, type=request.type, name=request.name, parent=request.parent,
            inputs=request.object, inputDependencies=dependencies, dependencies=list(request.dependencies),
            organization="organization", accepts_output_values=False), timeout=300)
        return resource_pb2.RegisterResourceResponse(
            urn=response.urn, object=response.state,
            propertyDependencies={key: resource_pb2.RegisterResourceResponse.PropertyDependencies(urns=list(v.urns))
                                  for key, v in response.stateDependencies.items()})

    monitor.remote = remote


def input_errors(error: grpc.RpcError) -> list[tuple[str, str]]:
    """(property path, reason) of each input error the provider's status carries, as the engine reads them."""
    found = []
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
            for detail in status.details:
                errors = errors_pb2.InputPropertiesError()
                if detail.Unpack(errors):
                    found.extend((e.property_path, e.reason) for e in errors.errors)
    return found


def resolved(value: Any) -> Any:
    """``value`` with every Output in it awaited (after a render, as ``gpuready plan`` reads the stack's outputs)."""
    return _sync_await(pulumi.Output.from_input(value).future())
