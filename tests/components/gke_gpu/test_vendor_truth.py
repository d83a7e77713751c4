"""Every GKE value the component sends that Google constrains, against the container v1 discovery document that
google-api-python-client ships."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from components.gke_gpu import GpuSharingArgs, facts
from components.k8s_gpu import GpuSoftwareOptions

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
