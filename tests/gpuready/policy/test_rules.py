"""Each rule, on real components and small Pulumi programs rendered under mocks: a compliant and a violating case.

Violations are made the way a user could make them: a config value, or a Pulumi stack transformation applied to
the reference stack's own program (which bypasses the components' construction checks, as a hand-edited program
would).

Every test runs twice: on the program rendered with every value known (as ``gpuready plan`` renders it), and rendered
as a first ``pulumi preview`` sees it, where ids, ARNs and every input built from them (a job queue's compute
environment ARNs, a node group's launch template id, subnet ids, role ARNs) are the engine's unknown sentinel. Each
rule must reach the same verdicts in both, and decide everything (``violations`` checks that nothing is undecided).
"""

from __future__ import annotations

import functools
import json

import pulumi
import pulumi_aws as aws
import pytest

from gpuready_components.batch_gpu import BatchGpuEnvironment, BatchGpuEnvironmentArgs
from gpuready.plan.render import run
from gpuready.policy import RULES

from .helpers import ENDPOINT_RULES, break_resource, broken, set_prop, violations
from .helpers import render_stack as render_known

CE = "aws:batch/computeEnvironment:ComputeEnvironment"
QUEUE = "aws:batch/jobQueue:JobQueue"
NG = "aws:eks/nodeGroup:NodeGroup"
LT = "aws:ec2/launchTemplate:LaunchTemplate"
RELEASE = "kubernetes:helm.sh/v3:Release"
GKE_POOL = "gcp:container/nodePool:NodePool"
AKS_POOL = "azure-native:containerservice:AgentPool"


@pytest.fixture(scope="module", params=[False, True], ids=["known", "preview"])
def preview(request):
    return request.param


@pytest.fixture
def render_stack(preview):
    return functools.partial(render_known, preview=preview)


@pytest.fixture
def render(preview):
    """A small program rendered under mocks, in the test's mode."""
    def _render(program):
        return run(program, project="gpuready", stack="test", config={"aws:region": "us-east-1"}, preview=preview)
    return _render


@pytest.fixture(scope="module")
def reference(preview):
    return {stack: render_known(stack, preview=preview) for stack in ("aws-batch", "eks", "gke", "aks")}


def _rules(report, level=None):
    return {v.policy for v in report.violations if level is None or v.level == level}


@pytest.mark.parametrize("stack", ["aws-batch", "eks", "gke", "aks"])
def test_reference_stacks_pass_every_rule(reference, stack, tmp_path):
    from tests.conftest import ROOT

    report = violations(reference[stack], json.loads((ROOT / "policies" / "policy-config.json").read_text()),
                        tmp_path)
    assert report.violations == []
    assert len(report.policies) == len(RULES)


@pytest.mark.parametrize("stack", sorted(ENDPOINT_RULES))
def test_shipped_kubernetes_stacks_allow_anywhere_and_are_told(stack, preview, tmp_path):
    """The stack files reach their API from anywhere so a first pulumi up works; the pack says to narrow it."""
    from tests.conftest import ROOT

    report = violations(render_known(stack, preview=preview, shipped=True),
                        json.loads((ROOT / "policies" / "policy-config.json").read_text()), tmp_path)
    assert {(v.policy, v.level) for v in report.violations} == {(ENDPOINT_RULES[stack], "advisory")}


def _append_cpu_type(props):
    resources = props["compute_resources"]
    set_prop(props, "compute_resources.instance_types", [*pulumi.get(resources, "instance_types"), "m6i.large"])


def test_gpu_queue_gpu_only(tmp_path, render_stack):
    report = violations(render_stack("aws-batch", break_resource(CE, _append_cpu_type)))
    # both queues on that compute environment: the FIFO one Metaflow uses and the teams' fair-share one
    assert broken(report) == {("gpu-queue-gpu-only", "mandatory", "gpu-gpu"),
                              ("gpu-queue-gpu-only", "mandatory", "gpu-gpu-teams")}
    assert "m6i.large" in report.violations[0].message and "Fix:" in report.violations[0].message
    # A CPU queue of its own is the compliant way to run CPU work.
    separate = render_stack("aws-batch", **{"gpuready:cpuQueue": {"instanceTypes": ["m6i.large"]}})
    assert violations(separate).violations == []


def test_gpu_queue_runnable_timeout(reference, tmp_path, render_stack):
    no_limit = render_stack("aws-batch", break_resource(QUEUE, lambda p: set_prop(
        p, "job_state_time_limit_actions", []), name="gpu-gpu"))
    assert broken(violations(no_limit)) == {("gpu-queue-runnable-timeout", "mandatory", "gpu-gpu")}
    strict = violations(reference["aws-batch"], {"gpu-queue-runnable-timeout": {"maxRunnableMinutes": 30}}, tmp_path)
    assert broken(strict) == {("gpu-queue-runnable-timeout", "mandatory", "gpu-gpu"),
                              ("gpu-queue-runnable-timeout", "mandatory", "gpu-gpu-teams")}
    assert "after 60 minutes" in strict.violations[0].message


def test_gpu_job_fits(render):
    def program(gpus):
        env = BatchGpuEnvironment("gpu", BatchGpuEnvironmentArgs(
            instance_types=["g6.xlarge"], subnet_ids=["subnet-aaaaaaaa"], vpc_id="vpc-11111111",
            tags={"team": "ml", "cost-center": "gpu"}))
        aws.batch.JobDefinition("training", type="container", container_properties=json.dumps({
            "image": "pytorch/pytorch", "resourceRequirements": [
                {"type": "GPU", "value": str(gpus)}, {"type": "VCPU", "value": "4"},
                {"type": "MEMORY", "value": "8192"}]}))
        return env

    report = violations(render(lambda: program(4)))
    assert broken(report) == {("gpu-job-fits", "mandatory", "training")}
    assert "asks for 4 GPU" in report.violations[0].message and "g6.xlarge" in report.violations[0].message
    assert violations(render(lambda: program(1))).violations == []


def test_gpu_nvidia_image(render_stack):
    batch = render_stack("aws-batch", break_resource(CE, lambda p: set_prop(
        p, "compute_resources.ec2_configurations[0].image_type", "ECS_AL2023")))
    assert broken(violations(batch)) == {("gpu-nvidia-image", "mandatory", "gpu-gpu-on-demand")}
    custom = render_stack("aws-batch", break_resource(CE, lambda p: set_prop(
        p, "compute_resources.ec2_configurations[0].image_type", "ECS_AL2023")),
        **{"gpuready:imageId": "ami-0123456789abcdef0"})
    assert "gpu-nvidia-image" not in _rules(violations(custom))
    eks = render_stack("eks", break_resource(NG, lambda p: set_prop(p, "ami_type", "AL2023_x86_64_STANDARD"),
                                             name="eks-gpu"))
    assert broken(violations(eks)) == {("gpu-nvidia-image", "mandatory", "eks-gpu")}


def test_gpu_scale_to_zero(tmp_path, render_stack):
    warm = render_stack("eks", **{"gpuready:minSize": 1})
    assert broken(violations(warm)) == {("gpu-scale-to-zero", "mandatory", "eks-gpu"),
                                        ("gpu-scale-to-zero", "mandatory", "eks-gpu-4x")}
    assert violations(warm, {"gpu-scale-to-zero": {"allow": ["eks-gpu", "eks-gpu-4x"]}}, tmp_path).violations == []
    gke = render_stack("gke", **{"gpuready:minNodes": 2})
    assert broken(violations(gke)) == {("gpu-scale-to-zero", "mandatory", "gke-gpu")}


def test_gpu_capacity_caps(reference, tmp_path):
    report = violations(reference["aws-batch"], {"gpu-capacity-caps": {"maxGpus": 8, "maxUsdPerHour": 10}}, tmp_path)
    messages = [v.message for v in report.violations]
    assert broken(report) == {("gpu-capacity-caps", "mandatory", "stack")} and len(messages) == 2
    assert any("16 GPUs" in m for m in messages) and any("$16.10/h" in m for m in messages)
    assert violations(reference["aws-batch"], {"gpu-capacity-caps": {"maxGpus": 16}}, tmp_path).violations == []


def test_cost_allocation_tags(tmp_path, render_stack):
    untagged = render_stack("aks", **{"gpuready:tags": {"team": "ml"}})
    assert broken(violations(untagged)) == {("cost-allocation-tags", "advisory", "aks-gpu")}
    mandatory = violations(untagged, {"cost-allocation-tags": {"enforcementLevel": "mandatory",
                                                               "requiredTags": ["team"]}}, tmp_path)
    assert mandatory.violations == []
    gke = render_stack("gke", **{"gpuready:labels": {}})
    assert "cost-center" in violations(gke).violations[0].message


def test_gpu_taint_tolerated(render_stack):
    untainted = render_stack("eks", break_resource(NG, lambda p: set_prop(p, "taints", []), name="eks-gpu"))
    assert ("gpu-taint-tolerated", "mandatory", "eks-gpu") in broken(violations(untainted))

    def drop_tolerations(props):
        values = dict(props["values"])
        values.pop("tolerations", None)
        set_prop(props, "values", values)

    # On AKS the taint is sku=gpu: the charts' default tolerations do not cover it.
    aks = render_stack("aks", break_resource(RELEASE, drop_tolerations, name="aks-gpu-software-dcgm-exporter"))
    report = violations(aks)
    assert broken(report) == {("gpu-taint-tolerated", "mandatory", "aks-gpu-software-dcgm-exporter")}
    assert "dcgm-exporter daemonset does not tolerate sku=gpu:NoSchedule" in report.violations[0].message


def test_no_double_driver(render_stack):
    operator = render_stack("eks", **{"gpuready:install": "gpu-operator"})
    assert violations(operator).violations == []

    def driver_on(props):
        values = dict(props["values"])
        values["driver"] = {"enabled": True}
        set_prop(props, "values", values)

    twice = render_stack("eks", break_resource(RELEASE, driver_on), **{"gpuready:install": "gpu-operator"})
    report = violations(twice)
    assert broken(report) == {("no-double-driver", "mandatory", "eks-gpu-software-gpu-operator")}
    assert "AL2023_x86_64_NVIDIA" in report.violations[0].message


def test_no_double_driver_on_gke_with_the_operator_beside_gkes_driver(render_stack):
    """GKE's driver, its device plugin off by label, the operator's toolkit and device plugin: nothing twice."""
    operator = render_stack("gke", **{"gpuready:install": "gpu-operator", "gpuready:gpuDriverVersion": "LATEST"})
    assert violations(operator).violations == []

    # Without the opt-out label GKE's device plugin runs beside the operator's.
    plugin_on = render_stack("gke", break_resource(GKE_POOL, lambda p: set_prop(p, "node_config.labels", {}),
                                                   name="gke-gpu"),
                             **{"gpuready:install": "gpu-operator", "gpuready:gpuDriverVersion": "LATEST"})
    report = violations(plugin_on)
    found = broken(report)  # the pool without its labels also leaves its teams' flavor (the queue rules say so)
    assert ("no-double-driver", "mandatory", "gke-gpu-software-gpu-operator") in found
    assert {rule for rule, _, _ in found} - {"no-double-driver"} <= {"gpu-pool-queued", "queue-quota-within-capacity"}
    messages = " ".join(v.message for v in report.violations)
    assert "installs the device-plugin" in messages and "(gke/driver-installed)" in messages


def test_helm_pinned_version(render_stack):
    unpinned = render_stack("eks", break_resource(RELEASE, lambda p: set_prop(p, "version", None),
                                                  name="eks-gpu-software-device-plugin"))
    assert broken(violations(unpinned)) == {("helm-pinned-version", "mandatory", "eks-gpu-software-device-plugin")}


def test_gpu_metrics(reference, render_stack):
    blind = render_stack("eks", **{"gpuready:dcgmExporter": False})
    assert broken(violations(blind)) == {("gpu-metrics", "mandatory", "stack")}
    gke_blind = render_stack("gke", **{"gpuready:managedDcgm": False, "gpuready:dcgmExporter": False})
    assert broken(violations(gke_blind)) == {("gpu-metrics", "mandatory", "stack")}
    assert violations(reference["gke"]).violations == []  # managed DCGM counts


def test_launch_template_imdsv2_and_encryption(render_stack):
    v1 = render_stack("eks", break_resource(LT, lambda p: set_prop(p, "metadata_options.http_tokens", "optional"),
                                            name="eks-gpu"))
    assert broken(violations(v1)) == {("launch-template-imdsv2", "mandatory", "eks-gpu"),
                                      ("imds-hop-limit", "mandatory", "eks-gpu")}
    plain = render_stack("aws-batch", break_resource(LT, lambda p: set_prop(
        p, "block_device_mappings[0].ebs.encrypted", "false")))
    assert broken(violations(plain)) == {("launch-template-encrypted", "mandatory", "gpu-gpu")}


@pytest.mark.parametrize("stack, template", [("aws-batch", "gpu-gpu"), ("eks", "eks-gpu")])
@pytest.mark.parametrize("hops", [2, None])
def test_imds_hop_limit_keeps_instance_credentials_from_containers(render_stack, stack, template, hops):
    reached = render_stack(stack, break_resource(LT, lambda p: set_prop(
        p, "metadata_options.http_put_response_hop_limit", hops), name=template))
    report = violations(reached)
    assert broken(report) == {("imds-hop-limit", "mandatory", template)}
    (message,) = [v.message for v in report.violations]
    assert "httpPutResponseHopLimit is " + ("2" if hops else "not set") in message
    assert "Fix: set metadataOptions.httpPutResponseHopLimit to 1" in message


def test_imds_hop_limit_spares_launch_templates_of_no_gpu_capacity(render):
    def program():
        template = aws.ec2.LaunchTemplate("cpu", metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(
            http_tokens="required", http_put_response_hop_limit=2))
        aws.eks.NodeGroup("cpu", cluster_name="c", node_role_arn="arn:aws:iam::123456789012:role/n",
                          subnet_ids=["subnet-11111111"], instance_types=["m6i.large"],
                          scaling_config=aws.eks.NodeGroupScalingConfigArgs(min_size=0, max_size=1, desired_size=0),
                          launch_template=aws.eks.NodeGroupLaunchTemplateArgs(id=template.id, version="1"))

    assert "imds-hop-limit" not in _rules(violations(render(program)))


def test_batch_job_role_policies_pass_the_iam_rules(render_stack):
    admin = render_stack("aws-batch", **{"gpuready:jobRolePolicyArns": [
        "arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess", "arn:aws:iam::aws:policy/AdministratorAccess"]})
    assert broken(violations(admin)) == {("iam-no-administrator", "mandatory", "gpu-job-1")}


def test_gpu_root_volume_size(render_stack):
    small = render_stack("eks", **{"gpuready:rootVolumeGiB": 50})
    report = violations(small)
    assert broken(report) == {("gpu-root-volume-size", "advisory", "eks-gpu"),
                              ("gpu-root-volume-size", "advisory", "eks-gpu-4x")}
    assert "50 GiB" in report.violations[0].message
    assert broken(violations(render_stack("gke", **{"gpuready:diskSizeGb": 60}))) == {
        ("gpu-root-volume-size", "advisory", "gke-gpu")}


def test_gpu_nodes_no_public_ip(render_stack):
    aks = render_stack("aks", break_resource(AKS_POOL, lambda p: set_prop(p, "enable_node_public_ip", True)))
    assert broken(violations(aks)) == {("gpu-nodes-no-public-ip", "mandatory", "aks-gpu")}
    batch = render_stack("aws-batch", break_resource("aws:ec2/subnet:Subnet", lambda p: set_prop(
        p, "map_public_ip_on_launch", True)))
    report = violations(batch)
    assert broken(report) == {("gpu-nodes-no-public-ip", "mandatory", "gpu-gpu-on-demand")}
    gke = render_stack("gke", break_resource("gcp:container/cluster:Cluster", lambda p: set_prop(
        p, "private_cluster_config.enable_private_nodes", False)))
    assert broken(violations(gke)) == {("gpu-nodes-no-public-ip", "mandatory", "gke-gpu")}


def test_eks_endpoint_allow_list(reference, render_stack):
    open_endpoint = render_stack("eks", **{"gpuready:apiAllowedCidrs": ["0.0.0.0/0"]})
    assert broken(violations(open_endpoint)) == {("eks-endpoint-allow-list", "advisory", "eks")}
    assert violations(open_endpoint).mandatory == []
    private = render_stack("eks", **{"gpuready:apiAllowedCidrs": None, "gpuready:endpointPublicAccess": False})
    assert violations(private).violations == []


@pytest.mark.parametrize("stack", ["gke", "aks"])
def test_api_endpoint_allow_list(stack, render_stack):
    anywhere = render_stack(stack, **{"gpuready:apiAllowedCidrs": ["0.0.0.0/0"]})
    report = violations(anywhere)
    assert broken(report) == {("api-endpoint-allow-list", "advisory", stack)} and report.mandatory == []
    assert "public to the whole internet" in report.violations[0].message
    # Your own networks only: compliant (the reference stacks, and a public egress address).
    assert violations(render_stack(stack, **{"gpuready:apiAllowedCidrs": ["8.20.30.40/32"]})).violations == []


def test_api_endpoint_allow_list_reads_what_the_cluster_receives(render_stack):
    def open_gke(props):
        props["master_authorized_networks_config"] = None

    assert broken(violations(render_stack("gke", break_resource("gcp:container/cluster:Cluster", open_gke)))) == {
        ("api-endpoint-allow-list", "advisory", "gke")}

    def private_gke(props):
        open_gke(props)
        set_prop(props, "private_cluster_config.enable_private_endpoint", True)

    assert violations(render_stack("gke", break_resource("gcp:container/cluster:Cluster", private_gke))).violations \
        == []
    aks = render_stack("aks", break_resource("azure-native:containerservice:ManagedCluster",
                                             lambda p: p.__setitem__("api_server_access_profile", None)))
    assert broken(violations(aks)) == {("api-endpoint-allow-list", "advisory", "aks")}


def test_iam_rules(render):
    def program(action, policy_arn, gcp_role):
        import pulumi_gcp as gcp

        role = aws.iam.Role("job", assume_role_policy="{}")
        # role.id is unknown in a preview: the rules must not need it.
        aws.iam.RolePolicy("job", role=role.id, policy=json.dumps({"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Action": action, "Resource": "*"}]}))
        aws.iam.RolePolicyAttachment("job", role=role.id, policy_arn=policy_arn)
        gcp.projects.IAMMember("job", project="p", role=gcp_role, member="serviceAccount:job@p.iam")

    bad = violations(render(lambda: program("*", "arn:aws:iam::aws:policy/AdministratorAccess", "roles/owner")))
    assert broken(bad) == {("iam-no-wildcard-actions", "mandatory", "job"), ("iam-no-administrator", "mandatory", "job")}
    assert len(bad.violations) == 3
    good = render(lambda: program(["s3:GetObject"], "arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess",
                                  "roles/storage.objectViewer"))
    assert violations(good).violations == []


def test_gpu_scale_from_zero(reference, render_stack):
    assert "gpu-scale-from-zero" not in _rules(violations(reference["eks"]))
    tag = "aws:autoscaling/tag:Tag"

    def wrong_taint(props):
        if "/taint/" in props["tag"].key:
            set_prop(props, "tag.value", "false:NoSchedule")

    report = violations(render_stack("eks", break_resource(tag, wrong_taint)))
    assert broken(report) == {("gpu-scale-from-zero", "mandatory", "stack")}
    assert "taint nvidia.com/gpu=true:NoSchedule has no template tag" in report.violations[0].message
    mixed = render_stack("eks", break_resource(NG, lambda p: set_prop(p, "instance_types", ["g6.xlarge", "g6.12xlarge"]),
                                               name="eks-gpu"))
    assert any("other GPU counts" in v.message for v in violations(mixed).violations
               if v.policy == "gpu-scale-from-zero")
    no_scaler = render_stack("eks", break_resource(RELEASE, lambda p: set_prop(p, "chart", "something-else"),
                                                   name="eks-cluster-autoscaler"))
    assert any(v.policy == "gpu-scale-from-zero" and "without an autoscaler" in v.message
               for v in violations(no_scaler).violations)
    existing = render_stack("eks", **{"gpuready:existingCluster": "prod", "gpuready:kubeconfig": "apiVersion: v1",
                                      "gpuready:apiAllowedCidrs": None})
    assert "gpu-scale-from-zero" not in _rules(violations(existing))  # its own autoscaler: gpuready plan warns


def test_gpu_scale_from_zero_catches_a_plugin_on_auto_mode(render_stack):
    auto = render_stack("eks", **{"gpuready:autoscaler": "auto-mode"})
    assert "gpu-scale-from-zero" not in _rules(violations(auto))
    plugin = render_stack("eks", break_resource(RELEASE, lambda p: set_prop(p, "chart", "nvidia-device-plugin")),
                          **{"gpuready:autoscaler": "auto-mode"})
    assert any(v.policy == "gpu-scale-from-zero" and "two plugins" in v.message for v in violations(plugin).violations)


JOBDEF = "aws:batch/jobDefinition:JobDefinition"
MULTI_NODE_ENV = "gpu-multi-node"


def test_multi_node_reference_stack_passes_every_rule(preview, tmp_path):
    """The 2 x p5.48xlarge stack passes every rule of the shipped policy config; only its cost needs the cap raised
    (2 x p5.48xlarge alone run $196.64/h, over the shipped $100/h), as the README says."""
    from tests.conftest import ROOT

    config = json.loads((ROOT / "policies" / "policy-config.json").read_text())
    config["gpu-capacity-caps"] = {"maxGpus": 64, "maxUsdPerHour": 300}
    report = violations(render_known("aws-batch-multinode", preview=preview), config, tmp_path)
    assert report.violations == [] and len(report.policies) == len(RULES)


@pytest.mark.parametrize("path, value, why", [
    ("compute_resources.type", "SPOT", "SPOT capacity"),
    ("compute_resources.subnets", ["subnet-aaaaaaaa", "subnet-bbbbbbbb"], "spans 2 subnets"),
    ("compute_resources.placement_group", None, "no placement group"),
])
def test_multi_node_capacity(render_stack, path, value, why):
    broken_env = render_stack("aws-batch-multinode", break_resource(CE, lambda p: set_prop(p, path, value),
                                                                    name=MULTI_NODE_ENV))
    report = violations(broken_env)
    assert ("multi-node-capacity", "mandatory", "gpu-gpu-multi-node") in broken(report)
    (found,) = [v for v in report.violations if v.policy == "multi-node-capacity"]
    assert why in found.message and "Fix:" in found.message


def test_multi_node_capacity_wants_a_cluster_placement_group(render_stack):
    spread = render_stack("aws-batch-multinode", break_resource(
        "aws:ec2/placementGroup:PlacementGroup", lambda p: set_prop(p, "strategy", "spread")))
    report = violations(spread)
    assert broken(report) == {("multi-node-capacity", "mandatory", "gpu-gpu-multi-node")}
    assert "is spread, not cluster" in report.violations[0].message


def _drop_ulimits(props):
    def drop(text):
        nodes = json.loads(text)
        for node_range in nodes["nodeRangeProperties"]:
            node_range["container"].pop("ulimits")
        return json.dumps(nodes)

    props["node_properties"] = pulumi.Output.from_input(props["node_properties"]).apply(drop)


def test_efa_memlock(render_stack):
    report = violations(render_stack("aws-batch-multinode", break_resource(JOBDEF, _drop_ulimits,
                                                                           name="gpu-gpu-multi-node")))
    assert broken(report) == {("efa-memlock", "mandatory", "gpu-gpu-multi-node")}
    assert "32" in report.violations[0].message and "memlock" in report.violations[0].message
    # Without EFA devices there is nothing to lock.
    no_efa = render_stack("aws-batch-multinode", break_resource(JOBDEF, _drop_ulimits, name="gpu-gpu-multi-node"),
                          **{"gpuready:multiNode": {"nodes": 2, "efaInterfaces": 0}})
    assert violations(no_efa).violations == []
