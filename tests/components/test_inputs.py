"""Inputs that take another resource's output (``components/inputs.py``): checked at construction when their value is
known, when it resolves otherwise; and the rules they are checked against, held to the vendors' own artefacts
(botocore's EKS model, the ids moto's EC2 makes, Google's discovery documents, the Azure SDK's documented id form)."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import boto3
import pulumi
import pulumi_aws as aws
import pytest
import requests

from gpuready.plan import render as render_module
from gpuready.plan.render import mock_id, run
from gpuready_components import aws_instances, inputs
from gpuready_components.aks_gpu import AksGpuCluster, AksGpuClusterArgs, GpuAgentPoolArgs
from gpuready_components.aks_gpu import ClusterArgs as AksClusterArgs
from gpuready_components.aks_gpu import facts as aks_facts
from gpuready_components.batch_gpu import BatchGpuEnvironment, BatchGpuEnvironmentArgs, MultiNodeArgs
from gpuready_components.eks_gpu import EksGpuCluster, EksGpuClusterArgs, ExistingClusterArgs, GpuNodeGroupArgs
from gpuready_components.eks_gpu import AutoscalerArgs
from gpuready_components.eks_gpu import ClusterArgs as EksClusterArgs
from gpuready_components.eks_gpu import facts as eks_facts
from gpuready_components.errors import ConfigError
from gpuready_components.gke_gpu import ClusterArgs as GkeClusterArgs
from gpuready_components.gke_gpu import GkeGpuCluster, GkeGpuClusterArgs, GpuNodePoolArgs
from gpuready_components.gke_gpu import facts as gke_facts
from gpuready_components.inputs import checked, checked_list, pattern
from tests.gpuready.smoke.conftest import moto_port  # noqa: F401 (the fixture: one moto server for this module)

SUBNET = "aws:ec2/subnet:Subnet"
CE = "aws:batch/computeEnvironment:ComputeEnvironment"
WORD = pattern(r"[a-z]+", "a word", "give a word")


def _network(bad_subnet: bool = False):
    """A VPC and two subnets declared in the program, as a user's own network module does; returns (vpc, the ids
    given as subnet ids: the subnets', or with ``bad_subnet`` the VPC's)."""
    vpc = aws.ec2.Vpc("vpc", cidr_block="10.0.0.0/16")
    subnets = [aws.ec2.Subnet(f"private-{z}", vpc_id=vpc.id, cidr_block=f"10.0.{i}.0/24",
                              availability_zone=f"us-east-1{z}") for i, z in enumerate("ab")]
    return vpc, [vpc.id, subnets[1].id] if bad_subnet else [s.id for s in subnets]


def _batch(bad_subnet: bool = False, **given):
    def program():
        vpc, ids = _network(bad_subnet)
        BatchGpuEnvironment("gpu", BatchGpuEnvironmentArgs(instance_types=["g6.xlarge"], subnet_ids=ids,
                                                           vpc_id=vpc.id, **given))
    return program


def _run(program, preview: bool = False):
    return run(program, project="gpuready", stack="test", config={"aws:region": "us-east-1"}, preview=preview)


def _keep_monitors(monkeypatch) -> list:
    """The recording monitors of the runs to come, kept to read what each registered."""
    monitors: list = []

    class Kept(render_module._RecordingMonitor):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            monitors.append(self)

    monkeypatch.setattr(render_module, "_RecordingMonitor", Kept)
    return monitors


# --- the mechanism --------------------------------------------------------------------------------------------------


def test_a_known_value_is_checked_at_once_and_passed_on_as_given():
    assert checked("abc", "f", WORD) == "abc"
    with pytest.raises(ConfigError) as error:
        checked("ABC", "f", WORD)
    assert error.value.field == "f" and "not a word" in str(error.value)
    assert checked(None, "f", WORD) is None  # not given: nothing to check


def test_a_list_is_checked_item_by_item_with_each_items_place():
    with pytest.raises(ConfigError) as error:
        checked_list(["ok", "NO"], "ids", WORD)
    assert error.value.field == "ids[1]" and error.value.value == "NO"
    with pytest.raises(ConfigError, match="must be a list"):
        checked_list("ok", "ids", WORD)


def test_an_output_is_checked_when_it_resolves_and_its_resources_kept(render, monkeypatch):
    """A bad subnet id from the program's own VPC (the VPC's id, given by mistake) passes construction, where its
    value is not there yet, and fails ``pulumi up`` when it resolves, before any compute environment takes it, with
    the message a typed value gets."""
    monitors = _keep_monitors(monkeypatch)
    with pytest.raises(ConfigError) as error:
        _run(_batch(bad_subnet=True))
    assert error.value.field == "subnet_ids[0]" and error.value.value.startswith("vpc-")
    registered = {r.type for r in monitors[-1].records}
    # The VPC whose id resolved is registered; whether the program's subnet (registered on another thread, on the
    # same id) got there before the run ended depends on the machine's load, so it is not asserted.
    assert "aws:ec2/vpc:Vpc" in registered
    assert CE not in registered and "aws:batch/jobQueue:JobQueue" not in registered
    assert "not a subnet id" in str(error.value) and "not its name, ARN or CIDR" in error.value.fix

    typed = BatchGpuEnvironmentArgs(instance_types=["g6.xlarge"], subnet_ids=[error.value.value, "subnet-aaaaaaaa"],
                                    vpc_id="vpc-11111111")
    with pytest.raises(ConfigError) as at_construction:
        render(lambda: BatchGpuEnvironment("gpu", typed))
    assert str(at_construction.value) == str(error.value)


def test_under_preview_an_unknown_value_constructs_and_is_left_to_the_deployment():
    rendering = _run(_batch(bad_subnet=True), preview=True)
    (on_demand,) = rendering.of_type(CE)
    subnets = on_demand.inputs["computeResources"]["subnets"]
    assert len(subnets) == 2 and all(isinstance(s, pulumi.output.Unknown) for s in subnets)


def test_good_outputs_reach_the_resources_as_dependencies():
    """The checked output still carries the subnets it came from: the engine creates the compute environment after
    them, and deletes it before."""
    rendering = _run(_batch())
    subnets = rendering.of_type(SUBNET)
    (env,) = rendering.of_type(CE)
    assert sorted(env.inputs["computeResources"]["subnets"]) == sorted(mock_id(SUBNET, s.name) for s in subnets)
    assert {s.urn for s in subnets} <= set(env.property_dependencies["computeResources"])


def test_a_literal_list_with_an_output_in_it_has_its_length_checked_at_once(render):
    """EKS needs two subnets for a new cluster: one subnet, even if it is an output, is an error at construction."""
    def program():
        _, ids = _network()
        EksGpuCluster("ml", EksGpuClusterArgs(subnet_ids=ids[:1], cluster=EksClusterArgs(),
                                              node_group=GpuNodeGroupArgs(instance_types=["g6.xlarge"])))
    with pytest.raises(ConfigError) as error:
        render(program)
    assert error.value.field == "subnet_ids" and "at least 2, 1 given" in str(error.value)


def test_an_existing_clusters_name_from_an_output_is_checked_when_it_resolves(render):
    """The name kept in an SSM parameter by the team that made the cluster: a name EKS would refuse fails the
    deployment, naming the field."""
    def program(name: str):
        def build():
            stored = aws.ssm.Parameter("cluster-name", type="String", value=name)
            EksGpuCluster("ml", EksGpuClusterArgs(
                subnet_ids=["subnet-aaaaaaaa"], existing_cluster=ExistingClusterArgs(name=stored.value, kubeconfig="k"),
                autoscaler=AutoscalerArgs(mode="none"), node_group=GpuNodeGroupArgs(instance_types=["g6.xlarge"])))
        return build
    with pytest.raises(ConfigError) as error:
        _run(program("arn:aws:eks:us-east-1:123456789012:cluster/prod"))
    assert error.value.field == "existing_cluster.name" and "not an EKS cluster name" in str(error.value)
    rendering = _run(program("prod"))
    (group,) = [r for r in rendering.of_type("aws:eks/nodeGroup:NodeGroup")]
    assert group.inputs["clusterName"] == "prod"


@pytest.mark.parametrize("given,field,words", [
    ({"security_group_ids": ["default"]}, "security_group_ids[0]", "not a security group id"),
    ({"security_group_ids": []}, "security_group_ids", "one or more security groups"),
    ({"multi_node": MultiNodeArgs(subnet="10.0.1.0/24")}, "multi_node.subnet", "not a subnet id"),
])
def test_batch_refuses_what_ec2_would(render, given, field, words):
    args = BatchGpuEnvironmentArgs(instance_types=["g6.12xlarge"], subnet_ids=["subnet-aaaaaaaa"],
                                   vpc_id="vpc-11111111", max_vcpus=96, **given)
    with pytest.raises(ConfigError) as error:
        render(lambda: BatchGpuEnvironment("gpu", args))
    assert error.value.field == field and words in str(error.value)


def _gke(**cluster) -> GkeGpuClusterArgs:
    return GkeGpuClusterArgs(location="us-central1", project="p", cluster=GkeClusterArgs(**cluster),
                             node_pool=GpuNodePoolArgs(machine_type="g2-standard-8"))


def test_gke_takes_a_network_and_subnetwork_by_name_or_path_in_the_clusters_region(render):
    for network, subnetwork in (("ml-vpc", "ml-subnet"),
                                ("projects/p/global/networks/ml-vpc", "projects/p/regions/us-central1/subnetworks/s"),
                                ("https://www.googleapis.com/compute/v1/projects/p/global/networks/ml-vpc",
                                 "https://www.googleapis.com/compute/v1/projects/p/regions/us-central1/subnetworks/s")):
        render(lambda: GkeGpuCluster("ml", _gke(network=network, subnetwork=subnetwork)))
    with pytest.raises(ConfigError) as error:
        render(lambda: GkeGpuCluster("ml", _gke(network="ml-vpc", subnetwork="projects/p/regions/europe-west4/"
                                                                             "subnetworks/s")))
    assert error.value.field == "cluster.subnetwork" and "a subnetwork of europe-west4" in str(error.value)
    with pytest.raises(ConfigError) as error:
        render(lambda: GkeGpuCluster("ml", _gke(network="ML VPC", subnetwork="s")))
    assert error.value.field == "cluster.network"


def _aks(subnet: str) -> AksGpuClusterArgs:
    return AksGpuClusterArgs(resource_group_name="ml-rg", location="eastus",
                             cluster=AksClusterArgs(vnet_subnet_id=subnet),
                             node_pool=GpuAgentPoolArgs(vm_size="Standard_NC4as_T4_v3"))


def test_aks_takes_a_subnets_resource_id_not_its_name(render):
    good = ("/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/net/providers/Microsoft.Network/"
            "virtualNetworks/ml/subnets/gpu")
    render(lambda: AksGpuCluster("ml", _aks(good)))
    render(lambda: AksGpuCluster("ml", _aks(good.lower())))  # Azure's ids are case-insensitive
    with pytest.raises(ConfigError) as error:
        render(lambda: AksGpuCluster("ml", _aks("gpu")))
    assert error.value.field == "cluster.vnet_subnet_id" and "not a subnet's resource id" in str(error.value)


# --- the rules, against the vendors' artefacts ------------------------------------------------------------------------


def test_the_ids_ec2_makes_pass_and_other_resources_ids_do_not(moto_port, monkeypatch):  # noqa: F811
    """moto's EC2 (over HTTP) makes a VPC, a subnet and a security group; each id passes its own rule only."""
    endpoint = f"http://127.0.0.1:{moto_port}"
    requests.post(f"{endpoint}/moto-api/reset", timeout=120)  # a first reset loads every backend: slow under load
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "testing")
    ec2 = boto3.client("ec2", region_name="us-east-1", endpoint_url=endpoint)
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.0.0/24")["Subnet"]["SubnetId"]
    group = ec2.create_security_group(VpcId=vpc, GroupName="g", Description="d")["GroupId"]
    made = {aws_instances.VPC_ID: vpc, aws_instances.SUBNET_ID: subnet, aws_instances.SECURITY_GROUP_ID: group}
    for rule, value in made.items():
        rule("f", value)
        for other in set(made.values()) - {value}:
            with pytest.raises(ConfigError):
                rule("f", other)
    aws_instances.SUBNET_ID("f", "subnet-1a2b3c4d")  # before 2018: 8 hex digits


def test_the_eks_cluster_name_rule_is_botocores():
    import botocore

    (path,) = Path(botocore.__file__).parent.glob("data/eks/*/service-2.json.gz")
    shape = json.loads(gzip.open(path).read())["shapes"]["ClusterName"]
    botocore_rule = re.compile(shape["pattern"].lstrip("^"))
    names = ["prod", "ml_platform-2", "9lives", "-lead", "_lead", "has space", "a" * 100, "a" * 101, "",
             "arn:aws:eks:us-east-1:1:cluster/prod", "ünï"]
    for name in names:
        theirs = bool(botocore_rule.fullmatch(name)) and shape["min"] <= len(name) <= shape["max"]
        assert bool(re.fullmatch(eks_facts.CLUSTER_NAME, name)) == theirs, name


def test_the_gke_rules_are_googles():
    import googleapiclient

    documents = Path(googleapiclient.__file__).parent / "discovery_cache" / "documents"
    compute = json.loads((documents / "compute.v1.json").read_text())["schemas"]
    assert gke_facts.COMPUTE_NAME == compute["Network"]["properties"]["name"]["pattern"] == \
        compute["Subnetwork"]["properties"]["name"]["pattern"]
    described = json.loads((documents / "container.v1.json").read_text())["schemas"]["Cluster"]["properties"]["name"]
    assert "up to 40 characters" in described["description"] and "Must start with a letter" in described["description"]
    rule = re.compile(gke_facts.CLUSTER_NAME)
    assert rule.fullmatch("a" * 40) and not rule.fullmatch("a" * 41)
    assert not any(rule.fullmatch(n) for n in ("Prod", "1prod", "prod-", "pr_od"))


def test_the_aks_subnet_id_rule_takes_the_form_the_azure_sdk_documents():
    from azure.mgmt.containerservice import models

    doc = models.ManagedClusterAgentPoolProfile.__doc__
    documented = doc[doc.index(":ivar vnet_subnet_id:"):doc.index(":vartype vnet_subnet_id:")]
    (form,) = re.findall(r"(/subscriptions/\{subscriptionId\}/\S+?)\.?\s", documented)
    example = re.sub(r"\{(\w+)\}", lambda m: {"subscriptionId": "00000000-0000-0000-0000-000000000000"}.get(
        m.group(1), m.group(1).lower()), form)
    assert re.fullmatch(aks_facts.SUBNET_ID, example, re.IGNORECASE)
    assert not re.fullmatch(aks_facts.SUBNET_ID, example.rsplit("/subnets/", 1)[0], re.IGNORECASE)


def test_a_secret_that_fails_its_check_is_not_shown():
    """A cluster name read with ``require_secret``: the error names the field and the rule, and shows ``[secret]``."""
    def program():
        EksGpuCluster("ml", EksGpuClusterArgs(
            subnet_ids=["subnet-aaaaaaaa"], autoscaler=AutoscalerArgs(mode="none"),
            existing_cluster=ExistingClusterArgs(name=pulumi.Output.secret("arn:aws:eks:us-east-1:1:cluster/hidden"),
                                                 kubeconfig="k"),
            node_group=GpuNodeGroupArgs(instance_types=["g6.xlarge"])))
    with pytest.raises(ConfigError) as error:
        _run(program)
    assert error.value.field == "existing_cluster.name" and "not an EKS cluster name" in str(error.value)
    assert "hidden" not in str(error.value) and "[secret]" in str(error.value)


def test_outputs_that_resolve_to_the_same_subnet_are_refused_when_they_do():
    def program():
        _, ids = _network()
        BatchGpuEnvironment("gpu", BatchGpuEnvironmentArgs(instance_types=["g6.xlarge"], subnet_ids=[ids[0], ids[0]],
                                                           vpc_id="vpc-11111111"))
    _run(program, preview=True)  # unknown at a first preview: two items, nothing to compare
    with pytest.raises(ConfigError) as error:
        _run(program)
    assert error.value.field == "subnet_ids" and "items 0 and 1 are the same" in str(error.value)


def test_a_whole_list_from_an_output_is_checked_item_by_item_when_it_resolves():
    """A list that is itself an output (a stack reference's, a network module's ``private_subnet_ids``)."""
    def program():
        vpc, _ = _network()
        BatchGpuEnvironment("gpu", BatchGpuEnvironmentArgs(instance_types=["g6.xlarge"],
                                                           subnet_ids=vpc.id.apply(lambda i: [i]), vpc_id=vpc.id))
    with pytest.raises(ConfigError) as error:
        _run(program)
    assert error.value.field == "subnet_ids[0]" and error.value.value.startswith("vpc-")


def test_a_secret_list_with_a_duplicate_names_the_places_not_the_value():
    def program():
        BatchGpuEnvironment("gpu", BatchGpuEnvironmentArgs(
            instance_types=["g6.xlarge"], vpc_id="vpc-11111111",
            subnet_ids=pulumi.Output.secret(["subnet-0123456789abcdef0", "subnet-0123456789abcdef0"])))
    with pytest.raises(ConfigError) as error:
        _run(program)
    assert "items 0 and 1 are the same" in str(error.value) and "0123456789abcdef0" not in str(error.value)


@pytest.mark.parametrize("rule,good,bad", [
    (aws_instances.SUBNET_ID, ["subnet-0123456789abcdef0", "subnet-1a2b3c4d"],
     ["subnet-0123456789ABCDEF0", "subnet-123", "subnet-0123456789abcdef01", "10.0.0.0/24", ""]),
    ("aks-cluster", ["a", "ml-gpu_1", "a" * 63], ["-ml", "ml-", "a" * 64, "ml.gpu", ""]),
    ("aks-group", ["ml-rg", "ML.rg(1)", "a" * 90], ["rg.", "a" * 91, "/subscriptions/x/resourceGroups/rg", ""]),
])
def test_each_rule_takes_what_the_cloud_takes_and_nothing_else(rule, good, bad):
    from gpuready_components.aks_gpu import validation as aks

    check = {"aks-cluster": aks.CLUSTER_NAME, "aks-group": aks.RESOURCE_GROUP_NAME}.get(rule, rule)
    for value in good:
        check("f", value)
    for value in bad:
        with pytest.raises(ConfigError):
            check("f", value)


def test_gke_takes_partial_urls_and_the_beta_and_alpha_apis(render):
    for network, subnetwork in (("global/networks/default", "regions/us-central1/subnetworks/default"),
                                ("https://compute.googleapis.com/compute/beta/projects/p/global/networks/n",
                                 "https://compute.googleapis.com/compute/alpha/projects/p/regions/us-central1/"
                                 "subnetworks/s")):
        render(lambda: GkeGpuCluster("ml", _gke(network=network, subnetwork=subnetwork)))


# --- guards: each test below fails when the rule it names is weakened (issue 29's audit) --------------------------


def _resolved(value, secret: bool = False) -> pulumi.Output:
    """An Output whose value is already there at construction, as the engine sends a component package's inputs to
    its Construct (with the resources they come from) under ``pulumi up``."""
    import asyncio

    from pulumi.output import _OutputData

    future = asyncio.get_event_loop().create_future()
    future.set_result(_OutputData(resources=set(), value=value, is_known=True, is_secret=secret))
    return pulumi.Output._from_data(future)


def test_a_resolved_secret_that_fails_its_check_at_construction_is_not_shown(render):
    def program():
        EksGpuCluster("ml", EksGpuClusterArgs(
            subnet_ids=["subnet-aaaaaaaa"], autoscaler=AutoscalerArgs(mode="none"),
            existing_cluster=ExistingClusterArgs(name=_resolved("arn:aws:eks:us-east-1:1:cluster/hidden", secret=True),
                                                 kubeconfig="k"),
            node_group=GpuNodeGroupArgs(instance_types=["g6.xlarge"])))
    with pytest.raises(ConfigError) as error:
        render(program)
    assert error.value.field == "existing_cluster.name" and "not an EKS cluster name" in str(error.value)
    assert "hidden" not in str(error.value) and "[secret]" in str(error.value)
    assert error.value.__context__ is None and error.value.__cause__ is None  # no chained error holds the value


def test_under_preview_a_list_with_unknown_items_is_checked_whole_at_construction():
    """``pulumi preview`` never resolves the program's own subnets, so what the list shows already is checked then:
    too few subnets for a new EKS cluster, and the same typed id twice."""
    def eks(ids):
        def program():
            _, outputs = _network()
            EksGpuCluster("ml", EksGpuClusterArgs(subnet_ids=ids(outputs), cluster=EksClusterArgs(),
                                                  node_group=GpuNodeGroupArgs(instance_types=["g6.xlarge"])))
        return program
    with pytest.raises(ConfigError) as error:
        _run(eks(lambda outputs: outputs[:1]), preview=True)
    assert error.value.field == "subnet_ids" and "at least 2, 1 given" in str(error.value)
    assert str(error.value).startswith("subnet_ids = [<unknown until deployed>]: ")
    with pytest.raises(ConfigError) as error:
        _run(eks(lambda outputs: [outputs[0], "subnet-aaaaaaaa", "subnet-aaaaaaaa"]), preview=True)
    assert error.value.field == "subnet_ids" and "items 1 and 2 are the same" in str(error.value)
    _run(eks(lambda outputs: outputs), preview=True)  # two unknown subnets: nothing to refuse yet


def test_a_pattern_takes_a_whole_match_only_and_its_error_says_what_it_wanted():
    check = pattern(r"subnet-[0-9a-f]{8}", "a subnet id", "give the subnet's id")
    check("subnet_ids[0]", "subnet-0123abcd")
    for bad in ("subnet-0123abcd0", "my-subnet-0123abcd", "", 7, None):
        with pytest.raises(ConfigError) as error:
            check("subnet_ids[0]", bad)
        assert str(error.value) == f"subnet_ids[0] = {bad!r}: not a subnet id. Fix: give the subnet's id"


def test_a_part_of_a_resolved_input_is_there_at_once_with_its_resources_and_secrecy(render):
    """What the provider's Construct makes of an args object the engine sent whole: each part already there, keeping
    what the whole depended on, and secret when the whole was."""
    from gpuready_components.inputs import alongside, settled

    found = {}

    def program():
        vpc = aws.ec2.Vpc("vpc", cidr_block="10.0.0.0/16")
        whole = _resolved({"subnet_ids": ["subnet-aaaaaaaa"]}, secret=True)
        whole._data.result().resources.add(vpc)
        part = alongside(whole, ["VPC-1"])
        found.update(value=settled(part), data=part._data.result(), vpc=vpc)
        with pytest.raises(ConfigError) as error:
            checked(part, "subnet_ids", lambda f, v: WORD(f, v[0]))
        found["error"] = str(error.value)
        plain = alongside(_resolved({"name": "ml"}), "ml")
        found["plain"] = plain._data.result().is_secret
    render(program)
    assert found["value"] == ["VPC-1"] and found["data"].is_known and found["data"].is_secret
    assert found["data"].resources == {found["vpc"]} and found["plain"] is False
    assert found["error"] == "subnet_ids = [secret]: not a word. Fix: give a word"


def test_exactly_counts_the_items_and_says_how_many_were_given():
    from gpuready_components.inputs import exactly

    one = exactly(1, "an EFA node group lies in one zone", "give one subnet")
    one("node_group.subnet_ids", ["subnet-aaaaaaaa"])
    for given in (["subnet-aaaaaaaa", "subnet-bbbbbbbb"], []):
        with pytest.raises(ConfigError) as error:
            one("node_group.subnet_ids", given)
        assert str(error.value) == f"node_group.subnet_ids = {given!r}: an EFA node group lies in one zone: 1 " \
            f"exactly, {len(given)} given. Fix: give one subnet"


def test_list_errors_are_whole_one_line_messages_with_the_fix():
    from gpuready_components.inputs import at_least, distinct

    def message(check, *args):
        with pytest.raises(ConfigError) as error:
            check(*args)
        return str(error.value)
    assert message(checked_list, "subnet-aaaaaaaa", "subnet_ids", WORD) == \
        "subnet_ids = 'subnet-aaaaaaaa': must be a list. Fix: use ['subnet-aaaaaaaa']"
    assert message(checked_list, {"id": "subnet-aaaaaaaa"}, "subnet_ids", WORD) == \
        "subnet_ids = {'id': 'subnet-aaaaaaaa'}: must be a list. Fix: give a list of ids"
    assert message(distinct, "subnet_ids", ["a", "b", "a"]) == \
        "subnet_ids = ['a', 'b', 'a']: items 0 and 2 are the same. Fix: list each once"
    assert message(at_least(2, "EKS needs two zones", "give two subnets"), "subnet_ids", ["a"]) == \
        "subnet_ids = ['a']: EKS needs two zones: at least 2, 1 given. Fix: give two subnets"


def test_an_awaitable_input_is_checked_when_it_resolves_not_as_the_awaitable(render):
    """Pulumi takes an awaitable as an input: its value, not the coroutine, is what the check sees."""
    found = {}

    def program():
        async def later(value):
            return value

        found["good"] = checked(later("abc"), "f", WORD)  # no error at construction: nothing to see yet
        found["good"].apply(lambda v: found.update(value=v))
        checked(later("ABC"), "f", WORD)  # fails when it resolves
    with pytest.raises(ConfigError) as error:
        render(program)
    assert isinstance(found["good"], pulumi.Output) and found["value"] == "abc"
    assert str(error.value) == "f = 'ABC': not a word. Fix: give a word"


def test_subnets_that_resolve_to_the_same_id_create_no_compute_environment(monkeypatch):
    """Each subnet id waits for the whole list's check: a duplicate found when the ids resolve stops the deployment
    before any resource takes them."""
    monitors = _keep_monitors(monkeypatch)

    def program():
        _, ids = _network()
        BatchGpuEnvironment("gpu", BatchGpuEnvironmentArgs(instance_types=["g6.xlarge"], subnet_ids=[ids[0], ids[0]],
                                                           vpc_id="vpc-11111111"))
    with pytest.raises(ConfigError, match="items 0 and 1 are the same"):
        _run(program)
    registered = {r.type for r in monitors[-1].records}
    assert SUBNET in registered and CE not in registered


@pytest.mark.parametrize("fate", ["failed", "cancelled"])
def test_an_input_whose_resource_failed_upstream_is_left_to_pulumi_not_raised_by_the_component(fate):
    """The engine reports the failure of the resource an input comes from; the component neither raises it as its own
    error at construction nor takes the input as known."""
    import asyncio

    future = asyncio.get_event_loop().create_future()  # the loop Pulumi's runtime uses in these tests
    future.set_exception(RuntimeError("the VPC failed")) if fate == "failed" else future.cancel()
    output = pulumi.Output._from_data(future)
    try:
        assert inputs.settled(output) is inputs.NOT_YET
        assert inputs.settled([output, "subnet-aaaaaaaa"]) is inputs.NOT_YET
    finally:  # Pulumi keeps a failed output to report at the program's end; this test is no program
        output._untrack()
        if not future.cancelled():
            future.exception()  # retrieved: no "never retrieved" warning
