"""Kueue's accounting of DRA claims with ``install: dra``, read against Kueue v0.19.2's own Configuration types and
feature gates (tests/data/kueue-0.19.2-config): the mapping is a field Kueue decodes, its DRA integration is on by
default, and the quota resource it charges is the one every ClusterQueue covers."""

from __future__ import annotations

import re

from gpuready_components.k8s_gpu import facts, kueue
from tests.conftest import ROOT

from . import kueue_schemas
from .test_kueue import FLAVORS, TEAMS

KUEUE_CONFIG = ROOT / "tests" / "data" / "kueue-0.19.2-config"


def go_json_fields(source: str, struct: str) -> dict[str, str]:
    """JSON name -> Go type of each field of ``struct`` in Go ``source`` (its ``json:"..."`` tags)."""
    body = re.search(rf"type {struct} struct {{(.*?)\n}}", source, re.S)
    assert body, f"no struct {struct}"
    return {m.group(3): m.group(2) for m in re.finditer(r"^\s*(\w+)\s+(\S+)\s+`json:\"([^,\"]+)", body.group(1), re.M)}


def feature_default(gate: str) -> bool:
    """The default of Kueue's feature ``gate`` at its newest version step in v0.19.2's kube_features.go."""
    source = (KUEUE_CONFIG / "kube_features.go").read_text()
    block = re.search(rf"\n\t{gate}: {{\n(.*?)\n\t}},", source, re.S)
    assert block, gate
    return re.findall(r"Default: (true|false)", block.group(1))[-1] == "true"


def _config(device_classes) -> dict:
    return kueue_schemas.manager_config(kueue_schemas.render(kueue.chart_values({}, device_classes)))


def test_the_dra_mapping_is_a_configuration_field_kueue_decodes():
    types = (KUEUE_CONFIG / "configuration_types.go").read_text()
    config = _config(facts.DRA_KUEUE_MAPPINGS)
    assert go_json_fields(types, "Configuration")["resources"] == "*Resources"
    assert go_json_fields(types, "Resources")["deviceClassMappings"] == "[]DeviceClassMapping"
    fields = go_json_fields(types, "DeviceClassMapping")
    for mapping in config["resources"]["deviceClassMappings"]:
        assert set(mapping) <= set(fields)
        assert {"name", "deviceClassNames"} <= set(mapping)


def test_kueue_charges_gpu_claims_to_the_resource_every_cluster_queue_covers():
    """Kueue charges a ResourceClaimTemplate request of a mapped DeviceClass ``count`` units of the mapping's name,
    and leaves a workload inadmissible whose claim names an unmapped class (Set Up Dynamic Resource Allocation)."""
    (mapping,) = _config(facts.DRA_KUEUE_MAPPINGS)["resources"]["deviceClassMappings"]
    assert mapping["deviceClassNames"] == [facts.DRA_DEVICE_CLASS]
    queues = [o for o in kueue.objects(TEAMS, FLAVORS) if o["kind"] in ("ClusterQueue", "Cohort")]
    assert queues
    for queue in queues:
        for group in queue["spec"].get("resourceGroups", []):
            assert mapping["name"] in group["coveredResources"], queue["metadata"]["name"]


def test_kueues_dra_integration_is_on_by_default_in_the_pinned_release():
    """Nothing to switch on: the mapping alone turns the accounting on (the gate was DynamicResourceAllocation
    before Kueue 0.18, setup_dra.md)."""
    assert feature_default("KueueDRAIntegration")
    assert "KueueDRAIntegration" in (KUEUE_CONFIG / "setup_dra.md").read_text()


def test_without_dra_the_configuration_has_no_mapping():
    assert "resources" not in _config({})
    assert "resources" not in kueue.config()


def test_a_misnamed_field_would_be_caught():
    types = (KUEUE_CONFIG / "configuration_types.go").read_text()
    assert "deviceClasses" not in go_json_fields(types, "DeviceClassMapping")
    assert not feature_default("KueueDRAIntegrationConsumableCapacity")  # an alpha gate reads false
