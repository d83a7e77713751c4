"""AksGpuCluster under Pulumi's mock runtime: what the GPU agent pool and the cluster receive."""

from __future__ import annotations

import json

import pytest

from gpuready_components.aks_gpu import AksGpuCluster, ClusterArgs, ExistingClusterArgs, facts
from gpuready_components.k8s_gpu import GpuSoftwareOptions, MigArgs
from gpuready_components.k8s_gpu import facts as k8s_facts
from gpuready_components.k8s_gpu.scheduling import schedulable
from gpuready.plan.render import AZURE_CLIENT
from tests.conftest import explicit_dependencies, non_camel_keys

from .helpers import CLUSTER, POOL, RELEASE, ROLE_ASSIGNMENT, args, build


@pytest.fixture
def built(render):
    return build(render)


def test_gpu_pool_is_a_tainted_user_pool_with_aks_driver_that_scales_from_zero(built):
    rendering, aks = built
    (pool,) = rendering.of_type(POOL)
    i = pool.inputs
    assert (i["vmSize"], i["mode"], i["agentPoolName"], i["resourceName"]) == (
        "Standard_NC24ads_A100_v4", "User", "gpu", "ml")
    assert i["nodeTaints"] == ["sku=gpu:NoSchedule"]
    assert i["gpuProfile"] == {"driver": "Install"}
    assert (i["enableAutoScaling"], i["minCount"], i["maxCount"], i["count"]) == (True, 0, 3, 0)
    assert i["scaleSetPriority"] == "Regular" and "scaleSetEvictionPolicy" not in i
    assert i["enableNodePublicIP"] is False and i["osDiskSizeGB"] == 200
    assert "gpuInstanceProfile" not in i
    assert aks.capacity.max_gpus == 3


def test_cluster_uses_entra_id_without_local_accounts_and_workload_identity(built):
    rendering, _ = built
    (cluster,) = rendering.of_type(CLUSTER)
    i = cluster.inputs
    assert i["disableLocalAccounts"] is True and i["aadProfile"] == {"managed": True, "enableAzureRBAC": True}
    assert i["oidcIssuerProfile"] == {"enabled": True}
    assert i["securityProfile"] == {"workloadIdentity": {"enabled": True}}
    (system,) = i["agentPoolProfiles"]
    assert (system["mode"], system["count"], system.get("nodeTaints")) == ("System", 2, None)


def test_device_plugin_chart_tolerates_the_aks_taint_and_selects_aks_gpu_nodes(built):
    rendering, _ = built
    releases = {r.inputs["chart"]: r.inputs["values"] for r in rendering.of_type(RELEASE)}
    assert set(releases) == {"nvidia-device-plugin", "dcgm-exporter"}
    node = {"kubernetes.azure.com/accelerator": "nvidia", "kubernetes.azure.com/agentpool": "gpu"}
    taints = [k8s_facts.Taint("sku", "gpu", "NoSchedule")]
    for values in releases.values():
        assert schedulable(values, node, taints)


def test_spot_pool_deletes_evicted_nodes_and_the_software_tolerates_the_spot_taint(render):
    rendering, _ = build(render, {"spot": True})
    (pool,) = rendering.of_type(POOL)
    assert (pool.inputs["scaleSetPriority"], pool.inputs["scaleSetEvictionPolicy"], pool.inputs["spotMaxPrice"]) == (
        "Spot", "Delete", -1)
    taints = [k8s_facts.Taint("sku", "gpu", "NoSchedule"), k8s_facts.Taint(*facts.SPOT_TAINT)]
    node = {"kubernetes.azure.com/accelerator": "nvidia", "kubernetes.azure.com/scalesetpriority": "spot"}
    for release in rendering.of_type(RELEASE):
        assert schedulable(release.inputs["values"], node, taints), release.inputs["chart"]


def test_mig_sets_the_instance_profile(render):
    rendering, _ = build(render, software=GpuSoftwareOptions(mig=MigArgs(config="all-3g.40gb")))
    (pool,) = rendering.of_type(POOL)
    assert pool.inputs["gpuInstanceProfile"] == "MIG3g"


def test_gpu_operator_skips_the_aks_driver(render):
    rendering, aks = build(render, software=GpuSoftwareOptions(install="gpu-operator"))
    (pool,) = rendering.of_type(POOL)
    assert pool.inputs["gpuProfile"] == {"driver": "None"}
    (release,) = rendering.of_type(RELEASE)
    assert release.inputs["values"]["driver"] == {"enabled": True}
    assert aks.capacity.node_image == "aks/driver-none"


def test_kubeconfig_is_built_from_aks_credential_with_kubelogin(built):
    rendering, _ = built
    (provider,) = rendering.of_type("pulumi:providers:kubernetes")
    assert provider.secret_inputs == {"kubeconfig"}
    config = json.loads(provider.inputs["kubeconfig"])
    assert config["clusters"][0]["cluster"]["server"] == "https://ml-dns.hcp.eastus.azmk8s.io:443"
    assert config["users"][0]["user"]["exec"]["command"] == "kubelogin"
    assert facts.AAD_SERVER_APP_ID in config["users"][0]["user"]["exec"]["args"]


def test_existing_cluster(render):
    rendering, _ = build(render, cluster=None, existing_cluster=ExistingClusterArgs(name="prod", kubeconfig="kc"))
    assert not rendering.of_type(CLUSTER)
    assert not rendering.of_type(ROLE_ASSIGNMENT)  # your cluster, your access
    assert rendering.of_type(POOL)[0].inputs["resourceName"] == "prod"


def test_children_parented_with_stable_names_and_camel_case(built):
    rendering, _ = built
    (component,) = rendering.of_type(facts.TYPE_TOKEN)
    assert sorted(r.name for r in rendering.resources if r.parent == component.urn) == [
        "ml", "ml-deployer-admin", "ml-gpu", "ml-gpu-software", "ml-k8s"]
    for resource in rendering.resources:
        assert list(non_camel_keys(resource.inputs)) == [], resource.urn


def test_operator_mig_names_the_profile_in_the_pools_node_label(render):
    """The operator's MIG manager partitions by the node label; its ClusterPolicy keeps the CRD's all-disabled."""
    rendering, aks = build(render, software=GpuSoftwareOptions(install="gpu-operator",
                                                               mig=MigArgs(config="all-1g.10gb")))
    (pool,) = rendering.of_type(POOL)
    assert pool.inputs["nodeLabels"] == {"nvidia.com/mig.config": "all-1g.10gb"}
    assert "gpuInstanceProfile" not in pool.inputs
    assert aks.gpu_node_labels["nvidia.com/mig.config"] == "all-1g.10gb"
    (release,) = rendering.of_type(RELEASE)
    assert "config" not in release.inputs["values"]["migManager"]


def _software_depends_on(render, **overrides):
    """What the GPU software component (its namespace and Helm releases) waits for."""
    return explicit_dependencies(render, "gpuready:k8s:GpuSoftware", lambda: AksGpuCluster("ml", args(**overrides)))


def test_the_deployer_is_cluster_admin_before_the_gpu_software_installs(render):
    rendering, waits = _software_depends_on(render)
    (grant,) = rendering.of_type(ROLE_ASSIGNMENT)
    (cluster,) = rendering.of_type(CLUSTER)
    i = grant.inputs
    # Azure RBAC on, local accounts off: this role assignment is the only way in for the Helm releases.
    assert cluster.inputs["aadProfile"]["enableAzureRBAC"] is True and cluster.inputs["disableLocalAccounts"] is True
    assert i["principalId"] == AZURE_CLIENT["objectId"] and i["principalType"] == "User"
    assert i["roleDefinitionId"] == (f"/subscriptions/{AZURE_CLIENT['subscriptionId']}/providers/"
                                     "Microsoft.Authorization/roleDefinitions/b1ff04bb-8a4e-4dc4-8eb5-8693973ce19b")
    assert i["scope"].endswith("/providers/Microsoft.ContainerService/managedClusters/ml")
    assert grant.property_dependencies["scope"] == (cluster.urn,)
    assert "ml-deployer-admin" in waits, waits


def test_admin_groups_instead_of_the_deployer(render):
    group = "6f1c2a5e-1111-4222-8333-944455556666"
    rendering, waits = _software_depends_on(render, cluster=ClusterArgs(
        deployer_admin=False, admin_group_object_ids=[group], deployer_principal_type="ServicePrincipal"))
    (cluster,) = rendering.of_type(CLUSTER)
    assert cluster.inputs["aadProfile"]["adminGroupObjectIDs"] == [group]
    (grant,) = rendering.of_type(ROLE_ASSIGNMENT)
    assert (grant.name, grant.inputs["principalId"], grant.inputs["principalType"]) == (
        f"ml-admins-{group}", group, "Group")
    assert f"ml-admins-{group}" in waits
    both, _ = build(render, cluster=ClusterArgs(admin_group_object_ids=[group],
                                                 deployer_principal_type="ServicePrincipal"))
    assert sorted((g.name, g.inputs["principalType"]) for g in both.of_type(ROLE_ASSIGNMENT)) == [
        (f"ml-admins-{group}", "Group"), ("ml-deployer-admin", "ServicePrincipal")]
