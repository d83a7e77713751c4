"""AksGpuCluster under Pulumi's mock runtime: what the GPU agent pool and the cluster receive."""

from __future__ import annotations

import json

import pytest

from components.aks_gpu import ExistingClusterArgs, facts
from components.k8s_gpu import GpuSoftwareOptions, MigArgs
from components.k8s_gpu import facts as k8s_facts
from components.k8s_gpu.scheduling import schedulable
from tests.conftest import non_camel_keys

from .helpers import CLUSTER, POOL, RELEASE, build


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
    assert rendering.of_type(POOL)[0].inputs["resourceName"] == "prod"


def test_children_parented_with_stable_names_and_camel_case(built):
    rendering, _ = built
    (component,) = rendering.of_type(facts.TYPE_TOKEN)
    assert sorted(r.name for r in rendering.resources if r.parent == component.urn) == [
        "ml", "ml-gpu", "ml-gpu-software", "ml-k8s"]
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
