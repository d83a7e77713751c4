"""Every AKS value the component sends that Azure constrains, against azure-mgmt-containerservice's enums."""

from __future__ import annotations

import pytest
from azure.mgmt.containerservice import models

from gpuready_components.aks_gpu import CapacityReservationGroupArgs, facts
from gpuready_components.k8s_gpu import GpuSoftwareOptions, MigArgs

from .helpers import CLUSTER, POOL, build


def _values(enum) -> set[str]:
    return {member.value for member in enum}


def test_facts_are_aks_enum_values():
    assert {facts.GPU_DRIVER_INSTALL, facts.GPU_DRIVER_NONE} == _values(models.GPUDriver)
    assert set(facts.MIG_PROFILES.values()) == _values(models.GPUInstanceProfile)
    assert {facts.PRIORITY_REGULAR, facts.PRIORITY_SPOT} == _values(models.ScaleSetPriority)
    assert {facts.MODE_USER, facts.MODE_SYSTEM} <= _values(models.AgentPoolMode)
    assert facts.SPOT_EVICTION_POLICY in _values(models.ScaleSetEvictionPolicy)
    assert facts.OS_SKU in _values(models.OSSKU)


@pytest.mark.parametrize("pool,software", [
    ({}, GpuSoftwareOptions()),
    ({"spot": True}, GpuSoftwareOptions(mig=MigArgs(config="all-2g.20gb"))),
    ({}, GpuSoftwareOptions(install="gpu-operator")),
    ({"availability_zones": ["1"], "reservation": CapacityReservationGroupArgs(
        group_id="/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/capacityReservationGroups/a100",
        zones=["1"], count=2)}, GpuSoftwareOptions()),
])
def test_rendered_pool_values_are_aks_enum_values(render, pool, software):
    rendering, _ = build(render, pool, software=software)
    (agent_pool,) = rendering.of_type(POOL)
    i = agent_pool.inputs
    assert i["gpuProfile"]["driver"] in _values(models.GPUDriver)
    assert i["scaleSetPriority"] in _values(models.ScaleSetPriority)
    assert i["mode"] in _values(models.AgentPoolMode)
    assert i["osSKU"] in _values(models.OSSKU)
    if "gpuInstanceProfile" in i:
        assert i["gpuInstanceProfile"] in _values(models.GPUInstanceProfile)
    if "scaleSetEvictionPolicy" in i:
        assert i["scaleSetEvictionPolicy"] in _values(models.ScaleSetEvictionPolicy)
    # Every property we set is a REST property of an agent pool in the SDK's model.
    properties = models.AgentPoolManagedClusterAgentPoolProfileProperties()
    rest_names = {f._rest_name for f in properties._attr_to_rest_field.values()}
    assert set(i) - {"resourceGroupName", "resourceName", "agentPoolName"} <= rest_names, \
        set(i) - rest_names
    (cluster,) = rendering.of_type(CLUSTER)
    system = cluster.inputs["agentPoolProfiles"][0]
    assert system["mode"] in _values(models.AgentPoolMode)


def test_every_catalog_vm_size_makes_a_pool_and_mig_sizes_get_a_valid_profile():
    from gpuready_components import catalog
    from gpuready_components.aks_gpu.validation import check
    from gpuready_components.k8s_gpu.validation import mig_profiles

    from .helpers import args

    for row in (r for r in catalog.rows() if r.cloud == "azure"):
        assert check(args({"vm_size": row.name})).max_gpus == 3 * row.gpus, row.name
        if row.gpu_model in ("A100", "H100", "H200"):
            smallest = "all-" + mig_profiles(row.gpu_model, row.gpu_memory_gib)[0]
            mig = check(args({"vm_size": row.name}, software=GpuSoftwareOptions(mig=MigArgs(config=smallest))))
            assert mig.gpu_instance_profile == "MIG1g" and "MIG1g" in _values(models.GPUInstanceProfile), row.name


def test_admin_access_values_are_azure_values(render):
    from pulumi_azure_native.authorization import PrincipalType

    from gpuready_components.aks_gpu import ClusterArgs

    assert {*facts.DEPLOYER_PRINCIPAL_TYPES, facts.GROUP_PRINCIPAL_TYPE} <= _values(PrincipalType)
    rendering, _ = build(render, cluster=ClusterArgs(admin_group_object_ids=["6f1c2a5e-1111-4222-8333-944455556666"]))
    (cluster,) = rendering.of_type(CLUSTER)
    aad = models.ManagedClusterAADProfile()
    assert set(cluster.inputs["aadProfile"]) <= {f._rest_name for f in aad._attr_to_rest_field.values()}
    assert {g.inputs["principalType"] for g in rendering.of_type("azure-native:authorization:RoleAssignment")} <= \
        _values(PrincipalType)


def test_an_agent_pool_names_no_cpu_architecture_so_an_arm_size_needs_no_setting():
    """What docs/platforms/nvl72.md says of ND GB200 v6 (Grace arm64): AKS's agent pool API has no architecture
    field; the VM size decides it, and the stack sets only the size (the OS SKU is the same Ubuntu)."""
    import re

    import azure.mgmt.containerservice.models._models as source

    text = open(source.__file__).read()
    start = text.index("class ManagedClusterAgentPoolProfileProperties")
    fields = set(re.findall(r"^    (\w+): ", text[start:text.index("\nclass ", start + 1)], re.M))
    assert {"vm_size", "os_sku", "os_type", "gpu_profile"} <= fields
    assert [f for f in fields if "arch" in f] == []
    assert facts.OS_SKU in _values(models.OSSKU)
