"""The readers over the reference stacks as ``gpuready plan`` renders them: every registered type is read from a
real rendering, and the facts read agree with what the components export and the catalog says."""

from __future__ import annotations

import json
import re

import pytest
import requests

from gpuready_components import catalog, platforms
from gpuready_components.k8s_gpu import facts as k8s_facts
from gpuready.plan.describe import capacities
from gpuready.resources import GpuPool, by_token, aws, azure, capacity_readers, gcp, kubernetes, read
from tests.conftest import ROOT
from tests.gpuready.policy.helpers import render_stack

RENDERINGS = {"aws-batch": {}, "aws-batch-multinode": {}, "eks": {}, "gke": {}, "aks": {},
              "eks-karpenter": {"gpuready:autoscaler": "karpenter"},
              "eks-karpenter-reserved": {}, "aws-batch-reserved": {},
              "eks-automode-reserved": {"gpuready:autoscaler": "auto-mode", "gpuready:reservation": {
                  "kind": "odcr", "tags": {"team": "ml"}, "count": 2}},
              "gke-gpu-operator": {"gpuready:install": "gpu-operator"},
              "aks-alerts": {"gpuready:prometheusOperator": "true"}, "aks-reservation": {},
              "gke-alerts": {"gpuready:managedDcgm": "false", "gpuready:managedAlerts": "true"},
              "eks-efa": {"gpuready:instanceTypes": ["p5.48xlarge"], "gpuready:efa": "true", "gpuready:minSize": 2,
                          "gpuready:maxSize": 2}}
"""Reference stacks (and variants of their config: NAME-VARIANT with no stack file of that name) that together create
every type the stacks use."""
NOT_IN_REFERENCE_STACKS = {aws.IamPolicy, aws.IamUserPolicy, aws.IamGroupPolicy, aws.IamUserPolicyAttachment,
                           aws.IamGroupPolicyAttachment, gcp.IamBinding}
"""IAM types the stacks never create, read for the policy pack's IAM rules on users' programs."""


@pytest.fixture(scope="module")
def rendered():
    return {name: render_stack(name if (ROOT / "stacks" / f"Pulumi.{name}.yaml").exists() else name.split("-")[0],
                               **config)
            for name, config in RENDERINGS.items()}


def _all(rendered, reader):
    return [(r, read(r.type, r.inputs)) for rendering in rendered.values() for r in rendering.resources
            if r.type == reader.TOKEN]


def test_every_registered_type_is_read_from_a_rendered_reference_stack(rendered):
    created = {r.type for rendering in rendered.values() for r in rendering.resources}
    registry = by_token()
    readers = {r for r in registry.values() if r.__module__.startswith("gpuready.")}  # not a test platform's
    assert {r for r in readers if r.TOKEN not in created} == NOT_IN_REFERENCE_STACKS
    for rendering in rendered.values():
        for r in rendering.resources:
            if r.type in registry:
                assert isinstance(read(r.type, r.inputs), registry[r.type])


def test_gpu_pools_read_the_instance_types_the_stack_config_names(rendered):
    batch = [pool for _, pool in _all({"aws-batch": rendered["aws-batch"]}, aws.BatchComputeEnvironment)]
    config = rendered["aws-batch"].config
    assert batch and all(pool.instance_types == json.loads(config["gpuready:instanceTypes"]) for pool in batch)
    assert all(pool.is_gpu and pool.minimum == (0, "minVcpus") for pool in batch)
    (gke,) = [pool for r, pool in _all(rendered, gcp.GkeNodePool) if r.name.endswith("gpu")][:1]
    assert gke.instance_types == [rendered["gke"].config["gpuready:machineType"]] and gke.gpu_rows[0].gpus >= 1


@pytest.mark.parametrize("stack, kinds, target, only", [
    ("gke-reservation", ("reserved",), "my-h100-reservation", True),
    ("gke-flex-start", ("flex-start",), None, False),
    ("gke", ("on-demand",), None, False),
])
def test_a_gke_pool_says_where_its_nodes_come_from(stack, kinds, target, only):
    (pool,) = [read(r.type, r.inputs) for r in render_stack(stack).resources
               if r.type == gcp.GkeNodePool.TOKEN and r.name.endswith("-gpu")]
    source = pool.source()
    assert (source.kinds, source.only) == (kinds, only)
    assert (source.reservation.target if source.reservation else None) == target
    if source.reservation:
        assert source.reservation.count == 2  # the count the stack gave, stamped on the pool


def test_taints_are_decoded_as_kubernetes_spells_them_and_match_what_the_stacks_export(rendered):
    """Each component encodes the GPU taint in its API's own spelling; the readers decode it back to the taint the
    stack exports for its pods to tolerate (EKS NO_SCHEDULE, GKE NO_SCHEDULE, AKS ``key=value:Effect``)."""
    for stack, reader in (("eks", aws.EksNodeGroup), ("gke", gcp.GkeNodePool), ("aks", azure.AksAgentPool)):
        exported = {k8s_facts.Taint(**t) for t in rendered[stack].outputs["gpuNodeTaints"]}
        pools = [pool for r, pool in _all({stack: rendered[stack]}, reader) if pool.is_gpu]
        assert pools and all(set(pool.taints) == exported for pool in pools), stack
        assert platforms.node_facts(stack).taint in exported


def test_aks_spot_pools_read_the_taint_aks_adds_to_spot_nodes():
    rendering = render_stack("aks", **{"gpuready:spot": True})
    (pool,) = [read(r.type, r.inputs) for r in rendering.resources
               if r.type == azure.AksAgentPool.TOKEN and read(r.type, r.inputs).is_gpu]
    assert pool.spot and k8s_facts.Taint("kubernetes.azure.com/scalesetpriority", "spot", "NoSchedule") in pool.taints


def test_an_aks_pool_says_where_its_nodes_come_from(rendered):
    """On a capacity reservation group: reserved, then on-demand past the reserved count (Azure overallocates), with
    the facts the stack stamped; Spot: Spot; else on-demand."""
    from gpuready.resources.base import ON_DEMAND, RESERVED, SPOT

    config = rendered["aks-reservation"].config
    group = json.loads(config["gpuready:reservation"])
    (pool,) = [p for _, p in _all({"r": rendered["aks-reservation"]}, azure.AksAgentPool) if p.is_gpu]
    source = pool.source()
    assert source.kinds == (RESERVED, ON_DEMAND) and source.falls_back and not source.only
    assert source.reservation.kind == "capacity-reservation-group" and source.reservation.target == group["groupId"]
    assert source.reservation.falls_back and source.reservation.count == group["count"]
    assert source.reservation.zone == group["zones"][0]
    (plain_pool,) = [p for _, p in _all({"aks": rendered["aks"]}, azure.AksAgentPool) if p.is_gpu]
    assert plain_pool.source().kinds == (ON_DEMAND,) and plain_pool.source().reservation is None
    spot = azure.AksAgentPool({**plain_pool.props, "scaleSetPriority": "Spot"})
    assert spot.source().kinds == (SPOT,)
    (cluster,) = [c for _, c in _all({"r": rendered["aks-reservation"]}, azure.AksCluster)]
    (identity,) = [r for r in rendered["aks-reservation"].resources if r.type == azure.UserAssignedIdentity.TOKEN]
    assert cluster.user_assigned_identities and cluster.user_assigned_identities[0].endswith(f"/{identity.name}")
    assert not [c for _, c in _all({"aks": rendered["aks"]}, azure.AksCluster)][0].user_assigned_identities


def test_capacity_is_what_gpuready_plan_reports(rendered):
    for stack in ("aws-batch", "eks", "gke", "aks"):
        golden = json.loads((ROOT / "tests" / "data" / "golden" / f"plan-{stack}.json").read_text())["capacity"]
        found = [(r.name, read(r.type, r.inputs).capacity()) for r in rendered[stack].resources
                 if isinstance(read(r.type, r.inputs), capacity_readers())]
        found = [(name, c) for name, c in found if c]
        assert [(name, c.max_gpus, c.max_usd_per_hour) for name, c in found] == \
            [(p["resource"], p["max_gpus"], p["max_usd_per_hour"]) for p in golden["pools"]], stack


MIXED_BATCH = {"gpuready:instanceTypes": ["g6.xlarge", "g6e.2xlarge", "g5.12xlarge", "p5e.48xlarge"],
               "gpuready:capacity": ["spot", "on-demand"], "gpuready:maxVcpus": 250,
               "gpuready:multiNode": {"nodes": 2, "instanceTypes": ["g6e.12xlarge"], "maxVcpus": 100},
               "gpuready:cpuQueue": {}}
"""Several GPU types (p5e without a price), Spot and on-demand environments, a multi-node one of another type and a
CPU one, under maxVcpus that no type divides."""


@pytest.mark.parametrize("stack, config", [("aws-batch", {}), ("aws-batch-multinode", {}), ("aws-batch", MIXED_BATCH)],
                         ids=["aws-batch", "aws-batch-multinode", "aws-batch-mixed"])
def test_batch_capacity_at_full_scale_is_the_components_own_figure(stack, config):
    """What the component's validation exports (maxTotalGpus, maxUsdPerHour) is what ``gpuready plan`` and the
    capacity caps rule read from the rendered compute environments."""
    rendering = render_stack(stack, **config)
    found = [capacity for _, capacity, _ in capacities(rendering)]
    environments = [r for r in rendering.resources if r.type == aws.BatchComputeEnvironment.TOKEN]
    assert len(found) == len(environments) - ("gpuready:cpuQueue" in config)  # every GPU environment, none other
    assert (rendering.outputs["maxTotalGpus"], rendering.outputs["maxUsdPerHour"]) == \
        (sum(p.max_gpus for p in found), round(sum(p.max_usd_per_hour for p in found), 2))


def test_karpenter_node_pools_are_capped_by_their_gpu_limit(rendered):
    pools = [pool for _, pool in _all({"k": rendered["eks-karpenter"]}, kubernetes.KarpenterNodePool)]
    capped = [(pool, pool.capacity()) for pool in pools if pool.capacity()]
    assert capped and all(c.max_gpus == int(pool.gpu_limit) for pool, c in capped)
    assert all(catalog.find("aws", t) for pool, _ in capped for t in pool.instance_types)


def test_batch_job_definition_needs_are_the_job_config(rendered):
    (job,) = [pool for _, pool in _all(rendered, aws.BatchJobDefinition)][:1]
    (needs,) = list(job.needs())
    config = json.loads(rendered["aws-batch"].config.get("gpuready:job", "{}"))
    assert needs.gpus == config.get("gpus", 1) and needs.vcpus >= 1 and needs.memory_mib >= 4


def test_launch_templates_read_imdsv2_hop_limit_and_encrypted_volumes(rendered):
    templates = {r.name: t for r, t in _all({s: rendered[s] for s in ("aws-batch", "eks")}, aws.LaunchTemplate)}
    assert all(t.http_tokens == "required" and t.hop_limit == 1 and not t.unencrypted_devices
               for t in templates.values())
    assert {name: t.volume_sizes for name, t in templates.items()} == {"gpu-gpu": [200], "eks-gpu": [200],
                                                                       "eks-system": [50]}


def test_helm_releases_read_which_nvidia_daemonsets_run(rendered):
    releases = {r.chart: r for _, r in _all({"eks": rendered["eks"]}, kubernetes.HelmRelease)}
    assert "nvidia-device-plugin" in releases
    assert "device-plugin" in {d.name for d in releases["nvidia-device-plugin"].nvidia_daemonsets}


def test_every_gpu_pool_type_is_a_gpu_pool_reader():
    assert all(issubclass(reader, GpuPool) for reader in (aws.BatchComputeEnvironment, aws.EksNodeGroup,
                                                         gcp.GkeNodePool, azure.AksAgentPool))


def test_a_gpu_pool_is_the_platform_s_that_names_its_reader():
    """A pool's platform is the descriptor that names its reader among its ``pools`` (aws-batch and eks carry the
    same AWS readers, each names its own pool), and the facts the reader reads are that descriptor's."""
    owners = {r: r.platform() for r in by_token().values() if issubclass(r, GpuPool)}
    assert {r: p.name for r, p in owners.items() if r.__module__.startswith("gpuready.")} == {
        aws.BatchComputeEnvironment: "aws-batch", aws.EksNodeGroup: "eks", gcp.GkeNodePool: "gke",
        azure.AksAgentPool: "aks"}
    assert all(p is not None and p.facts is not None for r, p in owners.items() if r.__module__.startswith("gpuready."))
    assert platforms.of_pool(kubernetes.HelmRelease) is None
    pool = aws.EksNodeGroup({"amiType": "AL2_x86_64"})
    assert pool.platform_facts is platforms.require("eks").facts
    assert pool.image_without_driver() is not None and pool.node_image == "eks/AL2_x86_64"


TOKEN = re.compile(r"""["'](aws|gcp|azure-native|kubernetes):[\w./-]+:[A-Z]\w*["']""")
"""A resource type token as a string literal (function tokens end in a lower-case name)."""


def test_only_the_readers_spell_resource_type_tokens():
    """Every other module selects and reads resources through the readers, so a new platform or a renamed provider
    type touches one place."""
    spelled = [f"{path.relative_to(ROOT)}:{n}" for top in ("gpuready", "policies", "components", "stacks")
               for path in sorted((ROOT / top).rglob("*.py")) if "resources" not in path.relative_to(ROOT).parts
               for n, line in enumerate(path.read_text().splitlines(), 1) if TOKEN.search(line)]
    assert spelled == []


def test_a_masked_secret_is_not_read_as_an_absent_setting():
    """``gpuready plan`` describes masked inputs first: an allow-list shown as ``[secret]`` must not read as "public
    to anywhere" but fail, so that plan describes the real value and redacts it."""
    with pytest.raises(AttributeError):
        aws.EksCluster({"vpcConfig": "[secret]"}).authorized_networks
    assert aws.EksCluster({"vpcConfig": {"publicAccessCidrs": ["81.2.69.0/24"]}}).authorized_networks == \
        ["81.2.69.0/24"]


def test_multi_node_facts_agree_with_the_catalog(rendered):
    """The multi-node environment as the rules read it: EC2, one subnet, a cluster group, the p5's 32 EFA."""
    rendering = rendered["aws-batch-multinode"]
    (env,) = [read(r.type, r.inputs) for r in rendering.resources
              if r.type == aws.BatchComputeEnvironment.TOKEN and r.name == "gpu-multi-node"]
    assert (env.resource_type, env.subnet_count, env.has_placement_group) == ("EC2", 1, True)
    (gpu_env,) = [read(r.type, r.inputs) for r in rendering.resources
                  if r.type == aws.BatchComputeEnvironment.TOKEN and r.name == "gpu-gpu-on-demand"]
    assert not gpu_env.has_placement_group and gpu_env.subnet_count == 2
    (template,) = [read(r.type, r.inputs) for r in rendering.resources
                   if r.type == aws.LaunchTemplate.TOKEN and r.name == "gpu-multi-node"]
    assert template.efa_interfaces == catalog.lookup("aws", "p5.48xlarge").efa_interfaces == 32
    (group,) = [read(r.type, r.inputs) for r in rendering.resources if r.type == aws.PlacementGroup.TOKEN]
    assert group.strategy == "cluster"
    (job,) = [read(r.type, r.inputs) for r in rendering.resources
              if r.type == aws.BatchJobDefinition.TOKEN and r.name == "gpu-gpu-multi-node"]
    (container,) = job.containers()
    assert len(job.efa_devices(container)) == 32 and job.memlock_unlimited(container)
    assert rendering.outputs["multiNodeEfaInterfaces"] == 32 and rendering.outputs["multiNodeNodes"] == 2


from tests.gpuready.smoke.conftest import moto_port  # noqa: E402,F401 (the fixture: one moto server for this module)


@pytest.fixture
def moto_endpoint(moto_port, monkeypatch):  # noqa: F811
    """moto's server, reset, answering as Batch would (no docker), with credentials for boto3."""
    from tests.gpuready.smoke.moto_batch import configure_moto

    endpoint = f"http://127.0.0.1:{moto_port}"
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(key, value)
    requests.post(f"{endpoint}/moto-api/reset", timeout=120)  # a first reset loads every backend: slow under load
    configure_moto(endpoint)
    return endpoint


def test_a_batch_environment_reads_alike_from_a_live_api_answer(moto_endpoint):
    """The smoke diagnosis feeds the reader what DescribeComputeEnvironments answers (``maxvCpus``, not Pulumi's
    ``maxVcpus``): recorded here from moto's server, which answers in the API's own shape."""
    from gpuready.resources.aws import BatchComputeEnvironment
    from tests.gpuready.smoke.moto_batch import aws_client, build_queue

    build_queue(moto_endpoint, instance_types=("g6.xlarge", "g6.12xlarge"))
    (live,) = aws_client("batch", moto_endpoint).describe_compute_environments()["computeEnvironments"]
    assert "maxvCpus" in live["computeResources"] and "maxVcpus" not in live["computeResources"]
    env = BatchComputeEnvironment(live)
    assert env.vcpus("max") == 64 and env.minimum == (0, "minVcpus")
    assert env.capacity().max_gpus == 16  # 64 vCPUs: best fill of g6.12xlarge (48 vCPUs, 4 GPUs) and g6.xlarge (4, 1)


def _environment_facts(pool: aws.BatchComputeEnvironment) -> tuple:
    """Every fact the reader gives of a compute environment but its subnets (a stack's are its own)."""
    return (pool.instance_types, pool.image_types, pool.resource_type, pool.vcpus("min"), pool.vcpus("max"),
            pool.minimum, pool.is_gpu, pool.tag_keys, pool.has_placement_group, pool.capacity())


def test_every_batch_environment_fact_reads_alike_from_the_stack_and_a_live_api_answer(moto_endpoint):
    """The same compute environment read from the rendered stack (Pulumi's spelling: ``ec2Configurations``,
    ``maxVcpus``) and from DescribeComputeEnvironments' answer (moto's server, the API's own: ``ec2Configuration``,
    ``maxvCpus``): a Spot environment on the NVIDIA image type kept at 4 vCPUs; then one on an AMI of its own."""
    from tests.gpuready.smoke.moto_batch import aws_client, build_queue

    config = {"gpuready:capacity": ["spot"], "gpuready:minVcpus": 4, "gpuready:maxVcpus": 96,
              "gpuready:instanceTypes": ["g6.xlarge", "g6.12xlarge"]}
    (stack,) = [r.inputs for r in render_stack("aws-batch", **config).resources
                if r.type == aws.BatchComputeEnvironment.TOKEN]
    wanted = stack["computeResources"]
    build_queue(moto_endpoint)  # the subnet, security group, roles and instance profile
    batch = aws_client("batch", moto_endpoint)
    (made,) = batch.describe_compute_environments()["computeEnvironments"]

    def live(name: str, **resources) -> aws.BatchComputeEnvironment:
        network = {key: made["computeResources"][key] for key in ("subnets", "securityGroupIds", "instanceRole")}
        batch.create_compute_environment(
            computeEnvironmentName=name, type="MANAGED", state="ENABLED", serviceRole=made["serviceRole"],
            tags=stack["tags"], computeResources={
                "type": wanted["type"], "allocationStrategy": wanted["allocationStrategy"],
                "minvCpus": int(wanted["minVcpus"]), "maxvCpus": int(wanted["maxVcpus"]),
                "instanceTypes": wanted["instanceTypes"], "spotIamFleetRole": made["serviceRole"],
                "tags": wanted["tags"], **network, **resources})
        (answer,) = batch.describe_compute_environments(computeEnvironments=[name])["computeEnvironments"]
        assert {"minvCpus", "maxvCpus", "ec2Configuration"} <= set(answer["computeResources"])
        return aws.BatchComputeEnvironment(answer)

    env = live("gpu-spot", ec2Configuration=wanted["ec2Configurations"])
    assert _environment_facts(env) == _environment_facts(aws.BatchComputeEnvironment(stack))
    assert (env.image_types, env.resource_type, env.minimum) == (["ECS_AL2023_NVIDIA"], "SPOT", (4, "minVcpus"))
    assert env.subnets == made["computeResources"]["subnets"] and env.subnet_count == 1
    own_ami = live("gpu-own-ami", ec2Configuration=[{"imageType": "ECS_AL2023_NVIDIA", "imageIdOverride": "ami-1"}])
    assert own_ami.image_types is None


def _source(rendering, reader):
    """Where each pool ``reader`` reads comes from, with every reader of the stack beside it (what plan passes)."""
    every = [read(r.type, r.inputs) for r in rendering.resources]
    return [pool.source([x for x in every if x is not None]) for _, pool in _all({"": rendering}, reader)]


def test_a_karpenter_pool_on_a_reservation_prefers_it_and_falls_back_to_on_demand(rendered):
    (source,) = _source(rendered["eks-karpenter-reserved"], kubernetes.KarpenterNodePool)
    config = json.loads(rendered["eks-karpenter-reserved"].config["gpuready:reservation"])
    assert source.kinds == ("reserved", "on-demand") and source.falls_back and not source.only
    assert source.reservation.target == config["id"] and source.reservation.count == config["count"]
    assert source.reservation.end == config["end"]
    (plain_pool,) = _source(rendered["eks-karpenter"], kubernetes.KarpenterNodePool)
    assert plain_pool.kinds == ("on-demand",) and plain_pool.reservation is None
    (nodeclass,) = [c for _, c in _all(rendered, kubernetes.KarpenterNodeClass) if c.reservation]
    assert nodeclass.reservation_terms == [{"id": config["id"]}]


def test_an_auto_mode_pool_on_a_reservation_reads_its_node_class_as_karpenters(rendered):
    (source,) = _source(rendered["eks-automode-reserved"], kubernetes.KarpenterNodePool)
    assert source.kinds == ("reserved", "on-demand") and source.falls_back and not source.only
    assert source.reservation.target == "tags team=ml" and source.reservation.count == 2
    (nodeclass,) = [c for _, c in _all(rendered, kubernetes.AutoModeNodeClass)]
    assert nodeclass.reservation_terms == [{"tags": {"team": "ml"}}] and "open ODCRs" in nodeclass.caveat
    # Auto Mode's pool on the built-in `default` NodeClass (not among the stack's) selects no reservation
    (plain,) = [read(r.type, r.inputs) for r in render_stack("eks", **{"gpuready:autoscaler": "auto-mode"}).resources
                if r.type == kubernetes.KarpenterNodePool.TOKEN]
    assert plain.source([nodeclass]).reservation is None and plain.source([nodeclass]).kinds == ("on-demand",)


@pytest.mark.parametrize("values, only, kinds", [
    (["spot", "on-demand", "reserved"], False, ("reserved", "spot", "on-demand")),
    (["reserved"], True, ("reserved",)),
    (["on-demand", "reserved"], False, ("reserved", "on-demand")),
])
def test_karpenter_capacity_types_read_in_karpenters_order(values, only, kinds):
    pool = kubernetes.KarpenterNodePool({
        "metadata": {"name": "p", "annotations": {"reservations-only.gpuready.io": "true"} if only else {}},
        "spec": {"template": {"spec": {"nodeClassRef": {"kind": "EC2NodeClass", "name": "c"}, "requirements": [
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": values}]}}}})
    by_tags = kubernetes.KarpenterNodeClass({"metadata": {"name": "c"}, "spec": {
        "capacityReservationSelectorTerms": [{"tags": {"team": "ml"}}]}})
    other = kubernetes.KarpenterNodeClass({"metadata": {"name": "other"}, "spec": {
        "capacityReservationSelectorTerms": [{"id": "cr-0123456789abcdef0"}]}})
    source = pool.source([other, by_tags])
    assert source.kinds == kinds and source.only == only and source.falls_back == (len(kinds) > 1)
    assert source.reservation.target == "tags team=ml"
    assert pool.source([other]).reservation is None  # its own class selects none


def test_a_batch_environment_on_a_reservation_reads_it_from_its_launch_template(rendered):
    (source,) = _source(rendered["aws-batch-reserved"], aws.BatchComputeEnvironment)
    assert source.kinds == ("reserved",) and not source.falls_back and source.only
    assert source.reservation.target == "cr-0123456789abcdef0" and source.reservation.count == 2
    assert all(s.reservation is None and s.kinds == ("on-demand",)
               for s in _source(rendered["aws-batch"], aws.BatchComputeEnvironment))


def test_a_fixed_efa_group_reads_as_multi_node_and_its_flavor_names_the_topology_read_back(rendered):
    """The eks-efa variant: an EFA group of 2 p5.48xlarge kept at its size, with the eks stack's teams."""
    (group,) = [pool for r, pool in _all({"eks-efa": rendered["eks-efa"]}, aws.EksNodeGroup) if pool.is_gpu]
    assert group.multi_node == "EFA, up to 2 nodes"
    (_, flavor), = _all({"eks-efa": rendered["eks-efa"]}, kubernetes.ResourceFlavor)
    (_, topology), = _all({"eks-efa": rendered["eks-efa"]}, kubernetes.Topology)
    assert flavor.topology_name == topology.name
    assert topology.levels[-2:] == ["topology.k8s.aws/network-node-layer-3", "kubernetes.io/hostname"]
    plain = [pool for r, pool in _all({"eks": rendered["eks"]}, aws.EksNodeGroup) if pool.is_gpu]
    assert plain and all(pool.multi_node == "" for pool in plain)
    (_, gke_flavor), = _all({"gke": rendered["gke"]}, kubernetes.ResourceFlavor)
    assert gke_flavor.topology_name is None
