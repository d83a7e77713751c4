"""EFA node groups: the launch template EC2 gets, the network around it, the EFA device plugin, and what is refused."""

from __future__ import annotations

import botocore.session
import pytest
import yaml
from botocore.validate import ParamValidator

from gpuready_components.aws_instances import efa_layout
from gpuready_components.eks_gpu import AutoscalerArgs, ExistingClusterArgs, facts
from gpuready_components.eks_gpu.validation import check, checked_inputs
from gpuready_components.errors import ConfigError
from gpuready.plan.render import ec2_id, mock_id
from tests import helm
from tests.conftest import one

from .helpers import LT, NODE_GROUP, RELEASE, args, build

PG = "aws:ec2/placementGroup:PlacementGroup"
SG = "aws:ec2/securityGroup:SecurityGroup"
TAG = "aws:autoscaling/tag:Tag"
P4D = {"instance_types": ["p4d.24xlarge", "p4de.24xlarge"], "efa": True}


@pytest.fixture
def built(render):
    return build(render, P4D)


def _efa_release(rendering):
    (release,) = [r for r in rendering.of_type(RELEASE) if r.inputs["chart"] == facts.EFA_DEVICE_PLUGIN_CHART.name]
    return release


def test_p6_b300_keeps_card_0_for_ena_and_puts_its_efa_interfaces_on_cards_1_to_16():
    layout = efa_layout(["p6-b300.48xlarge"], 16)
    assert layout[0] == (0, 0, "interface") and layout[1:] == [(c, 1, "efa") for c in range(1, 17)]
    assert efa_layout(["p5.48xlarge"], 32)[:2] == [(0, 0, "efa"), (1, 1, "efa")]


def test_one_efa_interface_per_network_card_in_a_cluster_placement_group(built):
    rendering, eks = built
    lt = one(rendering, LT, "ml-gpu")
    cards = [(n["networkCardIndex"], n["deviceIndex"], n["interfaceType"]) for n in lt.inputs["networkInterfaces"]]
    assert cards == [(0, 0, "efa"), (1, 1, "efa"), (2, 1, "efa"), (3, 1, "efa")]
    assert all("subnetId" not in n for n in lt.inputs["networkInterfaces"])  # EKS refuses it: the group's subnet
    (pg,) = rendering.of_type(PG)
    assert pg.inputs["strategy"] == "cluster"
    assert lt.inputs["placement"] == {"groupName": pg.name}
    assert eks.capacity.efa_interfaces == 4


def test_efa_nodes_share_one_subnet_and_reach_each_other_on_every_port(built):
    rendering, _ = built
    ng = one(rendering, NODE_GROUP, "ml-gpu")
    assert ng.inputs["subnetIds"] == ["subnet-aaaaaaaa"]  # the first of the cluster's
    assert one(rendering, NODE_GROUP, "ml-system").inputs["subnetIds"] == ["subnet-aaaaaaaa", "subnet-bbbbbbbb"]
    (sg,) = rendering.of_type(SG)
    everything = {"protocol": "-1", "fromPort": 0, "toPort": 0, "self": True}
    assert [{k: r[k] for k in everything} for r in sg.inputs["ingress"]] == [everything]
    assert [{k: r[k] for k in everything} for r in sg.inputs["egress"]] == [everything]
    assert sg.inputs["vpcId"] == ec2_id("vpc", "ml")  # the cluster's VPC
    for interface in one(rendering, LT, "ml-gpu").inputs["networkInterfaces"]:
        # The cluster security group too: EKS adds it only to templates that name none.
        assert interface["securityGroups"] == [ec2_id("sg", "eks-cluster-ml"), mock_id(SG, sg.name)]


def test_efa_launch_template_is_a_valid_create_launch_template_request(built):
    ec2 = botocore.session.get_session().get_service_model("ec2")
    lt = one(built[0], LT, "ml-gpu")
    data = {
        "NetworkInterfaces": [{"NetworkCardIndex": int(n["networkCardIndex"]), "DeviceIndex": int(n["deviceIndex"]),
                               "InterfaceType": n["interfaceType"], "Groups": n["securityGroups"],
                               "DeleteOnTermination": n["deleteOnTermination"] == "true"}
                              for n in lt.inputs["networkInterfaces"]],
        "Placement": {"GroupName": lt.inputs["placement"]["groupName"]},
    }
    report = ParamValidator().validate({"LaunchTemplateName": lt.name, "LaunchTemplateData": data},
                                       ec2.operation_model("CreateLaunchTemplate").input_shape)
    assert not report.has_errors(), report.generate_report()
    assert {kind for *_, kind in efa_layout(["p6-b300.48xlarge"], 16)} <= set(ec2.shape_for("NetworkInterfaceType").enum)
    assert facts.EFA_PLACEMENT_STRATEGY in ec2.shape_for("PlacementStrategy").enum


def test_p5_gets_32_interfaces(render):
    rendering, _ = build(render, {"instance_types": ["p5.48xlarge"], "efa": True})
    interfaces = one(rendering, LT, "ml-gpu").inputs["networkInterfaces"]
    assert [int(n["networkCardIndex"]) for n in interfaces] == list(range(32))
    assert [int(n["deviceIndex"]) for n in interfaces] == [0] + [1] * 31


def test_efa_nodes_are_labelled_and_scale_from_zero_for_efa_pods(built):
    rendering, eks = built
    assert eks.gpu_node_labels["vpc.amazonaws.com/efa.present"] == "true"
    assert one(rendering, NODE_GROUP, "ml-gpu").inputs["labels"]["vpc.amazonaws.com/efa.present"] == "true"
    tags = {t.inputs["tag"]["key"]: t.inputs["tag"]["value"] for t in rendering.of_type(TAG)}
    prefix = "k8s.io/cluster-autoscaler/node-template/"
    assert tags[prefix + "resources/vpc.amazonaws.com/efa"] == "4"
    assert tags[prefix + "label/vpc.amazonaws.com/efa.present"] == "true"


def test_the_efa_device_plugin_is_the_pinned_chart_tolerating_the_gpu_taint(built):
    rendering, eks = built
    release = _efa_release(rendering)
    chart = facts.EFA_DEVICE_PLUGIN_CHART
    assert (release.inputs["chart"], release.inputs["version"], release.inputs["repositoryOpts"]["repo"],
            release.inputs["namespace"]) == (chart.name, chart.version, chart.repo, "kube-system")
    directory = helm.chart_dir(chart.name, chart.version)
    assert yaml.safe_load((directory / "Chart.yaml").read_text())["version"] == chart.version
    defaults = yaml.safe_load((directory / "values.yaml").read_text())
    assert set(release.inputs["values"]) <= set(defaults)
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in release.inputs["values"][
        "tolerations"]
    assert release.inputs["values"]["nodeSelector"] == {"vpc.amazonaws.com/efa.present": "true"}


def test_the_stack_exports_the_efa_fabric(built, render):
    assert built[1].gpu_fabric == "efa" and built[1].outputs["gpuFabric"] == "efa"
    rendering, plain = build(render)
    assert plain.gpu_fabric is None and plain.outputs.get("gpuFabric") is None
    assert not rendering.of_type(PG) and not [r for r in rendering.of_type(RELEASE)
                                               if r.inputs["chart"] == facts.EFA_DEVICE_PLUGIN_CHART.name]
    assert "networkInterfaces" not in one(rendering, LT, "ml-gpu").inputs


def test_an_existing_cluster_gets_its_vpc_and_cluster_security_group_from_eks(render):
    rendering, _ = build(render, {**P4D, "subnet_ids": ["subnet-ffffffff"]}, cluster=None,
                         existing_cluster=ExistingClusterArgs(name="prod", kubeconfig="x"),
                         autoscaler=AutoscalerArgs(mode="none"))
    (sg,) = rendering.of_type(SG)
    assert sg.inputs["vpcId"] == ec2_id("vpc", "prod")
    assert one(rendering, NODE_GROUP, "ml-gpu").inputs["subnetIds"] == ["subnet-ffffffff"]
    interfaces = one(rendering, LT, "ml-gpu").inputs["networkInterfaces"]
    assert interfaces[0]["securityGroups"][0] == ec2_id("sg", "eks-cluster-prod")


@pytest.mark.parametrize("node_group,overrides,field,words", [
    ({"instance_types": ["g6.xlarge", "g6.12xlarge"]}, {}, "node_group.instance_types", "no EFA on these types"),
    ({"instance_types": ["g6e.48xlarge", "p4d.24xlarge", "g6.12xlarge"]}, {}, "node_group.instance_types",
     "different numbers of EFA interfaces"),
    ({"subnet_ids": ["subnet-aaaaaaaa", "subnet-bbbbbbbb"]}, {}, "node_group.subnet_ids",
     "one Availability Zone"),
    ({}, {"autoscaler": AutoscalerArgs(mode="karpenter")}, "node_group.efa", "cluster-autoscaler"),
])
def test_impossible_efa_setups_are_refused(node_group, overrides, field, words):
    with pytest.raises(ConfigError) as error:
        given = args({**P4D, **node_group}, **overrides)
        check(given)
        checked_inputs(given)
    assert error.value.field == field
    assert words in str(error.value) and error.value.fix
