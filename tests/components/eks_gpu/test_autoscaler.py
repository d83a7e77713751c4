"""cluster-autoscaler as EksGpuCluster installs it, checked against the real chart (vendored, pinned), the
cluster-autoscaler source's flags and botocore's IAM-relevant service models."""

from __future__ import annotations

import json

import botocore.session
import kubernetes_validate
import pytest
import yaml

from gpuready_components.eks_gpu import AutoscalerArgs, ExistingClusterArgs
from gpuready_components.k8s_gpu import scalers as sf
from gpuready_components.errors import ConfigError
from tests import helm
from tests.conftest import ROOT, one

from .helpers import NODE_GROUP, RELEASE, ROLE, args, build

CHART_DIR = ROOT / "tests" / "data" / "helm-charts" / f"cluster-autoscaler-{sf.CLUSTER_AUTOSCALER_CHART.version}"
FLAGS = ROOT / "tests" / "data" / "cluster-autoscaler" / "flags-1.34.5.txt"
TAG = "aws:autoscaling/tag:Tag"
FREE_FORM = {"extraArgs", "nodeSelector"}
"""Chart values that are maps of the user's keys (``{}`` or example flags in values.yaml)."""


@pytest.fixture(scope="module")
def chart_values() -> dict:
    return yaml.safe_load((CHART_DIR / "values.yaml").read_text())


@pytest.fixture
def built(render):
    return build(render)


def _release(rendering):
    (release,) = [r for r in rendering.of_type(RELEASE) if r.inputs["chart"] == "cluster-autoscaler"]
    return release


def _missing_keys(values: dict, chart: dict, path: str = "") -> list[str]:
    missing = []
    for key, value in values.items():
        where = f"{path}.{key}" if path else key
        if key not in chart:
            missing.append(where)
        elif isinstance(value, dict) and key not in FREE_FORM:
            missing += _missing_keys(value, chart[key] or {}, where)
    return missing


def test_chart_is_the_pinned_official_one_in_kube_system_after_its_identity(built):
    rendering, eks = built
    release = _release(rendering)
    chart = yaml.safe_load((CHART_DIR / "Chart.yaml").read_text())
    assert (release.inputs["chart"], release.inputs["version"]) == (chart["name"], chart["version"])
    assert release.inputs["repositoryOpts"] == {"repo": "https://kubernetes.github.io/autoscaler"}
    assert release.inputs["namespace"] == "kube-system"
    assert release.provider.split("::")[-2] == "ml-k8s"
    waits_for = {urn.rsplit("::", 1)[1] + " " + urn.split("::")[2].rsplit("$", 1)[-1] for urn in release.dependencies}
    assert {"ml-cluster-autoscaler aws:iam/rolePolicy:RolePolicy",
            "ml-cluster-autoscaler aws:eks/podIdentityAssociation:PodIdentityAssociation",
            "ml-pod-identity-agent aws:eks/addon:Addon", "ml-system aws:eks/nodeGroup:NodeGroup"} <= waits_for


def test_values_are_explicit_and_every_key_exists_in_the_chart(built, chart_values):
    rendering, _ = built
    values = _release(rendering).inputs["values"]
    assert _missing_keys(values, chart_values) == []
    assert values["cloudProvider"] == "aws" and values["awsRegion"] == "us-east-1"
    assert values["autoDiscovery"] == {"clusterName": "ml"}
    assert values["rbac"] == {"serviceAccount": {"name": "cluster-autoscaler"}}
    assert values["image"] == {"tag": "v1.34.5"}  # the default cluster version, 1.34
    assert values["nodeSelector"] == {"eks.amazonaws.com/nodegroup": "ml-system"}  # the untainted system nodes
    assert values["extraArgs"]["expander"] == "least-waste"


def test_extra_args_are_flags_of_cluster_autoscaler():
    flags = set(FLAGS.read_text().split())
    assert set(sf.CLUSTER_AUTOSCALER_ARGS) <= flags
    assert "no-such-flag" not in flags


def test_image_tags_match_their_kubernetes_minor():
    for minor, tag in sf.CLUSTER_AUTOSCALER_IMAGES.items():
        assert tag.startswith(f"v{minor}."), minor
    assert sf.DEFAULT_KUBERNETES_VERSION in sf.CLUSTER_AUTOSCALER_IMAGES


@pytest.mark.parametrize("version", ["1.30.0", "1.34.0"])
def test_chart_renders_valid_objects_with_our_values(built, version):
    release = _release(built[0])
    objects = helm.render(release.inputs["chart"], release.inputs["version"], release.inputs["values"],
                          name="cluster-autoscaler", namespace="kube-system")
    kinds = {o["kind"] for o in objects}
    assert {"Deployment", "ServiceAccount", "ClusterRole", "ClusterRoleBinding"} <= kinds
    for o in objects:
        kubernetes_validate.validate(o, version, strict=True)
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "cluster-autoscaler"
    (container,) = pod["containers"]
    assert container["image"] == "registry.k8s.io/autoscaling/cluster-autoscaler:v1.34.5"
    assert "--node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/ml" \
        in container["command"]
    assert "--expander=least-waste" in container["command"]
    assert {"name": "AWS_REGION", "value": "us-east-1"} in container["env"]


def test_role_is_assumed_through_pod_identity_for_the_charts_service_account(built):
    rendering, _ = built
    role = one(rendering, ROLE, "ml-cluster-autoscaler")
    (statement,) = json.loads(role.inputs["assumeRolePolicy"])["Statement"]
    assert statement["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert sorted(statement["Action"]) == ["sts:AssumeRole", "sts:TagSession"]
    association = one(rendering, "aws:eks/podIdentityAssociation:PodIdentityAssociation", "ml-cluster-autoscaler")
    assert (association.inputs["namespace"], association.inputs["serviceAccount"]) == (
        "kube-system", _release(rendering).inputs["values"]["rbac"]["serviceAccount"]["name"])
    assert association.inputs["roleArn"].endswith(":role/ml-cluster-autoscaler")
    agent = one(rendering, "aws:eks/addon:Addon", "ml-pod-identity-agent")
    assert agent.inputs["addonName"] == "eks-pod-identity-agent"


def _action_operations():
    session = botocore.session.get_session()
    return {service: set(session.get_service_model(service).operation_names)
            for service in ("autoscaling", "ec2", "eks")}


def test_iam_policy_is_least_privilege_and_every_action_is_an_aws_operation(built):
    rendering, _ = built
    policy = json.loads(one(rendering, "aws:iam/rolePolicy:RolePolicy", "ml-cluster-autoscaler").inputs["policy"])
    operations = _action_operations()
    describe, scale = policy["Statement"]
    for action in describe["Action"] + scale["Action"]:
        service, _, operation = action.partition(":")
        assert operation in operations[service], action
    assert all(a.split(":")[1].startswith(("Describe", "Get")) for a in describe["Action"])
    assert sorted(scale["Action"]) == ["autoscaling:SetDesiredCapacity",
                                       "autoscaling:TerminateInstanceInAutoScalingGroup"]
    assert scale["Condition"] == {"StringEquals": {"aws:ResourceTag/k8s.io/cluster-autoscaler/ml": "owned"}}
    assert "*" not in json.dumps([s["Action"] for s in policy["Statement"]])


def test_each_gpu_groups_auto_scaling_group_carries_its_node_template(built):
    rendering, _ = built
    tags: dict[str, dict[str, str]] = {}
    for tag in rendering.of_type(TAG):
        assert tag.inputs["tag"]["propagateAtLaunch"] is False
        tags.setdefault(tag.inputs["autoscalingGroupName"], {})[tag.inputs["tag"]["key"]] = tag.inputs["tag"]["value"]
    prefix = "k8s.io/cluster-autoscaler/node-template/"
    assert set(tags) == {"eks-ml-gpu-0000", "eks-ml-gpu-4x-0000"}  # the node groups' own Auto Scaling groups
    assert tags["eks-ml-gpu-4x-0000"] == {
        prefix + "resources/nvidia.com/gpu": "4",
        prefix + "label/nvidia.com/gpu.present": "true",
        prefix + "label/k8s.amazonaws.com/accelerator": "nvidia-l4",
        prefix + "taint/nvidia.com/gpu": "true:NoSchedule",
    }
    assert tags["eks-ml-gpu-0000"][prefix + "resources/nvidia.com/gpu"] == "1"
    four = one(rendering, NODE_GROUP, "ml-gpu-4x")
    assert four.inputs["instanceTypes"] == ["g6.12xlarge"]
    assert four.inputs["labels"]["k8s.amazonaws.com/accelerator"] == "nvidia-l4"


def test_mixed_models_of_one_gpu_count_get_a_group_each(render):
    rendering, eks = build(render, {"instance_types": ["g6.xlarge", "g5.xlarge", "g6.12xlarge"]})
    groups = {r.name: (r.inputs["instanceTypes"], r.inputs["labels"]["k8s.amazonaws.com/accelerator"])
              for r in rendering.of_type(NODE_GROUP) if r.name != "ml-system"}
    assert groups == {"ml-gpu": (["g6.xlarge"], "nvidia-l4"), "ml-gpu-a10g-1x": (["g5.xlarge"], "nvidia-a10g"),
                      "ml-gpu-l4-4x": (["g6.12xlarge"], "nvidia-l4")}


def test_existing_cluster_defaults_to_no_autoscaler(render):
    rendering, eks = build(render, cluster=None, existing_cluster=ExistingClusterArgs(name="prod", kubeconfig="x"))
    assert eks.capacity.autoscaler == "none" and eks.autoscaler is None
    assert not rendering.of_type(TAG) and all(r.inputs["chart"] != "cluster-autoscaler"
                                              for r in rendering.of_type(RELEASE))


def test_existing_cluster_can_get_cluster_autoscaler_for_its_version(render):
    rendering, _ = build(render, cluster=None, existing_cluster=ExistingClusterArgs(name="prod", kubeconfig="x"),
                         autoscaler=AutoscalerArgs(mode="cluster-autoscaler", kubernetes_version="1.32"))
    values = _release(rendering).inputs["values"]
    assert values["image"] == {"tag": "v1.32.7"} and values["autoDiscovery"] == {"clusterName": "prod"}
    assert values["nodeSelector"] == {}


@pytest.mark.parametrize("overrides,node_group,field,words", [
    ({"autoscaler": AutoscalerArgs(mode="none")}, {}, "autoscaler.mode (stack: gpuready:autoscaler)",
     "GPU pods wait forever"),
    ({"autoscaler": AutoscalerArgs(mode="cluster-autoscalr")}, {}, "autoscaler.mode (stack: gpuready:autoscaler)",
     "not an autoscaler"),
    ({"cluster": None, "existing_cluster": ExistingClusterArgs(name="p", kubeconfig="x"),
      "autoscaler": AutoscalerArgs(mode="auto-mode")}, {}, "autoscaler.mode (stack: gpuready:autoscaler)",
     "when the cluster is created"),
    ({"cluster": None, "existing_cluster": ExistingClusterArgs(name="p", kubeconfig="x"),
      "autoscaler": AutoscalerArgs(mode="cluster-autoscaler")}, {},
     "autoscaler.kubernetes_version (stack: gpuready:kubernetesVersion)", "must match"),
])
def test_impossible_autoscaler_choices_are_refused(overrides, node_group, field, words):
    from gpuready_components.eks_gpu.validation import check

    with pytest.raises(ConfigError) as error:
        check(args(node_group, **overrides))
    assert error.value.field == field and words in str(error.value)


def test_none_on_a_new_cluster_is_fine_with_warm_nodes():
    from gpuready_components.eks_gpu.validation import check

    assert check(args({"min_size": 1}, autoscaler=AutoscalerArgs(mode="none"))).autoscaler == "none"


def test_existing_cluster_keeps_its_own_pod_identity_agent(render):
    rendering, _ = build(render, cluster=None, existing_cluster=ExistingClusterArgs(name="prod", kubeconfig="x"),
                         autoscaler=AutoscalerArgs(mode="cluster-autoscaler", kubernetes_version="1.32"))
    assert rendering.of_type("aws:eks/addon:Addon") == []  # creating the add-on a second time fails
    assert one(rendering, "aws:eks/podIdentityAssociation:PodIdentityAssociation", "ml-cluster-autoscaler")
