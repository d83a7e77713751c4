"""GkeGpuCluster under Pulumi's mock runtime: what the GPU node pool, the cluster and the node account receive."""

from __future__ import annotations

import json

import pytest

from gpuready_components.gke_gpu import ClusterArgs, ExistingClusterArgs, GkeGpuCluster, GpuSharingArgs, facts
from gpuready_components.k8s_gpu import GpuSoftwareOptions, MigArgs
from tests.conftest import explicit_dependencies, non_camel_keys

from tests.conftest import one

from .helpers import CLUSTER, NODE_POOL, RELEASE, args, build


@pytest.fixture
def built(render):
    return build(render)


def test_gpu_pool_has_the_catalog_accelerator_gke_driver_taint_and_scales_from_zero(built):
    rendering, gke = built
    pool = one(rendering, NODE_POOL, "ml-gpu")
    config = pool.inputs["nodeConfig"]
    assert config["machineType"] == "g2-standard-8" and config["imageType"] == "COS_CONTAINERD"
    assert config["guestAccelerators"] == [{"type": "nvidia-l4", "count": 1,
                                            "gpuDriverInstallationConfig": {"gpuDriverVersion": "DEFAULT"}}]
    assert config["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]
    assert pool.inputs["autoscaling"] == {"totalMinNodeCount": 0, "totalMaxNodeCount": 3, "locationPolicy": "ANY"}
    assert pool.inputs["initialNodeCount"] == 0
    assert "spot" not in config and "labels" not in config
    assert gke.gpu_node_labels == {"cloud.google.com/gke-accelerator": "nvidia-l4"}


def test_nodes_are_shielded_use_workload_identity_and_a_least_privilege_account(built):
    rendering, _ = built
    config = one(rendering, NODE_POOL, "ml-gpu").inputs["nodeConfig"]
    assert config["shieldedInstanceConfig"] == {"enableSecureBoot": True, "enableIntegrityMonitoring": True}
    assert config["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
    assert config["serviceAccount"] == "ml-gpu-nodes@ml-project.iam.gserviceaccount.com"
    assert config["metadata"] == {"disable-legacy-endpoints": "true"}
    roles = sorted(m.inputs["role"] for m in rendering.of_type("gcp:projects/iAMMember:IAMMember"))
    assert roles == sorted(facts.NODE_SERVICE_ACCOUNT_ROLES)
    assert all(m.inputs["member"] == "serviceAccount:ml-gpu-nodes@ml-project.iam.gserviceaccount.com"
               for m in rendering.of_type("gcp:projects/iAMMember:IAMMember"))


def test_cluster_is_private_with_workload_identity_and_managed_dcgm(built):
    rendering, gke = built
    (cluster,) = rendering.of_type(CLUSTER)
    i = cluster.inputs
    assert i["removeDefaultNodePool"] is True
    assert i["workloadIdentityConfig"] == {"workloadPool": "ml-project.svc.id.goog"}
    assert i["privateClusterConfig"]["enablePrivateNodes"] is True
    assert i["monitoringConfig"] == {"enableComponents": ["SYSTEM_COMPONENTS", "DCGM"],
                                     "managedPrometheus": {"enabled": True}}
    assert i["releaseChannel"] == {"channel": "REGULAR"} and i["enableShieldedNodes"] is True
    # GKE provides driver, device plugin, GPU labels and DCGM metrics: no NVIDIA chart at all.
    assert rendering.of_type(RELEASE) == [] and gke.software.namespace is None
    system = one(rendering, NODE_POOL, "ml-system")
    assert "guestAccelerators" not in system.inputs["nodeConfig"] and "taints" not in system.inputs["nodeConfig"]


def test_dcgm_exporter_when_managed_dcgm_is_off(render):
    from gpuready_components.gke_gpu import ClusterArgs

    rendering, _ = build(render, cluster=ClusterArgs(managed_dcgm=False))
    (release,) = rendering.of_type(RELEASE)
    assert release.inputs["chart"] == "dcgm-exporter"
    assert release.inputs["values"]["extraHostVolumes"][0]["hostPath"] == "/home/kubernetes/bin/nvidia"
    assert "monitoringConfig" not in one(rendering, CLUSTER, "ml").inputs


def test_gpu_operator_disables_gke_driver_and_device_plugin(render):
    rendering, gke = build(render, software=GpuSoftwareOptions(install="gpu-operator"))
    config = one(rendering, NODE_POOL, "ml-gpu").inputs["nodeConfig"]
    assert config["guestAccelerators"][0]["gpuDriverInstallationConfig"] == {
        "gpuDriverVersion": "INSTALLATION_DISABLED"}
    assert config["labels"] == {"gke-no-default-nvidia-gpu-device-plugin": "true"}
    assert config["imageType"] == "UBUNTU_CONTAINERD"
    assert config["shieldedInstanceConfig"]["enableSecureBoot"] is False
    (release,) = rendering.of_type(RELEASE)
    values = release.inputs["values"]
    assert (values["driver"], values["toolkit"]["enabled"], values["devicePlugin"]) == (
        {"enabled": True}, True, {"enabled": True})
    assert values["toolkit"]["env"] == [{"name": "RUNTIME_CONFIG_SOURCE", "value": "file"}]  # GKE 1.33+
    assert gke.capacity.node_image == "gke/driver-disabled"


def test_sharing_mig_spot_and_n1(render):
    rendering, gke = build(render, {"gpu_sharing": GpuSharingArgs(strategy="MPS", max_clients_per_gpu=8),
                                    "spot": True, "node_locations": ["us-central1-a"]})
    pool = one(rendering, NODE_POOL, "ml-gpu")
    accelerator = pool.inputs["nodeConfig"]["guestAccelerators"][0]
    assert accelerator["gpuSharingConfig"] == {"gpuSharingStrategy": "MPS", "maxSharedClientsPerGpu": 8}
    assert pool.inputs["nodeConfig"]["spot"] is True and pool.inputs["nodeLocations"] == ["us-central1-a"]
    assert gke.outputs["gpuSharing"] == "mps"  # the probe warns, not fails, on memory other pods hold
    assert build(render, {"gpu_sharing": GpuSharingArgs(strategy="TIME_SHARING")})[1].outputs["gpuSharing"] == \
        "time-slicing"

    rendering, gke = build(render, {"machine_type": "a2-ultragpu-1g"}, software=GpuSoftwareOptions(
        mig=MigArgs(config="all-1g.10gb")))
    accelerator = one(rendering, NODE_POOL, "ml-gpu").inputs["nodeConfig"]["guestAccelerators"][0]
    assert accelerator["gpuPartitionSize"] == "1g.10gb" and accelerator["type"] == "nvidia-a100-80gb"
    assert gke.outputs["gpuSharing"] == "mig"
    assert "gpuSharing" not in build(render, {})[1].outputs  # each GPU scheduled whole: no output

    rendering, gke = build(render, {"machine_type": "n1-standard-16", "accelerator": "nvidia-tesla-t4",
                                    "accelerator_count": 2})
    accelerator = one(rendering, NODE_POOL, "ml-gpu").inputs["nodeConfig"]["guestAccelerators"][0]
    assert (accelerator["type"], accelerator["count"]) == ("nvidia-tesla-t4", 2)
    assert gke.capacity.max_gpus == 6


def test_existing_cluster_and_kubeconfig(render):
    rendering, _ = build(render, cluster=None, existing_cluster=ExistingClusterArgs(name="prod", kubeconfig="kc"))
    assert not rendering.of_type(CLUSTER)
    assert one(rendering, NODE_POOL, "ml-gpu").inputs["cluster"] == "prod"
    assert [p.name for p in rendering.of_type(NODE_POOL)] == ["ml-gpu"]


def test_kubeconfig_uses_the_gke_auth_plugin_and_is_secret(built):
    rendering, _ = built
    (provider,) = rendering.of_type("pulumi:providers:kubernetes")
    assert provider.secret_inputs == {"kubeconfig"}
    config = json.loads(provider.inputs["kubeconfig"])
    assert config["clusters"][0]["cluster"]["server"] == "https://203.0.113.10"
    assert config["users"][0]["user"]["exec"]["command"] == "gke-gcloud-auth-plugin"


def test_children_parented_with_stable_names_and_camel_case(built):
    rendering, _ = built
    (component,) = rendering.of_type(facts.TYPE_TOKEN)
    direct = sorted(r.name for r in rendering.resources if r.parent == component.urn)
    assert direct == ["ml", "ml-gpu", "ml-gpu-software", "ml-k8s", "ml-nat", "ml-network", "ml-nodes",
                      "ml-nodes-artifactregistry-reader", "ml-nodes-logging-logWriter",
                      "ml-nodes-monitoring-metricWriter", "ml-nodes-monitoring-viewer",
                      "ml-nodes-stackdriver-resourceMetadata-writer", "ml-router", "ml-subnet", "ml-system"]
    for resource in rendering.resources:
        assert list(non_camel_keys(resource.inputs)) == [], resource.urn


def test_gpu_operator_on_gkes_own_driver(render):
    """NVIDIA's GKE guide: GKE's driver, its device plugin off by label, the operator's toolkit and device plugin."""
    rendering, gke = build(render, {"machine_type": "a2-ultragpu-1g", "gpu_driver_version": "LATEST"},
                           software=GpuSoftwareOptions(install="gpu-operator", mig=MigArgs(config="all-1g.10gb")))
    assert gke.capacity.node_image == "gke/driver-installed-operator"
    config = one(rendering, NODE_POOL, "ml-gpu").inputs["nodeConfig"]
    accelerator = config["guestAccelerators"][0]
    assert accelerator["gpuDriverInstallationConfig"] == {"gpuDriverVersion": "LATEST"}
    assert "gpuPartitionSize" not in accelerator  # the operator's MIG manager partitions, by the node label
    assert config["labels"] == {"gke-no-default-nvidia-gpu-device-plugin": "true",
                                "nvidia.com/mig.config": "all-1g.10gb"}
    assert gke.gpu_node_labels["nvidia.com/mig.config"] == "all-1g.10gb"
    assert config["shieldedInstanceConfig"]["enableSecureBoot"] is True  # GKE's driver is signed
    (release,) = rendering.of_type(RELEASE)
    values = release.inputs["values"]
    assert (values["driver"], values["toolkit"]["enabled"], values["devicePlugin"]["enabled"]) == (
        {"enabled": False}, True, True)
    assert values["hostPaths"] == {"driverInstallDir": "/home/kubernetes/bin/nvidia"}
    assert values["migManager"] == {"enabled": True, "env": [{"name": "WITH_REBOOT", "value": "true"}]}
    (quota,) = rendering.of_type("kubernetes:core/v1:ResourceQuota")
    assert quota.urn in release.dependencies


def test_operator_mig_with_the_operators_driver_labels_the_pool(render):
    rendering, _ = build(render, {"machine_type": "a2-highgpu-1g"},
                         software=GpuSoftwareOptions(install="gpu-operator", mig=MigArgs(config="all-1g.5gb")))
    config = one(rendering, NODE_POOL, "ml-gpu").inputs["nodeConfig"]
    assert config["labels"]["nvidia.com/mig.config"] == "all-1g.5gb"
    assert "gpuPartitionSize" not in config["guestAccelerators"][0]


ROUTER_NAT = "gcp:compute/routerNat:RouterNat"


def _software_depends_on(render, **overrides):
    """What the GPU software component (its namespace and Helm releases) waits for."""
    return explicit_dependencies(render, "gpuready:k8s:GpuSoftware", lambda: GkeGpuCluster("ml", args(**overrides)))


def test_private_nodes_reach_the_internet_through_cloud_nat_on_the_network_created(render):
    rendering, waits = _software_depends_on(render, cluster=ClusterArgs(managed_dcgm=False))
    (network,) = rendering.of_type("gcp:compute/network:Network")
    (subnet,) = rendering.of_type("gcp:compute/subnetwork:Subnetwork")
    (router,) = rendering.of_type("gcp:compute/router:Router")
    (nat,) = rendering.of_type(ROUTER_NAT)
    cluster = one(rendering, CLUSTER, "ml")
    assert cluster.inputs["privateClusterConfig"]["enablePrivateNodes"] is True
    assert network.inputs["autoCreateSubnetworks"] is False
    assert (subnet.inputs["region"], subnet.inputs["ipCidrRange"], subnet.inputs["privateIpGoogleAccess"]) == (
        "us-central1", "10.10.0.0/20", True)
    assert {r["rangeName"]: r["ipCidrRange"] for r in subnet.inputs["secondaryIpRanges"]} == {
        "services": "10.10.16.0/20", "pods": "10.12.0.0/14"}
    # The cluster runs in that subnetwork, pods and services in its secondary ranges.
    assert cluster.property_dependencies["network"] == (network.urn,)
    assert cluster.property_dependencies["subnetwork"] == (subnet.urn,)
    assert cluster.inputs["ipAllocationPolicy"] == {"clusterSecondaryRangeName": "pods",
                                                    "servicesSecondaryRangeName": "services"}
    assert router.property_dependencies["network"] == (network.urn,) and router.inputs["region"] == "us-central1"
    assert nat.property_dependencies["router"] == (router.urn,) and nat.inputs["region"] == "us-central1"
    assert (nat.inputs["natIpAllocateOption"], nat.inputs["sourceSubnetworkIpRangesToNat"]) == (
        "AUTO_ONLY", "LIST_OF_SUBNETWORKS")
    assert nat.inputs["subnetworks"] == [{"name": "ml-subnet-id",  # the subnetwork's id (a mock here)
                                          "sourceIpRangesToNats": ["ALL_IP_RANGES"]}]
    assert nat.property_dependencies["subnetworks"] == (subnet.urn,)
    # The DCGM exporter's image comes from nvcr.io: the releases wait for the NAT.
    assert rendering.of_type(RELEASE) and "ml-nat" in waits


def test_your_network_gets_cloud_nat_only_when_asked(render):
    theirs = ClusterArgs(network="shared-vpc", subnetwork="gpu-nodes")
    rendering, _ = build(render, cluster=theirs)
    assert not rendering.of_type(ROUTER_NAT) and not rendering.of_type("gcp:compute/network:Network")
    cluster = one(rendering, CLUSTER, "ml")
    assert (cluster.inputs["network"], cluster.inputs["subnetwork"]) == ("shared-vpc", "gpu-nodes")
    rendering, _ = build(render, location="us-central1-a",
                         cluster=ClusterArgs(network="shared-vpc", subnetwork="gpu-nodes", cloud_nat=True))
    (router,) = rendering.of_type("gcp:compute/router:Router")
    (nat,) = rendering.of_type(ROUTER_NAT)
    assert (router.inputs["network"], router.inputs["region"]) == ("shared-vpc", "us-central1")
    assert nat.inputs["subnetworks"][0]["name"] == "projects/ml-project/regions/us-central1/subnetworks/gpu-nodes"
    rendering, _ = build(render, cluster=ClusterArgs(cloud_nat=False))
    assert not rendering.of_type(ROUTER_NAT) and rendering.of_type("gcp:compute/subnetwork:Subnetwork")


def test_an_arm_a4x_pool_is_tolerated_by_the_nvidia_daemonsets_and_its_gpu_pods(render):
    """GKE taints Arm nodes kubernetes.io/arch=arm64:NoSchedule itself: the A4X pool's taints (what smoke pods and
    Kueue's flavor tolerate) and the DRA driver's kubelet plugin carry it; an x86 pool's do not."""
    from gpuready_components.gke_gpu import ReservationArgs

    rack = {"machine_type": "a4x-highgpu-4g", "max_nodes": 18, "node_locations": ["us-central1-a"],
            "reservation": ReservationArgs(affinity="specific", name="gb200/reservationBlocks/b/reservationSubBlocks/s")}
    software = GpuSoftwareOptions(install="dra", compute_domains=True)
    rendering, gke = build(render, rack, software=software, cluster=ClusterArgs(kubernetes_version="1.34"))
    arm = {"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"}
    assert arm in gke.gpu_node_taints
    (dra,) = [r for r in rendering.resources if r.type == RELEASE and r.name.endswith("dra-driver")]
    assert {"key": "kubernetes.io/arch", "operator": "Exists", "effect": "NoSchedule"} in \
        dra.inputs["values"]["kubeletPlugin"]["tolerations"]
    # GKE puts the taint on its own: the node pool does not set it
    (pool,) = [r for r in rendering.resources if r.type == NODE_POOL and r.name == "ml-gpu"]
    assert all(t["key"] != "kubernetes.io/arch" for t in pool.inputs["nodeConfig"]["taints"])
    _, x86 = build(render)
    assert arm not in x86.gpu_node_taints
