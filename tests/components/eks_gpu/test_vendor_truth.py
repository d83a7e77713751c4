"""Every EKS value the component sends, checked against botocore's EKS and EC2 service models."""

from __future__ import annotations

import botocore.session
import pytest
from botocore.validate import ParamValidator

from gpuready_components.eks_gpu import facts
from gpuready_components.k8s_gpu import facts as k8s_facts

from tests.conftest import one

from .helpers import CLUSTER, LT, NODE_GROUP, build


@pytest.fixture(scope="module")
def eks():
    return botocore.session.get_session().get_service_model("eks")


def _valid(model, operation: str, params: dict) -> None:
    report = ParamValidator().validate(params, model.operation_model(operation).input_shape)
    assert not report.has_errors(), report.generate_report()


def test_ami_types_capacity_types_taint_effects_and_log_types_are_eks_enums(eks):
    ami_types = eks.shape_for("AMITypes").enum
    assert set(facts.GPU_AMI_TYPES) | set(facts.RETIRED_AMI_TYPES) | {facts.SYSTEM_AMI_TYPE} <= set(ami_types)
    assert set(facts.CAPACITY_TYPES) <= set(eks.shape_for("CapacityTypes").enum)
    assert set(k8s_facts.TAINT_EFFECTS_K8S.values()) == set(eks.shape_for("TaintEffect").enum)
    assert set(facts.LOG_TYPES) == set(eks.shape_for("LogType").enum)
    assert "API" in eks.shape_for("AuthenticationMode").enum


def test_system_instance_types_are_ec2_types_without_gpus():
    from gpuready_components import catalog
    from gpuready_components.aws_instances import ec2_instance_types

    assert set(facts.SYSTEM_INSTANCE_TYPES) <= ec2_instance_types()
    assert all(catalog.find("aws", t) is None for t in facts.SYSTEM_INSTANCE_TYPES)


def test_every_nvidia_ami_type_eks_offers_is_known(eks):
    nvidia = {t for t in eks.shape_for("AMITypes").enum if "NVIDIA" in t or t.endswith("_GPU")}
    assert nvidia == set(facts.GPU_AMI_TYPES) | set(facts.RETIRED_AMI_TYPES)
    assert all(f"eks/{t}" in facts.NODE_IMAGES for t in facts.GPU_AMI_TYPES)


@pytest.mark.parametrize("node_group,name", [({}, "ml-gpu"), ({}, "ml-system"),
                                             ({"capacity_type": "SPOT", "ami_type": "BOTTLEROCKET_x86_64_NVIDIA"},
                                              "ml-gpu")])
def test_rendered_node_groups_are_valid_create_nodegroup_requests(render, eks, node_group, name):
    rendering, _ = build(render, node_group)
    ng = one(rendering, NODE_GROUP, name)
    i = ng.inputs
    request = {
        "clusterName": i["clusterName"], "nodegroupName": ng.name, "nodeRole": i["nodeRoleArn"],
        "subnets": i["subnetIds"], "amiType": i["amiType"], "capacityType": i["capacityType"],
        "instanceTypes": i["instanceTypes"], "labels": i.get("labels", {}), "taints": i.get("taints", []),
        "scalingConfig": {k: int(v) for k, v in i["scalingConfig"].items()},
        "updateConfig": {k: int(v) for k, v in i["updateConfig"].items()},
        "launchTemplate": i["launchTemplate"], "tags": i["tags"],
    }
    _valid(eks, "CreateNodegroup", request)


def test_rendered_cluster_is_a_valid_create_cluster_request(render, eks):
    rendering, _ = build(render)
    (cluster,) = rendering.of_type(CLUSTER)
    i = cluster.inputs
    vpc = i["vpcConfig"]
    request = {
        "name": cluster.name, "roleArn": i["roleArn"],
        "resourcesVpcConfig": {"subnetIds": vpc["subnetIds"], "endpointPublicAccess": vpc["endpointPublicAccess"],
                               "endpointPrivateAccess": vpc["endpointPrivateAccess"],
                               "publicAccessCidrs": vpc["publicAccessCidrs"]},
        "encryptionConfig": [{"resources": i["encryptionConfig"]["resources"],
                              "provider": i["encryptionConfig"]["provider"]}],
        "logging": {"clusterLogging": [{"types": i["enabledClusterLogTypes"], "enabled": True}]},
        "accessConfig": i["accessConfig"], "tags": i["tags"],
    }
    _valid(eks, "CreateCluster", request)


def test_launch_template_is_a_valid_create_launch_template_request(render):
    ec2 = botocore.session.get_session().get_service_model("ec2")
    rendering, _ = build(render)
    lt = one(rendering, LT, "ml-gpu")
    data = {
        "MetadataOptions": {"HttpEndpoint": "enabled", "HttpTokens": lt.inputs["metadataOptions"]["httpTokens"],
                            "HttpPutResponseHopLimit": int(lt.inputs["metadataOptions"]["httpPutResponseHopLimit"])},
        "BlockDeviceMappings": [{"DeviceName": m["deviceName"], "Ebs": {
            "VolumeSize": int(m["ebs"]["volumeSize"]), "VolumeType": m["ebs"]["volumeType"],
            "Encrypted": m["ebs"]["encrypted"] == "true"}} for m in lt.inputs["blockDeviceMappings"]],
        "TagSpecifications": [{"ResourceType": t["resourceType"],
                               "Tags": [{"Key": k, "Value": v} for k, v in t["tags"].items()]}
                              for t in lt.inputs["tagSpecifications"]],
    }
    _valid(ec2, "CreateLaunchTemplate", {"LaunchTemplateName": lt.name, "LaunchTemplateData": data})


def test_gpu_instance_families_of_each_architecture():
    # moto's copy of EC2's DescribeInstanceTypes knows each GPU type's architecture.
    import gzip
    import json
    from importlib import resources

    from gpuready_components import catalog

    raw = resources.files("moto.ec2").joinpath("resources/instance_types.json.gz").read_bytes()
    types = json.loads(gzip.decompress(raw))
    for row in (r for r in catalog.rows() if r.cloud == "aws"):
        info = types.get(row.name)
        if info is None:
            continue
        archs = info["ProcessorInfo"]["SupportedArchitectures"]
        family = row.name.split(".")[0]
        assert ("arm64" in archs) == (family in facts.ARM64_GPU_FAMILIES), row.name
    for family in facts.ARM64_GPU_FAMILIES:
        known = [info for name, info in types.items() if name.split(".")[0] == family]
        assert all(i["ProcessorInfo"]["SupportedArchitectures"] == ["arm64"] for i in known), family
    assert any(name.startswith("g5g.") for name in types)


def test_ultraserver_facts_are_ec2s_and_ekss(eks):
    """The UltraServer-only types are EC2 instance types, their AMI an EKS AMI type, and an UltraServer Capacity Block
    is what DescribeCapacityBlockOfferings offers by UltraServer type and count (botocore's EC2 model)."""
    ec2 = botocore.session.get_session().get_service_model("ec2")
    assert set(facts.ULTRASERVERS) <= set(ec2.shape_for("InstanceType").enum)
    assert facts.ULTRASERVER_AMI_TYPE in eks.shape_for("AMITypes").enum
    offerings = ec2.operation_model("DescribeCapacityBlockOfferings").input_shape.members
    assert {"UltraserverType", "UltraserverCount"} <= set(offerings)
    _valid(ec2, "DescribeCapacityBlockOfferings", {"UltraserverType": "u-p6e-gb200x72", "UltraserverCount": 1,
                                                   "CapacityDurationHours": 24})
    assert all(count * 4 in (36, 72) for servers in facts.ULTRASERVERS.values() for count in servers.values())
