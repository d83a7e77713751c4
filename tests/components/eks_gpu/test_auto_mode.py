"""EKS Auto Mode as EksGpuCluster builds it: the cluster's compute, storage and load balancing with their role
policies, a GPU NodePool on the default NodeClass (checked against the NodePool CRD of the Karpenter chart), and no NVIDIA plugin."""

from __future__ import annotations

import json

import botocore.session
import jsonschema
import pytest
import yaml

from gpuready_components.eks_gpu import AutoscalerArgs
from gpuready_components.eks_gpu.validation import check
from gpuready_components.errors import ConfigError
from gpuready_components.k8s_gpu import GpuSoftwareOptions
from tests.conftest import ROOT, one

from .helpers import ATTACH, CLUSTER, NODE_GROUP, RELEASE, ROLE, args, build

AUTO = {"autoscaler": AutoscalerArgs(mode="auto-mode")}
NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"
CRD = ROOT / "tests" / "data" / "helm-charts" / "karpenter-1.13.0" / "crds" / "karpenter.sh_nodepools.yaml"


@pytest.fixture
def built(render):
    return build(render, **AUTO)


def test_cluster_switches_compute_storage_and_load_balancing_on_together(built):
    rendering, _ = built
    (cluster,) = rendering.of_type(CLUSTER)
    i = cluster.inputs
    assert i["computeConfig"] == {"enabled": True, "nodePools": ["general-purpose", "system"],
                                  "nodeRoleArn": one(rendering, ROLE, "ml-gpu-node").outputs["arn"]}
    assert i["storageConfig"] == {"blockStorage": {"enabled": True}}
    assert i["kubernetesNetworkConfig"] == {"elasticLoadBalancing": {"enabled": True}}
    assert i["bootstrapSelfManagedAddons"] is False
    eks = botocore.session.get_session().get_service_model("eks")
    shape = eks.operation_model("CreateCluster").input_shape.members
    assert {"computeConfig", "storageConfig", "kubernetesNetworkConfig", "bootstrapSelfManagedAddons"} <= set(shape)


def test_roles_get_auto_modes_policies_and_the_cluster_role_tags_sessions(built):
    rendering, _ = built
    trust = json.loads(one(rendering, ROLE, "ml-cluster").inputs["assumeRolePolicy"])["Statement"][0]
    assert sorted(trust["Action"]) == ["sts:AssumeRole", "sts:TagSession"]
    attached = sorted((a.inputs["role"], a.inputs["policyArn"].rsplit("/", 1)[1]) for a in rendering.of_type(ATTACH))
    assert attached == [("ml-cluster", "AmazonEKSBlockStoragePolicy"), ("ml-cluster", "AmazonEKSClusterPolicy"),
                        ("ml-cluster", "AmazonEKSComputePolicy"), ("ml-cluster", "AmazonEKSLoadBalancingPolicy"),
                        ("ml-cluster", "AmazonEKSNetworkingPolicy"),
                        ("ml-gpu-node", "AmazonEC2ContainerRegistryPullOnly"),
                        ("ml-gpu-node", "AmazonEKSWorkerNodeMinimalPolicy")]


def test_gpu_node_pool_on_the_default_node_class_is_a_valid_nodepool(built):
    rendering, eks = built
    (pool,) = rendering.of_type(NODE_POOL)
    assert pool.name == "ml-gpu-nodepool" and pool.inputs["metadata"]["name"] == "gpuready-gpu"
    spec = pool.inputs["spec"]
    assert spec["template"]["spec"]["nodeClassRef"] == {"group": "eks.amazonaws.com", "kind": "NodeClass",
                                                        "name": "default"}
    assert spec["template"]["metadata"]["labels"] == eks.gpu_node_labels
    assert spec["template"]["spec"]["taints"] == [eks.gpu_taint]
    assert spec["limits"] == {"nvidia.com/gpu": str(eks.capacity.max_gpus)} and eks.capacity.max_gpus == 12
    assert {"key": "node.kubernetes.io/instance-type", "operator": "In",
            "values": ["g6.xlarge", "g6.12xlarge"]} in spec["template"]["spec"]["requirements"]
    crd = yaml.safe_load(CRD.read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    manifest = {"apiVersion": pool.inputs["apiVersion"], "kind": "NodePool", "metadata": pool.inputs["metadata"],
                "spec": spec}
    jsonschema.validate(manifest, version["schema"]["openAPIV3Schema"])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**manifest, "spec": {**spec, "disruption": {"consolidationPolicy": "Never"}}},
                            version["schema"]["openAPIV3Schema"])
    assert pool.provider.split("::")[-2] == "ml-k8s"


def test_no_node_groups_and_no_nvidia_plugin_or_operator(built):
    rendering, eks = built
    assert rendering.of_type(NODE_GROUP) == [] and rendering.of_type("aws:autoscaling/tag:Tag") == []
    assert [r.inputs["chart"] for r in rendering.of_type(RELEASE)] == ["dcgm-exporter"]
    assert eks.software.install_plan.provider("device-plugin") == "node image"


@pytest.mark.parametrize("software", [GpuSoftwareOptions(install="gpu-operator"),
                                      GpuSoftwareOptions(gpu_feature_discovery=True),
                                      GpuSoftwareOptions(time_slicing_replicas=4)])
def test_auto_mode_refuses_a_second_plugin(software):
    with pytest.raises(ConfigError) as error:
        check(args(software=software, **AUTO))
    assert error.value.field == "software" and "its own NVIDIA device plugin" in str(error.value)
