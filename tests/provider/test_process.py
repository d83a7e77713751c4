"""The component package's provider as the engine runs it: its own process, GetSchema and Construct over gRPC, the
children registered with a resource monitor served by this process (Pulumi's mock monitor, gpuready's offline mocks).

Each component is constructed from the inputs a generated SDK sends (the schema's names, only the fields set) and
must register the same resources, with the same inputs, and answer the same outputs as the Python class given the
same args in a program; a bad argument must come back with the ConfigError's own message."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Iterator

import grpc
import pytest
from google.protobuf import empty_pb2
from pulumi.output import Unknown
from pulumi.runtime import rpc
from pulumi.runtime.proto import provider_pb2

from gpuready.plan.render import run
from gpuready_components import package
from gpuready_components.aks_gpu import AksGpuClusterArgs, GpuAgentPoolArgs
from gpuready_components.aks_gpu import ClusterArgs as AksClusterArgs
from gpuready_components.batch_gpu import BatchGpuEnvironmentArgs, GpuJobArgs, MultiNodeArgs
from gpuready_components.batch_gpu.validation import check
from gpuready_components.eks_gpu import ClusterArgs as EksClusterArgs
from gpuready_components.eks_gpu import AutoscalerArgs, EksGpuClusterArgs, ExistingClusterArgs
from gpuready_components.eks_gpu import GpuNodeGroupArgs, SystemNodeGroupArgs
from gpuready_components.errors import ConfigError
from gpuready_components.gke_gpu import ClusterArgs as GkeClusterArgs
from gpuready_components.gke_gpu import GkeGpuClusterArgs, GpuNodePoolArgs
from gpuready_components.k8s_gpu import GpuSoftwareOptions, K8sGpuSoftwareArgs
from tests.conftest import render_component
from tests.provider import engine

BATCH = BatchGpuEnvironmentArgs(
    instance_types=["g6e.xlarge", "g6e.12xlarge"], subnet_ids=["subnet-aaaaaaaa", "subnet-bbbbbbbb"],
    vpc_id="vpc-11111111", capacity=["spot", "on-demand"], max_vcpus=192,
    job=GpuJobArgs(gpus=4, vcpus=16, memory_mib=120_000),
    multi_node=MultiNodeArgs(nodes=2, instance_types=["g6e.12xlarge"]), tags={"team": "ml"})
CASES = {
    "gpuready:aws:BatchGpuEnvironment": BATCH,
    "gpuready:aws:EksGpuCluster": EksGpuClusterArgs(
        subnet_ids=["subnet-aaaaaaaa", "subnet-bbbbbbbb"],
        cluster=EksClusterArgs(public_access_cidrs=["203.0.113.7/32"]),
        node_group=GpuNodeGroupArgs(instance_types=["g6e.xlarge", "g6e.12xlarge"], capacity_type="SPOT", max_size=4),
        software=GpuSoftwareOptions(time_slicing_replicas=4)),
    "gpuready:gcp:GkeGpuCluster": GkeGpuClusterArgs(
        location="us-central1", project="ml-project", node_pool=GpuNodePoolArgs(machine_type="g2-standard-8",
                                                                                max_nodes=3), cluster=GkeClusterArgs()),
    "gpuready:azure:AksGpuCluster": AksGpuClusterArgs(
        resource_group_name="ml-rg", location="eastus", node_pool=GpuAgentPoolArgs(
            vm_size="Standard_NC24ads_A100_v4", max_count=3, spot=True), cluster=AksClusterArgs()),
    "gpuready:k8s:GpuSoftware": K8sGpuSoftwareArgs(
        platform="aks", node_image="aks/driver-installed", options=GpuSoftwareOptions(time_slicing_replicas=4),
        gpu_models=(("A100", 80.0),)),
}
"""Args of each component, as a Python program would give them (the README's, and the component tests')."""


def wire(value: Any) -> Any:
    """``value`` as a generated SDK sends it: schema names, only the fields set away from their defaults."""
    if dataclasses.is_dataclass(value):
        sent = {}
        for f in dataclasses.fields(value):
            given = getattr(value, f.name)
            default = f.default if f.default is not dataclasses.MISSING else \
                f.default_factory() if f.default_factory is not dataclasses.MISSING else dataclasses.MISSING
            if given is not None and given != default:
                sent[package.camel(f.name)] = wire(given)
        return sent
    if isinstance(value, (list, tuple)):
        return [wire(v) for v in value]
    if isinstance(value, dict):
        return {k: wire(v) for k, v in value.items()}
    return value


@pytest.fixture(scope="module", params=[engine.provider, engine.provider_in_thread], ids=["own_process", "in_thread"])
def start(request) -> Any:
    """How the provider is started: in a process of its own, as the engine starts the plugin; then the same server in
    a thread of the test's process, where a mutation test sees (and switches) the provider's code."""
    return request.param


@pytest.fixture(scope="module")
def served(start) -> Iterator[tuple[Any, str, engine.Monitor]]:
    """(provider stub, monitor address, monitor): one provider and one monitor for the module."""
    with engine.callbacks() as (address, monitor, _), start(address) as stub:
        yield stub, address, monitor


def component_class(token: str) -> type:
    return next(s.component for s in package.served() if s.token == token)()


def in_python(render, token: str, name: str, args: Any):
    """The same component built by a Python program under the mock runtime: (rendering, component)."""
    return render_component(render, lambda: component_class(token)(name, args))


def test_the_provider_answers_the_checked_in_schema_over_grpc(served):
    stub, _, _ = served
    answered = json.loads(stub.GetSchema(provider_pb2.GetSchemaRequest(version=0), timeout=60).schema)
    assert answered == json.loads((engine.PLUGIN / "schema.json").read_text())
    assert sorted(answered["resources"]) == sorted(s.token for s in package.served())
    assert stub.GetPluginInfo(empty_pb2.Empty(), timeout=60).version == package.version()


@pytest.mark.parametrize("token", list(CASES))
def test_construct_registers_what_the_python_class_does_and_answers_its_outputs(served, render, token):
    stub, address, monitor = served
    name = f"p{len(monitor.records)}"  # a name of its own per test: one monitor serves the module
    before = len(monitor.records)
    answered = engine.construct(stub, address, token, name, wire(CASES[token]))
    over_grpc = monitor.records[before:]
    rendering, component = in_python(render, token, name, CASES[token])

    assert answered["urn"] == engine.resolved(component.urn) and answered["urn"].endswith(f"${token}::{name}")
    assert over_grpc[0].type == token and over_grpc[0].parent == engine.STACK_URN and not over_grpc[0].custom
    children = over_grpc[1:]
    assert children and all(r.parent.startswith("urn:pulumi:test::gpuready::") for r in children)
    assert {r.urn for r in over_grpc} == {r.urn for r in rendering.resources}
    python_inputs = {r.urn: r.inputs for r in rendering.resources}
    for record in over_grpc:
        assert record.inputs == python_inputs[record.urn], record.urn

    outputs = {k: v for k, v in answered["state"].items()}
    expected = engine.resolved(component.outputs)
    assert unsecret(outputs) == unsecret(expected)
    declared = json.loads((engine.PLUGIN / "schema.json").read_text())["resources"][token]
    assert set(outputs) <= set(declared["properties"]) and set(declared["required"]) <= set(outputs)


def unsecret(value: Any) -> Any:
    """``value`` with Pulumi's secret wrappers taken off (the kubeconfig is a secret either way)."""
    if isinstance(value, dict):
        if rpc.is_rpc_secret(value):
            return unsecret(rpc.unwrap_rpc_secret(value))
        return {k: unsecret(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unsecret(v) for v in value]
    return value


def test_a_bad_argument_comes_back_with_the_message_a_python_user_gets(served, render):
    stub, address, _ = served
    bad = dataclasses.replace(BATCH, max_vcpus=8, multi_node=None)  # the largest type, g6e.12xlarge, has 48
    with pytest.raises(ConfigError) as in_program:
        in_python(render, "gpuready:aws:BatchGpuEnvironment", "bad", bad)
    with pytest.raises(grpc.RpcError) as over_grpc:
        engine.construct(stub, address, "gpuready:aws:BatchGpuEnvironment", "bad", wire(bad))
    assert over_grpc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert over_grpc.value.details() == str(in_program.value)
    assert engine.input_errors(over_grpc.value) == [("maxVcpus", str(in_program.value))]


def test_an_input_from_another_resource_is_checked_as_a_typed_one(served, render):
    """``subnetIds: [vpc.id]`` (the VPC's id by mistake) in another language's program: under ``pulumi up`` the
    engine sends the value with the VPC it came from, the provider receives it as an output whose value is there, and
    the check refuses it at Construct, on the item, with the message a Python program typing the value gets."""
    stub, address, _ = served
    vpc_urn = f"urn:pulumi:{engine.STACK}::{engine.PROJECT}::aws:ec2/vpc:Vpc::vpc"
    bad = dataclasses.replace(BATCH, subnet_ids=["vpc-0123456789abcdef0"], multi_node=None)
    with pytest.raises(ConfigError) as in_program:
        in_python(render, "gpuready:aws:BatchGpuEnvironment", "from-vpc", bad)
    with pytest.raises(grpc.RpcError) as over_grpc:
        engine.construct(stub, address, "gpuready:aws:BatchGpuEnvironment", "from-vpc", wire(bad),
                         dependencies={"subnetIds": [vpc_urn]})
    assert over_grpc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert engine.input_errors(over_grpc.value) == [("subnetIds[0]", str(in_program.value))]
    assert "not a subnet id" in str(in_program.value)


def test_an_args_object_sent_whole_with_its_resource_is_checked_and_keeps_the_dependency(served):
    """``existingCluster: {name: cluster.name, ...}`` from an engine that sends no output values: the whole plain
    object comes as one output with the cluster's URN. A bad name is refused at Construct on its field; a good one
    builds node groups that depend on that cluster."""
    stub, address, monitor = served
    cluster = f"urn:pulumi:{engine.STACK}::{engine.PROJECT}::aws:eks/cluster:Cluster::made-elsewhere"
    args = EksGpuClusterArgs(subnet_ids=["subnet-aaaaaaaa"], autoscaler=AutoscalerArgs(mode="none"),
                             existing_cluster=ExistingClusterArgs(name="arn:aws:eks:us-east-1:1:cluster/prod",
                                                                  kubeconfig="k"),
                             node_group=GpuNodeGroupArgs(instance_types=["g6e.xlarge"]))
    with pytest.raises(grpc.RpcError) as refused:
        engine.construct(stub, address, "gpuready:aws:EksGpuCluster", "joined-bad", wire(args),
                         dependencies={"existingCluster": [cluster]})
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    ((path, reason),) = engine.input_errors(refused.value)
    assert path == "existingCluster.name" and "not an EKS cluster name" in reason

    good = dataclasses.replace(args, existing_cluster=ExistingClusterArgs(name="prod", kubeconfig="k"))
    before = len(monitor.records)
    engine.construct(stub, address, "gpuready:aws:EksGpuCluster", "joined", wire(good),
                     dependencies={"existingCluster": [cluster]})
    (group,) = [r for r in monitor.records[before:] if r.type == "aws:eks/nodeGroup:NodeGroup"]
    assert group.inputs["clusterName"] == "prod" and cluster in group.property_dependencies["clusterName"]


def test_an_input_no_args_field_takes_is_refused_by_name(served):
    stub, address, _ = served
    with pytest.raises(grpc.RpcError) as refused:
        engine.construct(stub, address, "gpuready:aws:BatchGpuEnvironment", "typo",
                         {**wire(BATCH), "job": {"gpus": 1, "vcpu": 4}})
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert engine.input_errors(refused.value) == [("job.vcpu", "job.vcpu is not an input of GpuJobArgs")]


def test_under_preview_construct_registers_the_same_resources_and_leaves_what_the_cloud_computes_unknown(start):
    """``pulumi preview``: the engine sends dryRun, the monitor answers no id or ARN; the provider still builds every
    component, and an output the cloud computes comes back unknown, not missing."""
    with engine.callbacks(preview=True) as (address, monitor, _), start(address) as stub:
        for token, args in CASES.items():
            name = f"v{len(monitor.records)}"
            before = len(monitor.records)
            answered = engine.construct(stub, address, token, name, wire(args), preview=True)
            holder = {}
            python = run(lambda: holder.setdefault("c", component_class(token)(name, args)), project=engine.PROJECT,
                         stack=engine.STACK, config=engine.CONFIG, preview=True)
            assert {r.urn for r in monitor.records[before:]} == {r.urn for r in python.resources}, token
    assert answered["state"]["releases"] == ["nvidia-device-plugin", "dcgm-exporter"]


def test_under_preview_the_job_queue_arn_is_unknown_not_missing(start):
    with engine.callbacks(preview=True) as (address, _, _), start(address) as stub:
        answered = engine.construct(stub, address, "gpuready:aws:BatchGpuEnvironment", "preview", wire(BATCH),
                                    preview=True)
    assert isinstance(answered["state"]["jobQueueArn"], Unknown)
    assert answered["state"]["jobQueueName"] == "preview-gpu"
    assert answered["state"]["maxTotalGpus"] == check(BATCH).max_total_gpus  # plain facts, known at preview


JOINED = EksGpuClusterArgs(subnet_ids=["subnet-aaaaaaaa"], autoscaler=AutoscalerArgs(mode="none"),
                           existing_cluster=ExistingClusterArgs(name="prod", kubeconfig="k"),
                           node_group=GpuNodeGroupArgs(instance_types=["g6e.xlarge"]))


MADE_ELSEWHERE = f"urn:pulumi:{engine.STACK}::{engine.PROJECT}::aws:eks/cluster:Cluster::made-elsewhere"


@pytest.mark.parametrize(("token", "inputs", "path", "reason", "dependencies"), [
    ("gpuready:aws:BatchGpuEnvironment", {**wire(BATCH), "job": "g6e.xlarge"}, "job",
     "job must be an object, not 'g6e.xlarge'", None),
    ("gpuready:aws:BatchGpuEnvironment", {**wire(BATCH), "teams": [{"name": "ml", "gpu": 4}]}, "teams[0].gpu",
     "teams[0].gpu is not an input of TeamArgs", None),
    ("gpuready:aws:BatchGpuEnvironment", {k: v for k, v in wire(BATCH).items() if k != "subnetIds"}, "subnetIds",
     "Missing required input 'subnetIds' on 'BatchGpuEnvironmentArgs'", None),
    ("gpuready:aws:EksGpuCluster", {**wire(JOINED), "existingCluster": {"name": "prod"}}, "existingCluster.kubeconfig",
     "Missing required input 'existingCluster.kubeconfig' on 'ExistingClusterArgs'", None),
    ("gpuready:aws:EksGpuCluster", {**wire(JOINED), "existingCluster": {"name": "prod"}}, "existingCluster.kubeconfig",
     "Missing required input 'existingCluster.kubeconfig' on 'ExistingClusterArgs'",
     {"existingCluster": [MADE_ELSEWHERE]}),
    ("gpuready:aws:EksGpuCluster", {**wire(JOINED), "autoscaler": {"mode": "sideways"}}, "autoscaler.mode",
     "autoscaler.mode (stack: gpuready:autoscaler) = 'sideways': not an autoscaler. Fix: use one of "
     "cluster-autoscaler, karpenter, auto-mode, none", None),
], ids=["an object given as a string", "a list item's misspelt field", "a required input left out", "a required field of an object left out",
        "a required field of an object sent whole with its resource left out",
        "a bad value the message names with its stack setting"])
def test_an_input_of_the_wrong_shape_or_missing_is_refused_on_its_path(served, token, inputs, path, reason,
                                                                       dependencies):
    """What a program whose language's SDK does not hold it back (YAML) can send: the engine's input error names the
    property's path (dotted, as the schema names it, whatever else the message names) and says what is wrong."""
    stub, address, _ = served
    with pytest.raises(grpc.RpcError) as refused:
        engine.construct(stub, address, token, "shape", inputs, dependencies=dependencies)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert refused.value.details() == reason
    assert engine.input_errors(refused.value) == [(path, reason)]


def test_a_type_the_package_does_not_serve_is_refused_by_name(served):
    stub, address, monitor = served
    with pytest.raises(grpc.RpcError) as refused:
        engine.construct(stub, address, "gpuready:aws:GpuCluster", "unserved", wire(BATCH))
    assert "gpuready:aws:GpuCluster is not a component of the gpuready package" in refused.value.details()
    assert [r.urn for r in monitor.records if r.urn.endswith("::unserved")] == []


def test_under_preview_an_args_object_sent_whole_as_an_unknown_value_is_refused_with_the_fix(start):
    """``existingCluster: cluster.something`` whose value a first ``pulumi preview`` does not know: the component
    must check the cluster's name at construction, so the provider refuses it on that property and says how to give
    it instead."""
    with engine.callbacks(preview=True) as (address, monitor, _), start(address) as stub:
        with pytest.raises(grpc.RpcError) as refused:
            engine.construct(stub, address, "gpuready:aws:EksGpuCluster", "unknown-cluster",
                             {**wire(JOINED), "existingCluster": rpc.UNKNOWN}, preview=True,
                             dependencies={"existingCluster": [MADE_ELSEWHERE]})
        assert monitor.records == []
    reason = ("existingCluster must be known when the component is constructed: give its fields as values or outputs, "
              "not the whole object as the output of an unknown value")
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert engine.input_errors(refused.value) == [("existingCluster", reason)]


def test_each_input_field_of_an_object_sent_whole_with_its_resource_keeps_the_dependency(served):
    """``cluster: {secretsKmsKeyArn: key.arn, systemNodes: {...}}`` from an engine that sends no output values: the
    key's ARN, a field after one left unset, still makes the cluster wait for the key, and the object's own nested
    objects (the system node group's) are kept as given."""
    stub, address, monitor = served
    key = f"urn:pulumi:{engine.STACK}::{engine.PROJECT}::aws:kms/key:Key::secrets"
    args = dataclasses.replace(CASES["gpuready:aws:EksGpuCluster"], cluster=EksClusterArgs(
        secrets_kms_key_arn="arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab",
        system_nodes=SystemNodeGroupArgs(instance_types=["m7i.xlarge"], size=3)))
    before = len(monitor.records)
    engine.construct(stub, address, "gpuready:aws:EksGpuCluster", "keyed", wire(args),
                     dependencies={"cluster": [key]})
    made = monitor.records[before:]
    (cluster,) = [r for r in made if r.type == "aws:eks/cluster:Cluster"]
    assert cluster.inputs["encryptionConfig"]["provider"]["keyArn"] == args.cluster.secrets_kms_key_arn
    assert key in cluster.property_dependencies["encryptionConfig"]
    (system,) = [r for r in made if r.type == "aws:eks/nodeGroup:NodeGroup" and r.inputs["instanceTypes"] ==
                 ["m7i.xlarge"]]
    assert system.inputs["scalingConfig"]["desiredSize"] == 3
