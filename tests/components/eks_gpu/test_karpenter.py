"""Karpenter as EksGpuCluster installs it, checked against the vendored chart (values, strict render), its CRDs
(EC2NodeClass, NodePool) and botocore's service models (every IAM action)."""

from __future__ import annotations

import json
import re

import botocore.session
import jsonschema
import kubernetes_validate
import pytest
import yaml

from gpuready_components.eks_gpu import AutoscalerArgs
from gpuready_components.k8s_gpu import scalers as sf
from gpuready_components.eks_gpu.validation import check
from gpuready_components.errors import ConfigError
from tests import helm
from tests.conftest import ROOT, one

from .helpers import NODE_GROUP, RELEASE, args, build

KARPENTER = {"autoscaler": AutoscalerArgs(mode="karpenter")}
CHART_DIR = ROOT / "tests" / "data" / "helm-charts" / f"karpenter-{sf.KARPENTER_CHART.version}"
NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"
NODE_CLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"


@pytest.fixture(scope="module")
def built():
    from gpuready.plan.render import run

    holder = {}

    def program():
        from gpuready_components.eks_gpu import EksGpuCluster

        holder["eks"] = EksGpuCluster("ml", args(**KARPENTER))

    return run(program, project="gpuready", stack="test", config={"aws:region": "us-east-1"}), holder["eks"]


def _release(rendering):
    (release,) = [r for r in rendering.of_type(RELEASE) if r.inputs["chart"] == sf.KARPENTER_CHART.name]
    return release


def _schema(crd_file: str) -> dict:
    crd = yaml.safe_load((CHART_DIR / "crds" / crd_file).read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    return version["schema"]["openAPIV3Schema"]


def _manifest(resource) -> dict:
    return {"apiVersion": resource.inputs["apiVersion"], "kind": resource.inputs["kind"],
            "metadata": resource.inputs["metadata"], "spec": resource.inputs["spec"]}


def test_release_is_the_pinned_oci_chart_with_known_values(built):
    rendering, _ = built
    release = _release(rendering)
    chart = yaml.safe_load((CHART_DIR / "Chart.yaml").read_text())
    assert release.inputs["chart"] == "oci://public.ecr.aws/karpenter/" + chart["name"]
    assert release.inputs["version"] == chart["version"] and release.inputs["namespace"] == "kube-system"
    values = release.inputs["values"]
    defaults = yaml.safe_load((CHART_DIR / "values.yaml").read_text())
    assert set(values["settings"]) <= set(defaults["settings"]) and set(values) <= set(defaults)
    assert set(values["serviceAccount"]) <= set(defaults["serviceAccount"])
    queue = one(rendering, "aws:sqs/queue:Queue", "ml-karpenter")
    assert values["settings"] == {"clusterName": "ml", "interruptionQueue": queue.outputs["name"],
                                  "featureGates": {"nodeRepair": True}}
    # node repair is a gate the pinned chart has (off by default): replacing nodes whose GPUs fail
    assert defaults["settings"]["featureGates"]["nodeRepair"] is False
    assert values["nodeSelector"] == {"eks.amazonaws.com/nodegroup": "ml-system"}
    waits_for = {urn.rsplit("::", 1)[1] + " " + urn.split("::")[2].rsplit("$", 1)[-1] for urn in release.dependencies}
    assert {"ml-karpenter aws:iam/rolePolicy:RolePolicy",
            "ml-karpenter aws:eks/podIdentityAssociation:PodIdentityAssociation",
            "ml-karpenter-node aws:eks/accessEntry:AccessEntry", "ml-system aws:eks/nodeGroup:NodeGroup"} <= waits_for


def test_chart_renders_valid_objects_with_our_values(built):
    release = _release(built[0])
    objects = helm.render(release.inputs["chart"], release.inputs["version"], release.inputs["values"],
                          name="karpenter", namespace="kube-system")
    for o in objects:
        kubernetes_validate.validate(o, "1.34.0", strict=True)
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    env = {e["name"]: e.get("value") for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["CLUSTER_NAME"] == "ml" and env["INTERRUPTION_QUEUE"] == "ml-karpenter"
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "karpenter"


def test_controller_policy_actions_are_aws_operations_and_scoped(built):
    rendering, _ = built
    policy = json.loads(one(rendering, "aws:iam/rolePolicy:RolePolicy", "ml-karpenter").inputs["policy"])
    session = botocore.session.get_session()
    models = {"ec2": "ec2", "iam": "iam", "eks": "eks", "sqs": "sqs", "ssm": "ssm", "pricing": "pricing"}
    operations = {prefix: set(session.get_service_model(service).operation_names) for prefix, service in models.items()}
    for statement in policy["Statement"]:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        for action in actions:
            prefix, _, operation = action.partition(":")
            # iam:PassRole is a permission only, with no API operation of its own.
            assert operation in operations[prefix] or action == "iam:PassRole", action
        mutating = [a for a in actions if not a.split(":")[1].startswith(("Describe", "Get", "List"))]
        if mutating and statement["Resource"] == "*":
            pytest.fail(f"{statement['Sid']}: {mutating} on every resource")
    deletes = [s for s in policy["Statement"] if s["Sid"] == "DeleteOwn"][0]
    assert deletes["Condition"]["StringEquals"] == {"aws:ResourceTag/kubernetes.io/cluster/ml": "owned"}
    passes = [s for s in policy["Statement"] if s["Sid"] == "PassNodeRole"][0]
    assert passes["Resource"].endswith(":role/ml-karpenter-node")


def test_interruption_queue_gets_every_event(built):
    rendering, _ = built
    queue = one(rendering, "aws:sqs/queue:Queue", "ml-karpenter")
    assert queue.inputs["messageRetentionSeconds"] == 300 and queue.inputs["sqsManagedSseEnabled"] is True
    patterns = {json.loads(r.inputs["eventPattern"])["detail-type"][0]
                for r in rendering.of_type("aws:cloudwatch/eventRule:EventRule")}
    assert patterns == {detail for _, detail in sf.KARPENTER_INTERRUPTION_EVENTS.values()}
    targets = rendering.of_type("aws:cloudwatch/eventTarget:EventTarget")
    assert len(targets) == 5 and {t.inputs["arn"] for t in targets} == {queue.outputs["arn"]}
    policy = json.loads(one(rendering, "aws:sqs/queuePolicy:QueuePolicy", "ml-karpenter").inputs["policy"])
    assert policy["Statement"][0]["Principal"]["Service"] == ["events.amazonaws.com", "sqs.amazonaws.com"]


def test_node_class_is_valid_pinned_encrypted_and_imdsv2(built):
    rendering, _ = built
    (nodeclass,) = rendering.of_type(NODE_CLASS)
    manifest = _manifest(nodeclass)
    jsonschema.validate(manifest, _schema("karpenter.k8s.aws_ec2nodeclasses.yaml"))
    spec = manifest["spec"]
    assert manifest["metadata"]["name"] == "gpuready-gpu"
    (alias,) = spec["amiSelectorTerms"]
    assert re.fullmatch(r"al2023@v\d{8}", alias["alias"])  # pinned, never @latest
    (volume,) = spec["blockDeviceMappings"]
    assert volume["ebs"]["encrypted"] is True and int(volume["ebs"]["volumeSize"].removesuffix("Gi")) >= 100
    assert spec["metadataOptions"]["httpTokens"] == "required"
    assert spec["metadataOptions"]["httpPutResponseHopLimit"] == 1
    assert spec["role"] == "ml-karpenter-node"
    assert spec["subnetSelectorTerms"] == [{"id": "subnet-aaaaaaaa"}, {"id": "subnet-bbbbbbbb"}]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**manifest, "spec": {**spec, "metadataOptions": {"httpTokens": "sometimes"}}},
                            _schema("karpenter.k8s.aws_ec2nodeclasses.yaml"))


def test_node_pool_is_valid_and_capped_at_the_stacks_gpus(built):
    rendering, eks = built
    (pool,) = rendering.of_type(NODE_POOL)
    manifest = _manifest(pool)
    jsonschema.validate(manifest, _schema("karpenter.sh_nodepools.yaml"))
    template = manifest["spec"]["template"]
    assert template["spec"]["nodeClassRef"] == {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                                "name": "gpuready-gpu"}
    assert template["metadata"]["labels"] == eks.gpu_node_labels
    assert template["spec"]["taints"] == [eks.gpu_taint]
    assert manifest["spec"]["limits"] == {"nvidia.com/gpu": "12"}
    assert {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]} in \
        template["spec"]["requirements"]
    names = {urn.rsplit("::", 1)[1] for urn in pool.dependencies}
    assert {"ml-karpenter", "ml-gpu-nodeclass"} <= names


def test_no_gpu_node_groups_and_the_device_plugin_is_still_installed(built):
    rendering, eks = built
    assert [r.name for r in rendering.of_type(NODE_GROUP)] == ["ml-system"]
    assert eks.software.install_plan.provider("device-plugin") == "nvidia-device-plugin"


def test_bottlerocket_is_refused_with_karpenter():
    with pytest.raises(ConfigError) as error:
        check(args({"ami_type": "BOTTLEROCKET_x86_64_NVIDIA"}, **KARPENTER))
    assert error.value.field == "node_group.ami_type"


def test_existing_cluster_can_get_karpenter(render):
    from gpuready_components.eks_gpu import ExistingClusterArgs

    rendering, eks = build(render, cluster=None, existing_cluster=ExistingClusterArgs(name="prod", kubeconfig="x"),
                           **KARPENTER)
    assert rendering.of_type(NODE_GROUP) == [] and eks.capacity.autoscaler == "karpenter"
    values = _release(rendering).inputs["values"]
    assert values["settings"]["clusterName"] == "prod" and values["nodeSelector"] == {}


# Reservations: the EC2NodeClass selects them, the NodePool prefers Karpenter's `reserved` capacity type.

BLOCK_ID = "cr-0123456789abcdef0"
CORE_LABELS = (ROOT / "tests" / "data" / "karpenter-core-1.13.0" / "labels.go").read_text()


def _capacity_types_of_karpenter() -> set[str]:
    """The values Karpenter's core knows for ``karpenter.sh/capacity-type`` (its ``CapacityType*`` constants, each
    listed in ``WellKnownValuesForRequirements``)."""
    constants = dict(re.findall(r'\b(CapacityType\w+)\s*=\s*"([^"]+)"', CORE_LABELS))
    well_known = re.search(r"CapacityTypeLabelKey: sets\.New\(([^)]*)\)", CORE_LABELS).group(1)
    return {constants[name.strip()] for name in well_known.split(",") if name.strip()}


def _reserved(render, reservation, node_group=None):
    from gpuready_components.eks_gpu import CapacityReservationArgs

    rendering, eks = build(render, {"instance_types": ["p5.48xlarge"], "max_size": 2,
                                    "reservation": CapacityReservationArgs(**reservation), **(node_group or {})},
                           **KARPENTER)
    (nodeclass,) = rendering.of_type(NODE_CLASS)
    (pool,) = rendering.of_type(NODE_POOL)
    return _manifest(nodeclass), _manifest(pool)


def _capacity_requirement(pool) -> list[str]:
    (req,) = [r for r in pool["spec"]["template"]["spec"]["requirements"] if r["key"] == "karpenter.sh/capacity-type"]
    return req["values"]


def test_karpenters_capacity_types_are_its_cores():
    assert set(sf.KARPENTER_PREFERENCE) == _capacity_types_of_karpenter()
    assert sf.KARPENTER_RESERVED in _capacity_types_of_karpenter()
    assert set(sf.CAPACITY_TYPES.values()) < _capacity_types_of_karpenter()


def test_reserved_capacity_needs_no_feature_gate_in_the_pinned_chart(built):
    defaults = yaml.safe_load((CHART_DIR / "values.yaml").read_text())
    assert defaults["settings"]["featureGates"]["reservedCapacity"] is True  # beta, on by default since v1.6
    values = _release(built[0]).inputs["values"]
    assert values["settings"]["featureGates"].get("reservedCapacity", True) is True


@pytest.mark.parametrize("reservation, terms", [
    ({"kind": "capacity-block", "id": BLOCK_ID}, [{"id": BLOCK_ID}]),
    ({"kind": "odcr", "id": BLOCK_ID}, [{"id": BLOCK_ID}]),
    ({"kind": "odcr", "tags": {"team": "ml"}}, [{"tags": {"team": "ml"}}]),
    ({"kind": "odcr", "preference": "open"}, [{"instanceMatchCriteria": "open"}]),
])
def test_the_node_class_selects_the_reservation_as_its_crd_allows(render, reservation, terms):
    nodeclass, pool = _reserved(render, reservation)
    jsonschema.validate(nodeclass, _schema("karpenter.k8s.aws_ec2nodeclasses.yaml"))
    jsonschema.validate(pool, _schema("karpenter.sh_nodepools.yaml"))
    assert nodeclass["spec"]["capacityReservationSelectorTerms"] == terms
    # reserved first, then on-demand (Karpenter launches reserved capacity first, whatever the order)
    assert _capacity_requirement(pool) == ["reserved", "on-demand"]
    assert set(_capacity_requirement(pool)) <= _capacity_types_of_karpenter()


def test_no_reservation_selects_none_and_admits_no_reserved_capacity(built):
    rendering, _ = built
    (nodeclass,) = rendering.of_type(NODE_CLASS)
    assert "capacityReservationSelectorTerms" not in nodeclass.inputs["spec"]
    assert _capacity_requirement(_manifest(rendering.of_type(NODE_POOL)[0])) == ["on-demand"]


def test_reservations_only_admits_reserved_alone_and_the_pool_says_so(render):
    _, pool = _reserved(render, {"kind": "capacity-block", "id": BLOCK_ID, "only": True, "count": 2,
                                 "start": "2999-01-01", "end": "2999-01-15T11:30:00Z"})
    assert _capacity_requirement(pool) == ["reserved"]
    annotations = pool["metadata"]["annotations"]
    assert annotations["reservations-only.gpuready.io"] == "true"
    assert annotations["reservation-end.gpuready.io"] == "29990115t113000z"
    assert annotations["reservation-count.gpuready.io"] == "2"
    jsonschema.validate(pool, _schema("karpenter.sh_nodepools.yaml"))


def test_an_odcr_on_spot_prefers_the_reservation_then_spot(render):
    _, pool = _reserved(render, {"kind": "odcr", "id": BLOCK_ID}, {"capacity_type": "SPOT"})
    assert _capacity_requirement(pool) == ["reserved", "spot"]


@pytest.mark.parametrize("node_group, field, words", [
    ({"capacity_type": "SPOT", "reservation": {"kind": "capacity-block", "id": BLOCK_ID}},
     "node_group.capacity_type", "mixes no Spot"),
    ({"capacity_type": "SPOT", "reservation": {"kind": "odcr", "id": BLOCK_ID, "only": True}},
     "node_group.capacity_type", "not Spot"),
    ({"reservation": {"kind": "odcr", "resource_group_arn": "arn:aws:resource-groups:us-east-1:123456789012:group/g"}},
     "node_group.reservation.resource_group_arn", "not by resource group"),
    ({"reservation": {"kind": "capacity-block", "id": BLOCK_ID, "tags": {"team": "ml"}}},
     "node_group.reservation.tags", "not both"),
    ({"reservation": {"kind": "odcr", "tags": {}}}, "node_group.reservation.tags", "non-empty"),
    ({"reservation": {"kind": "odcr", "tags": {"team": "ml"}, "preference": "open"}},
     "node_group.reservation.preference", "names none"),
    ({"reservation": {"kind": "capacity-block", "id": BLOCK_ID, "instance_type": "p4d.24xlarge"}},
     "node_group.instance_types", "holds p4d.24xlarge only"),
    ({"max_size": 3, "reservation": {"kind": "capacity-block", "id": BLOCK_ID, "count": 2}},
     "node_group.max_size", "never come"),
    ({"reservation": {"kind": "odcr", "id": BLOCK_ID, "end": "2020-01-01"}}, "node_group.reservation.end", "ended"),
])
def test_a_karpenter_pool_that_cannot_use_the_reservation_is_refused(node_group, field, words):
    from gpuready_components.eks_gpu import CapacityReservationArgs

    given = {"instance_types": ["p5.48xlarge"], "max_size": 2, **node_group,
             "reservation": CapacityReservationArgs(**node_group["reservation"])}
    with pytest.raises(ConfigError) as error:
        check(args(given, **KARPENTER))
    assert error.value.field == field and words in str(error.value)
    assert "\n" not in str(error.value)
