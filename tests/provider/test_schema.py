"""The component package's schema: generated from the args dataclasses, checked in, and what each language's SDK is
generated from, so it must describe every input, keep the components' type tokens and offer the validation tables'
values as enums."""

from __future__ import annotations

import dataclasses
import importlib
import json

import pytest

from gpuready_components import package
from tests.conftest import ROOT

CHECKED_IN = ROOT / "provider" / "schema.json"
SCHEMA = package.schema()


def test_the_checked_in_schema_is_the_one_the_args_give():
    assert CHECKED_IN.read_text() == package.schema_text(), \
        "the components' args changed: python -m gpuready_components.package > provider/schema.json"


def test_the_resources_keep_the_components_own_type_tokens():
    tokens = {importlib.import_module(s.args.__module__.rpartition(".")[0] + ".facts").TYPE_TOKEN for s in package.served()}
    assert set(SCHEMA["resources"]) == tokens == {
        "gpuready:aws:BatchGpuEnvironment", "gpuready:aws:EksGpuCluster", "gpuready:gcp:GkeGpuCluster",
        "gpuready:azure:AksGpuCluster", "gpuready:k8s:GpuSoftware"}
    assert all(r["isComponent"] for r in SCHEMA["resources"].values())
    assert all(t.split(":")[1] in ("aws", "gcp", "azure", "k8s", "index") for t in SCHEMA["types"])


def _properties():
    for token, resource in SCHEMA["resources"].items():
        for name, prop in resource["inputProperties"].items():
            yield f"{token}.{name}", prop
    for token, typ in SCHEMA["types"].items():
        for name, prop in typ.get("properties", {}).items():
            yield f"{token}.{name}", prop


def test_every_input_and_output_is_described():
    assert [where for where, prop in _properties() if not prop.get("description")] == []
    assert [f"{t}.{k}" for t, r in SCHEMA["resources"].items() for k, p in r["properties"].items()
            if not p.get("description")] == []


def test_every_field_of_every_args_dataclass_is_an_input():
    """No field is left out of the schema: each args dataclass reached from a component is a type (or the
    resource's inputs), with every field under its camelCase name, required where it has no default."""
    for served in package.served():
        args = served.args
        inputs = SCHEMA["resources"][served.token]["inputProperties"]
        assert list(inputs) == [package.camel(f.name) for f in dataclasses.fields(args)]
    gpu_job = SCHEMA["types"]["gpuready:aws:GpuJob"]
    assert "required" not in gpu_job and gpu_job["properties"]["vcpus"] == {
        "type": "integer", "plain": True, "description": "vCPUs per job (``VCPU``)."}
    batch = SCHEMA["resources"]["gpuready:aws:BatchGpuEnvironment"]
    assert batch["requiredInputs"] == ["instanceTypes", "subnetIds"]
    assert batch["inputProperties"]["subnetIds"]["type"] == "array" and "plain" not in \
        batch["inputProperties"]["subnetIds"], "a pulumi.Input field takes an Output from the SDK"
    assert batch["inputProperties"]["maxVcpus"]["plain"], "validation reads plain values"


@pytest.mark.parametrize("key", list(package.choices()), ids=lambda key: f"{key[0].__name__}.{key[1]}")
def test_each_enum_is_a_field_and_its_validation_table(key):
    cls, field = key
    assert field in {f.name for f in dataclasses.fields(cls)}
    choice = package.choices()[key]
    enum = next(t for token, t in SCHEMA["types"].items() if token.endswith(f":{choice.name}"))
    assert [v["value"] for v in enum["enum"]] == list(choice.values())
    names = [v["name"] for v in enum["enum"]]
    assert len(set(names)) == len(names) and all(n.isidentifier() for n in names)


def test_enums_hold_the_tables_validation_checks():
    types = SCHEMA["types"]
    values = {t.split(":")[2]: [v["value"] for v in types[t]["enum"]] for t in types if "enum" in types[t]}
    assert values["BatchCapacity"] == ["on-demand", "spot"]
    assert values["CapacityType"] == ["ON_DEMAND", "SPOT"]
    assert values["InstallMode"] == ["device-plugin", "gpu-operator", "dra"]
    assert "AL2023_x86_64_NVIDIA" in values["AmiType"]
    batch = SCHEMA["resources"]["gpuready:aws:BatchGpuEnvironment"]["inputProperties"]
    assert batch["capacity"]["items"]["$ref"] == "#/types/gpuready:aws:BatchCapacity"
    modes = {v["value"]: v.get("description") for v in types["gpuready:aws:AutoscalerMode"]["enum"]}
    assert modes["karpenter"].startswith("Karpenter launches GPU instances")


def test_the_schema_is_json_the_engine_reads():
    text = CHECKED_IN.read_text()
    assert json.loads(text)["name"] == "gpuready" and json.loads(text)["version"] == package.version()
    refs = [p.get("$ref") or p.get("items", {}).get("$ref") for _, p in _properties()]
    assert {r.removeprefix("#/types/") for r in refs if r and r.startswith("#/types/")} <= set(SCHEMA["types"])


def test_the_node_groups_reservation_is_served_with_its_enums_and_constructed_as_its_args():
    from gpuready_components.eks_gpu import CapacityReservationArgs, EksGpuClusterArgs, reservation

    types = SCHEMA["types"]
    node_group = types["gpuready:aws:GpuNodeGroup"]["properties"]["reservation"]
    assert node_group["$ref"] == "#/types/gpuready:aws:CapacityReservation"
    served = types["gpuready:aws:CapacityReservation"]
    assert served["required"] == ["kind"]
    assert served["properties"]["kind"]["$ref"] == "#/types/gpuready:aws:ReservationKind"
    assert [v["value"] for v in types["gpuready:aws:ReservationKind"]["enum"]] == list(reservation.KINDS)
    assert [v["value"] for v in types["gpuready:aws:ReservationPreference"]["enum"]] == list(reservation.PREFERENCES)
    args = package.to_args(EksGpuClusterArgs, {
        "nodeGroup": {"instanceTypes": ["p5.48xlarge"],
                      "reservation": {"kind": "capacity-block", "id": "cr-0123456789abcdef0", "count": 2}},
        "subnetIds": ["subnet-aaaaaaaa"]})
    assert args.node_group.reservation == CapacityReservationArgs(kind="capacity-block", id="cr-0123456789abcdef0",
                                                                  count=2)


def test_the_agent_pools_reservation_is_served_and_constructed_as_its_args():
    from gpuready_components.aks_gpu import AksGpuClusterArgs, CapacityReservationGroupArgs

    types = SCHEMA["types"]
    pool = types["gpuready:azure:GpuAgentPool"]["properties"]["reservation"]
    assert pool["$ref"] == "#/types/gpuready:azure:CapacityReservationGroup"
    served = types["gpuready:azure:CapacityReservationGroup"]
    assert served["required"] == ["groupId"]
    assert served["properties"]["zones"]["items"]["$ref"] == "#/types/gpuready:azure:AvailabilityZone"
    group = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/capacityReservationGroups/g"
    args = package.to_args(AksGpuClusterArgs, {
        "resourceGroupName": "ml", "location": "eastus",
        "nodePool": {"vmSize": "Standard_NC24ads_A100_v4",
                     "reservation": {"groupId": group, "count": 2, "zones": ["1"]}}})
    assert args.node_pool.reservation == CapacityReservationGroupArgs(group_id=group, count=2, zones=["1"])
