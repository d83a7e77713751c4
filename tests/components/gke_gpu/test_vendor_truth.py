"""Every GKE value the component sends that Google constrains, against the container v1 discovery document that
google-api-python-client ships."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from gpuready_components.gke_gpu import GpuSharingArgs, facts
from gpuready_components.k8s_gpu import GpuSoftwareOptions

from tests.conftest import one

from .helpers import CLUSTER, NODE_POOL, build


@pytest.fixture(scope="module")
def schemas():
    path = resources.files("googleapiclient").joinpath("discovery_cache/documents/container.v1.json")
    return json.loads(path.read_text())["schemas"]


def _enum(schemas, schema: str, prop: str) -> list[str]:
    spec = schemas[schema]["properties"][prop]
    return spec.get("enum") or spec["items"]["enum"]


def test_facts_are_gke_enum_values(schemas):
    versions = _enum(schemas, "GPUDriverInstallationConfig", "gpuDriverVersion")
    assert set(facts.DRIVER_INSTALLED) | {facts.DRIVER_DISABLED} <= set(versions)
    assert set(facts.SHARING_STRATEGIES) == set(_enum(schemas, "GPUSharingConfig", "gpuSharingStrategy")) - {
        "GPU_SHARING_STRATEGY_UNSPECIFIED"}
    assert facts.GPU_TAINT_EFFECT in _enum(schemas, "NodeTaint", "effect")
    assert facts.WORKLOAD_METADATA_MODE in _enum(schemas, "WorkloadMetadataConfig", "mode")
    assert set(facts.RELEASE_CHANNELS) == set(_enum(schemas, "ReleaseChannel", "channel")) - {"UNSPECIFIED"}
    assert set(facts.MONITORING_COMPONENTS) <= set(_enum(schemas, "MonitoringComponentConfig", "enableComponents"))


@pytest.mark.parametrize("pool,software", [
    ({}, GpuSoftwareOptions()),
    ({"gpu_sharing": GpuSharingArgs(strategy="TIME_SHARING")}, GpuSoftwareOptions()),
    ({}, GpuSoftwareOptions(install="gpu-operator")),
])
def test_rendered_enum_values_are_gke_enum_values(render, schemas, pool, software):
    rendering, _ = build(render, pool, software=software)
    config = one(rendering, NODE_POOL, "ml-gpu").inputs["nodeConfig"]
    accelerator = config["guestAccelerators"][0]
    assert accelerator["gpuDriverInstallationConfig"]["gpuDriverVersion"] in _enum(
        schemas, "GPUDriverInstallationConfig", "gpuDriverVersion")
    if "gpuSharingConfig" in accelerator:
        assert accelerator["gpuSharingConfig"]["gpuSharingStrategy"] in _enum(
            schemas, "GPUSharingConfig", "gpuSharingStrategy")
    assert {t["effect"] for t in config["taints"]} <= set(_enum(schemas, "NodeTaint", "effect"))
    assert config["workloadMetadataConfig"]["mode"] in _enum(schemas, "WorkloadMetadataConfig", "mode")
    (cluster,) = rendering.of_type(CLUSTER)
    assert cluster.inputs["releaseChannel"]["channel"] in _enum(schemas, "ReleaseChannel", "channel")
    # Every field we set in the node config is a field of the API's NodeConfig (pulumi keeps the API's names,
    # except the accelerators list, which the API calls accelerators).
    api_fields = set(schemas["NodeConfig"]["properties"]) | {"guestAccelerators"}
    assert set(config) <= api_fields, set(config) - api_fields


@pytest.fixture(scope="module")
def compute():
    path = resources.files("googleapiclient").joinpath("discovery_cache/documents/compute.v1.json")
    return json.loads(path.read_text())["schemas"]


def test_cloud_nat_values_are_compute_api_values(render, compute):
    assert facts.NAT_IP_ALLOCATION in _enum(compute, "RouterNat", "natIpAllocateOption")
    assert facts.NAT_SOURCE_SUBNETWORKS in _enum(compute, "RouterNat", "sourceSubnetworkIpRangesToNat")
    assert set(facts.NAT_SUBNETWORK_RANGES) <= set(_enum(compute, "RouterNatSubnetworkToNat", "sourceIpRangesToNat"))
    assert facts.NAT_LOG_FILTER in _enum(compute, "RouterNatLogConfig", "filter")
    rendering, _ = build(render)
    (nat,) = rendering.of_type("gcp:compute/routerNat:RouterNat")
    # Pulumi pluralises the API's sourceIpRangesToNat; every other field keeps the API's name.
    assert set(nat.inputs) - {"router", "region", "project"} <= set(compute["RouterNat"]["properties"])
    (subnet_to_nat,) = nat.inputs["subnetworks"]
    assert set(subnet_to_nat["sourceIpRangesToNats"]) <= set(
        _enum(compute, "RouterNatSubnetworkToNat", "sourceIpRangesToNat"))
    assert set(nat.inputs["logConfig"]) <= set(compute["RouterNatLogConfig"]["properties"])
    (subnet,) = rendering.of_type("gcp:compute/subnetwork:Subnetwork")
    assert set(subnet.inputs) - {"project"} <= set(compute["Subnetwork"]["properties"])
    for secondary in subnet.inputs["secondaryIpRanges"]:
        assert set(secondary) <= set(compute["SubnetworkSecondaryRange"]["properties"])
    (network,) = rendering.of_type("gcp:compute/network:Network")
    assert set(network.inputs) - {"project"} <= set(compute["Network"]["properties"])
    (router,) = rendering.of_type("gcp:compute/router:Router")
    assert set(router.inputs) - {"project"} <= set(compute["Router"]["properties"])


def test_an_nvl72_pool_is_placed_by_a_1x72_workload_policy_compute_and_gke_take(render, schemas, compute):
    """An A4X pool: a workload policy (HIGH_THROUGHPUT, accelerator topology 1x72) and the node pool's placement policy
    naming it, type COMPACT; both spelled as Compute Engine's and GKE's discovery documents say. Other pools: none."""
    from gpuready_components.gke_gpu import ClusterArgs, ReservationArgs

    assert facts.NVL72_WORKLOAD_POLICY["type"] in _enum(compute, "ResourcePolicyWorkloadPolicy", "type")
    assert "acceleratorTopology" in compute["ResourcePolicyWorkloadPolicy"]["properties"]
    assert facts.NVL72_PLACEMENT_TYPE in _enum(schemas, "PlacementPolicy", "type")
    assert "policyName" in schemas["PlacementPolicy"]["properties"]
    rack = {"machine_type": "a4x-highgpu-4g", "max_nodes": 18, "node_locations": ["us-central1-a"],
            "reservation": ReservationArgs(affinity="specific", name="gb200/reservationBlocks/b/reservationSubBlocks/s")}
    rendering, _ = build(render, rack, software=GpuSoftwareOptions(install="dra", compute_domains=True),
                         cluster=ClusterArgs(kubernetes_version="1.34"))
    (policy,) = [r for r in rendering.resources if r.type == "gcp:compute/resourcePolicy:ResourcePolicy"]
    assert (policy.name, policy.inputs["region"], policy.inputs["workloadPolicy"]) == \
        ("ml-nvl72", "us-central1", {"type": "HIGH_THROUGHPUT", "acceleratorTopology": "1x72"})
    (pool,) = [r for r in rendering.resources if r.type == NODE_POOL and r.name == "ml-gpu"]
    assert pool.inputs["placementPolicy"]["type"] == "COMPACT" and pool.inputs["placementPolicy"]["policyName"]
    plain, _ = build(render)
    assert not [r for r in plain.resources if r.type == "gcp:compute/resourcePolicy:ResourcePolicy"]
    assert "placementPolicy" not in one(plain, NODE_POOL, "ml-gpu").inputs
