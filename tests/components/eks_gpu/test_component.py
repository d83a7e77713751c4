"""EksGpuCluster under Pulumi's mock runtime: what the node group, launch template, cluster and roles receive."""

from __future__ import annotations

import json

import pytest

from gpuready_components.eks_gpu import ExistingClusterArgs, facts
from gpuready_components.k8s_gpu import GpuSoftwareOptions
from gpuready.plan.render import mock_id
from tests.conftest import non_camel_keys

from tests.conftest import one

from .helpers import ATTACH, CLUSTER, LT, NODE_GROUP, OIDC, RELEASE, ROLE, build


@pytest.fixture
def built(render):
    return build(render)


def test_node_group_is_a_tainted_nvidia_group_that_scales_from_zero(built):
    rendering, _ = built
    ng = one(rendering, NODE_GROUP, "ml-gpu")
    i = ng.inputs
    assert (i["amiType"], i["capacityType"]) == ("AL2023_x86_64_NVIDIA", "ON_DEMAND")
    assert i["instanceTypes"] == ["g6.xlarge"]  # the 4-GPU type gets its own group: see test_autoscaler
    assert i["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}]
    assert i["labels"] == {"nvidia.com/gpu.present": "true", "k8s.amazonaws.com/accelerator": "nvidia-l4"}
    assert i["scalingConfig"] == {"minSize": 0, "maxSize": 3, "desiredSize": 0}
    assert i["subnetIds"] == ["subnet-aaaaaaaa", "subnet-bbbbbbbb"]
    assert i["clusterName"] == "ml" and i["nodeRoleArn"].endswith(":role/ml-gpu-node")
    lt = one(rendering, LT, "ml-gpu")
    assert i["launchTemplate"] == {"id": mock_id(LT, lt.name), "version": "1"}
    assert "diskSize" not in i  # the volume is in the launch template: EKS refuses both


def test_launch_template_requires_imdsv2_and_encrypts_the_image_volume(built):
    lt = one(built[0], LT, "ml-gpu")
    assert lt.inputs["metadataOptions"] == {"httpEndpoint": "enabled", "httpTokens": "required",
                                            "httpPutResponseHopLimit": 1}
    (mapping,) = lt.inputs["blockDeviceMappings"]
    assert mapping["deviceName"] == "/dev/xvda"
    assert mapping["ebs"] == {"volumeSize": 200, "volumeType": "gp3", "encrypted": "true",
                              "deleteOnTermination": "true"}
    assert {t["resourceType"] for t in lt.inputs["tagSpecifications"]} == {"instance", "volume"}


def test_bottlerocket_sizes_its_data_volume(render):
    rendering, eks = build(render, {"ami_type": "BOTTLEROCKET_x86_64_NVIDIA", "root_volume_gib": 300})
    lt = one(rendering, LT, "ml-gpu")
    assert [(m["deviceName"], m["ebs"]["volumeSize"]) for m in lt.inputs["blockDeviceMappings"]] == [
        ("/dev/xvdb", 300)]
    assert eks.software.install_plan.provider("device-plugin") == "node image"


def test_spot_labels_and_desired_size(render):
    rendering, eks = build(render, {"capacity_type": "SPOT", "min_size": 1, "desired_size": 2,
                                    "labels": {"team": "vision"}})
    ng = one(rendering, NODE_GROUP, "ml-gpu")
    assert ng.inputs["capacityType"] == "SPOT"
    assert ng.inputs["scalingConfig"] == {"minSize": 1, "maxSize": 3, "desiredSize": 2}
    assert ng.inputs["labels"] == {"team": "vision", "nvidia.com/gpu.present": "true",
                                   "k8s.amazonaws.com/accelerator": "nvidia-l4"}
    assert eks.gpu_node_labels == {"team": "vision", "nvidia.com/gpu.present": "true"}


def test_cluster_is_encrypted_logged_and_uses_access_entries(built):
    rendering, _ = built
    (cluster,) = rendering.of_type(CLUSTER)
    i = cluster.inputs
    assert i["encryptionConfig"]["resources"] == ["secrets"]
    assert i["encryptionConfig"]["provider"]["keyArn"].endswith(":key/ml-secrets")
    assert i["accessConfig"] == {"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": True}
    assert i["enabledClusterLogTypes"] == ["api", "audit", "authenticator"]
    assert i["vpcConfig"] == {"subnetIds": ["subnet-aaaaaaaa", "subnet-bbbbbbbb"], "endpointPrivateAccess": True,
                              "endpointPublicAccess": True, "publicAccessCidrs": ["0.0.0.0/0"]}
    (oidc,) = rendering.of_type(OIDC)
    assert oidc.inputs["clientIdLists"] == ["sts.amazonaws.com"]
    assert oidc.inputs["url"].startswith("https://oidc.eks.us-east-1.amazonaws.com/id/")


def test_roles_have_exactly_the_managed_policies_they_need(built):
    rendering, _ = built
    roles = {r.name: json.loads(r.inputs["assumeRolePolicy"])["Statement"][0]["Principal"]["Service"]
             for r in rendering.of_type(ROLE)}
    assert roles == {"ml-cluster": "eks.amazonaws.com", "ml-gpu-node": "ec2.amazonaws.com",
                     "ml-cluster-autoscaler": "pods.eks.amazonaws.com"}
    attached = sorted((a.inputs["role"], a.inputs["policyArn"].rsplit("/", 1)[1]) for a in rendering.of_type(ATTACH))
    assert attached == [("ml-cluster", "AmazonEKSClusterPolicy"),
                        ("ml-gpu-node", "AmazonEC2ContainerRegistryPullOnly"),
                        ("ml-gpu-node", "AmazonEKSWorkerNodePolicy"), ("ml-gpu-node", "AmazonEKS_CNI_Policy")]


def test_gpu_software_is_installed_through_a_provider_for_this_cluster(built):
    rendering, eks = built
    releases = rendering.of_type(RELEASE)
    assert sorted(r.inputs["chart"] for r in releases) == ["cluster-autoscaler", "dcgm-exporter",
                                                           "nvidia-device-plugin"]
    assert all(r.provider.split("::")[-2] == "ml-k8s" for r in releases)
    (provider,) = rendering.of_type("pulumi:providers:kubernetes")
    assert provider.secret_inputs == {"kubeconfig"}
    kubeconfig = json.loads(provider.inputs["kubeconfig"])
    assert kubeconfig["clusters"][0]["cluster"]["server"].startswith("https://ML.gr7.us-east-1.eks.amazonaws.com")
    assert kubeconfig["users"][0]["user"]["exec"]["args"] == [
        "eks", "get-token", "--cluster-name", "ml", "--region", "us-east-1"]


def test_outputs_the_smoke_test_reads(built):
    _, eks = built
    assert eks.gpu_taint == {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
    assert eks.capacity.gpu_models == ("L4",) and eks.capacity.max_gpus_per_node == 4
    # max_size (3) nodes in each group: 3 x 1 GPU + 3 x 4 GPUs
    assert eks.capacity.max_gpus == 15 and eks.capacity.max_usd_per_hour == round(3 * 0.8048 + 3 * 4.6016, 2)


def test_time_slicing_is_exported_for_the_probe(render, built):
    _, eks = build(render, software=GpuSoftwareOptions(time_slicing_replicas=4))
    assert eks.outputs["gpuSharing"] == "time-slicing"  # memory other pods hold then warns, not fails
    assert "gpuSharing" not in built[1].outputs


def test_private_endpoint_and_allow_list(render):
    from gpuready_components.eks_gpu import ClusterArgs

    rendering, _ = build(render, cluster=ClusterArgs(endpoint_public_access=False, version="1.33"))
    (cluster,) = rendering.of_type(CLUSTER)
    assert cluster.inputs["version"] == "1.33"
    assert cluster.inputs["vpcConfig"]["endpointPublicAccess"] is False
    assert "publicAccessCidrs" not in cluster.inputs["vpcConfig"]
    rendering, _ = build(render, cluster=ClusterArgs(public_access_cidrs=["203.0.113.0/24"]))
    assert rendering.of_type(CLUSTER)[0].inputs["vpcConfig"]["publicAccessCidrs"] == ["203.0.113.0/24"]


def test_existing_cluster_gets_only_the_node_group_and_software(render):
    rendering, eks = build(render, cluster=None,
                           existing_cluster=ExistingClusterArgs(name="prod", kubeconfig="apiVersion: v1"),
                           software=GpuSoftwareOptions(install="gpu-operator"))
    types = {r.type for r in rendering.resources}
    assert CLUSTER not in types and OIDC not in types and "aws:kms/key:Key" not in types
    ng = one(rendering, NODE_GROUP, "ml-gpu")
    assert ng.inputs["clusterName"] == "prod"
    (release,) = rendering.of_type(RELEASE)
    assert release.inputs["chart"] == "gpu-operator"
    assert release.inputs["values"]["driver"] == {"enabled": False}  # the AL2023 NVIDIA AMI ships it
    (provider,) = rendering.of_type("pulumi:providers:kubernetes")
    assert provider.inputs["kubeconfig"] == "apiVersion: v1"


def test_every_child_is_parented_with_stable_names(built):
    rendering, _ = built
    (component,) = rendering.of_type(facts.TYPE_TOKEN)
    direct = sorted(r.name for r in rendering.resources if r.parent == component.urn)
    direct = [n for n in direct if "-template-" not in n]
    assert direct == ["ml", "ml-cluster", "ml-cluster-AmazonEKSClusterPolicy", "ml-cluster-autoscaler",
                      "ml-cluster-autoscaler", "ml-cluster-autoscaler", "ml-cluster-autoscaler", "ml-gpu", "ml-gpu",
                      "ml-gpu-4x", "ml-gpu-node", "ml-gpu-node-AmazonEC2ContainerRegistryPullOnly",
                      "ml-gpu-node-AmazonEKSWorkerNodePolicy", "ml-gpu-node-AmazonEKS_CNI_Policy", "ml-gpu-software",
                      "ml-k8s", "ml-node-monitoring-agent", "ml-oidc", "ml-pod-identity-agent", "ml-secrets",
                      "ml-system", "ml-system"]


def test_a_new_cluster_gets_untainted_system_nodes_for_the_controllers(built):
    rendering, eks = built
    system = one(rendering, NODE_GROUP, "ml-system")
    assert system.inputs["amiType"] == "AL2023_x86_64_STANDARD" and "taints" not in system.inputs
    assert system.inputs["scalingConfig"] == {"minSize": 2, "maxSize": 2, "desiredSize": 2}
    assert one(rendering, LT, "ml-system").inputs["metadataOptions"]["httpTokens"] == "required"


def test_existing_cluster_gets_no_system_nodes(render):
    rendering, _ = build(render, cluster=None, existing_cluster=ExistingClusterArgs(name="prod", kubeconfig="x"))
    assert [r.name for r in rendering.of_type(NODE_GROUP)] == ["ml-gpu", "ml-gpu-4x"]


def test_inputs_are_camel_case(built):
    for resource in built[0].resources:
        assert list(non_camel_keys(resource.inputs)) == [], resource.urn


def test_operator_mig_names_the_profile_in_the_node_group_label(render):
    """The operator's MIG manager partitions by the node label; its ClusterPolicy keeps the CRD's all-disabled."""
    from gpuready_components.k8s_gpu import MigArgs

    rendering, eks = build(render, {"instance_types": ["p4de.24xlarge"]}, software=GpuSoftwareOptions(
        install="gpu-operator", mig=MigArgs(strategy="mixed", config="all-1g.10gb")))
    ng = one(rendering, NODE_GROUP, "ml-gpu")
    assert ng.inputs["labels"] == {"nvidia.com/gpu.present": "true", "nvidia.com/mig.config": "all-1g.10gb",
                                   "k8s.amazonaws.com/accelerator": "nvidia-a100"}
    assert eks.gpu_node_labels == {"nvidia.com/gpu.present": "true", "nvidia.com/mig.config": "all-1g.10gb"}
    (release,) = [r for r in rendering.of_type(RELEASE) if r.inputs["chart"] == "gpu-operator"]
    assert release.inputs["values"]["migManager"] == {"enabled": True}
