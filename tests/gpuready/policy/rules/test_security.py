"""The security rules (gpuready.policy.rules.security) on the reference stacks, a small IAM program, and edits of
them: the whole violation a user reads (the resource, what is exposed, the fix), and where each rule draws its line
(GPU capacity only, the hop limit of 1, the configured volume size, the /0 of an allow-list, Allow statements)."""

from __future__ import annotations

import json

import pulumi_aws as aws
import pytest
from pulumi_policy import proxy

from gpuready.plan.render import run

from ..helpers import edited, render_stack, said, violations
from . import CE, LAUNCH_TEMPLATE, NODE_GROUP, setting

GKE_CLUSTER = "gcp:container/cluster:Cluster"
AKS_CLUSTER = "azure-native:containerservice:ManagedCluster"
AKS_POOL = "azure-native:containerservice:AgentPool"


@pytest.fixture(scope="module")
def batch():
    """aws-batch: compute environment gpu-gpu-on-demand in subnets gpu-private-0 and -1, launch template gpu-gpu."""
    return render_stack("aws-batch")


def _metadata(**options):
    def change(inputs):
        inputs["metadataOptions"].update(options)
        for key in [k for k, v in inputs["metadataOptions"].items() if v is None]:
            del inputs["metadataOptions"][key]
        return inputs
    return change


IMDSV1 = ("instances accept IMDSv1, so any process that can make a request (an SSRF in a notebook) reads the instance "
          "role's credentials. Fix: set metadataOptions.httpTokens to required")
IMDSV1_ON_GPUS = ("eks-gpu: GPU instances answer IMDSv1, which no hop limit stops: every container on them reads the "
                  "instance role's credentials. Fix: set metadataOptions.httpTokens to required")


def _hops(now):
    return (f"eks-gpu: metadataOptions.httpPutResponseHopLimit is {now}, so job containers and pods behind a bridge "
            f"network get IMDSv2 tokens and the instance role's credentials. Fix: set "
            f"metadataOptions.httpPutResponseHopLimit to 1 and give jobs their own role (Batch jobRoleArn, EKS Pod "
            f"Identity or IRSA)")


def test_every_launch_template_requires_imdsv2_and_a_gpu_ones_hop_limit_1(eks):
    assert said(violations(eks), "launch-template-imdsv2") == said(violations(eks), "imds-hop-limit") == []
    v1 = violations(edited(eks, LAUNCH_TEMPLATE, change=_metadata(httpTokens="optional")))
    assert said(v1, "launch-template-imdsv2") == [("mandatory", name, f"{name}: {IMDSV1}")
                                                  for name in ("eks-gpu", "eks-system")]
    # the GPU groups share one launch template, told once; eks-system's CPUs are not this rule's
    assert said(v1, "imds-hop-limit") == [("mandatory", "eks-gpu", IMDSV1_ON_GPUS)]


@pytest.mark.parametrize("hops, now", [(2, "2"), (None, "not set (Amazon Linux 2023 AMIs then allow 2)")])
def test_a_gpu_launch_template_whose_containers_reach_the_metadata_is_told_its_hop_limit(eks, hops, now):
    report = violations(edited(eks, LAUNCH_TEMPLATE, change=_metadata(httpPutResponseHopLimit=hops)))
    assert said(report, "imds-hop-limit") == [("mandatory", "eks-gpu", _hops(now))]
    assert said(report, "launch-template-imdsv2") == []


def test_a_batch_compute_environments_launch_template_is_held_to_the_same_hop_limit(batch):
    assert said(violations(batch), "imds-hop-limit") == []
    report = violations(edited(batch, LAUNCH_TEMPLATE, "gpu-gpu", _metadata(httpPutResponseHopLimit=2)))
    assert said(report, "imds-hop-limit") == [("mandatory", "gpu-gpu", _hops("2").replace("eks-gpu:", "gpu-gpu:"))]


def test_an_unencrypted_volume_is_told_by_its_device(eks):
    def plain(inputs):
        first = inputs["blockDeviceMappings"][0]
        inputs["blockDeviceMappings"] = [{**first, "ebs": {**first["ebs"], "encrypted": "false"}},
                                         {"deviceName": "/dev/xvdb", "ebs": {"volumeSize": 100}},
                                         {"deviceName": "/dev/xvdc", "ebs": {"volumeSize": 100, "encrypted": "true"}}]
        return inputs

    report = violations(edited(eks, LAUNCH_TEMPLATE, "eks-gpu", plain))
    assert said(report, "launch-template-encrypted") == [(
        "mandatory", "eks-gpu", "eks-gpu: volumes /dev/xvda, /dev/xvdb are not encrypted. Fix: set ebs.encrypted to "
        "true")]


def _small(where, size, name="eks-gpu"):
    return (f"{name}: GPU nodes get a {size} GiB volume ({where}); a 10 GB deep-learning image and its layers fill it, "
            f"and pods stay in ContainerCreating or jobs in STARTING. Fix: give them 100 GiB or more")


def test_gpu_nodes_with_a_small_volume_are_told_where_it_comes_from(eks, batch):
    assert said(violations(eks), "gpu-root-volume-size") == []  # eks-system's 50 GiB holds no GPU image
    report = violations(eks, {"gpu-root-volume-size": {"minGiB": 201}})
    assert said(report, "gpu-root-volume-size") == [
        ("advisory", name, _small("launch template eks-gpu", 200, name).replace("100 GiB", "201 GiB"))
        for name in ("eks-gpu", "eks-gpu-4x")]
    assert said(violations(eks, {"gpu-root-volume-size": {"minGiB": 200}}), "gpu-root-volume-size") == []

    def bigger_second(inputs):
        inputs["blockDeviceMappings"][0]["ebs"]["volumeSize"] = 60
        inputs["blockDeviceMappings"].append({"deviceName": "/dev/xvdb",
                                              "ebs": {"volumeSize": 80, "encrypted": "true"}})
        return inputs
    two = violations(edited(eks, LAUNCH_TEMPLATE, "eks-gpu", bigger_second))
    assert said(two, "gpu-root-volume-size")[0] == ("advisory", "eks-gpu", _small("launch template eks-gpu", 80))

    # a launch template without volumes: EKS ignores the group's diskSize, the AMI's root volume it is
    blank = edited(eks, LAUNCH_TEMPLATE, "eks-gpu", lambda inputs: {**inputs, "blockDeviceMappings": []})
    assert said(violations(blank), "gpu-root-volume-size")[0] == (
        "advisory", "eks-gpu", _small("the AMI's default root volume", 30))

    def own(inputs):
        del inputs["launchTemplate"]
        return inputs
    no_template = edited(edited(eks, NODE_GROUP, "eks-gpu", own), LAUNCH_TEMPLATE, "eks-gpu")
    assert said(violations(no_template), "gpu-root-volume-size")[0] == ("advisory", "eks-gpu", _small("diskSize", 20))
    bare = edited(edited(batch, CE, change=lambda inputs: {**inputs, "computeResources": {
        k: v for k, v in inputs["computeResources"].items() if k != "launchTemplate"}}), LAUNCH_TEMPLATE)
    assert said(violations(bare), "gpu-root-volume-size") == [
        ("advisory", "gpu-gpu-on-demand", _small("the AMI's default root volume", 30, "gpu-gpu-on-demand"))]


def test_gpu_instances_in_public_subnets_or_with_a_public_ip_are_told(batch):
    assert said(violations(batch), "gpu-nodes-no-public-ip") == []
    public = edited(batch, "aws:ec2/subnet:Subnet", change=setting("mapPublicIpOnLaunch", True))
    (told,) = said(violations(public), "gpu-nodes-no-public-ip")
    # the subnets in the order of the engine's dependencies of the compute environment
    assert told in [("mandatory", "gpu-gpu-on-demand", "gpu-gpu-on-demand: GPU instances launch in subnets that give "
                     f"public IPs: {subnets}. Fix: use private subnets behind a NAT gateway")
                    for subnets in ("gpu-private-0, gpu-private-1", "gpu-private-1, gpu-private-0")]
    interface = edited(batch, LAUNCH_TEMPLATE, change=setting("networkInterfaces", [
        {"deviceIndex": 0, "associatePublicIpAddress": "true"}]))
    assert said(violations(interface), "gpu-nodes-no-public-ip") == [(
        "mandatory", "gpu-gpu-on-demand", "gpu-gpu-on-demand: launch template gpu-gpu gives GPU instances a public IP. "
        "Fix: remove associatePublicIpAddress")]
    cpu = edited(public, CE, change=lambda inputs: {**inputs, "computeResources": {
        **inputs["computeResources"], "instanceTypes": ["m6i.large"]}})
    assert said(violations(cpu), "gpu-nodes-no-public-ip") == []


def test_gpu_nodes_of_public_node_pools_or_clusters_are_told():
    aks = render_stack("aks")
    assert said(violations(edited(aks, AKS_POOL, change=setting("enableNodePublicIP", True))),
                "gpu-nodes-no-public-ip") == [("mandatory", "aks-gpu", "aks-gpu: GPU nodes with public IPs. Fix: set "
                                                                       "enableNodePublicIP to false")]
    gke = render_stack("gke")
    public = edited(gke, GKE_CLUSTER, change=setting("enablePrivateNodes", False, "privateClusterConfig"))
    assert said(violations(public), "gpu-nodes-no-public-ip") == [(
        "mandatory", "gke-gpu", "gke-gpu: GPU nodes of cluster gke get public IPs (no private nodes). Fix: set "
        "privateClusterConfig.enablePrivateNodes to true")]


ANYWHERE = "the Kubernetes API endpoint is public to the whole internet"


@pytest.mark.parametrize("cidrs", [["0.0.0.0/0"], ["81.2.69.0/24", "::/0"], [], None])
def test_an_eks_endpoint_open_to_anywhere_is_told(eks, cidrs):
    report = violations(edited(eks, "aws:eks/cluster:Cluster", change=setting("publicAccessCidrs", cidrs, "vpcConfig")))
    assert said(report, "eks-endpoint-allow-list") == [(
        "advisory", "eks", f"eks: {ANYWHERE}. Fix: set vpcConfig.publicAccessCidrs to your networks "
        "(gpuready:apiAllowedCidrs in the reference stacks), or endpointPublicAccess to false")]


def test_an_eks_endpoint_that_is_private_or_allow_listed_is_not_told(eks):
    assert said(violations(eks), "eks-endpoint-allow-list") == []
    private = edited(eks, "aws:eks/cluster:Cluster", change=lambda inputs: {**inputs, "vpcConfig": {
        **inputs["vpcConfig"], "endpointPublicAccess": False, "publicAccessCidrs": ["0.0.0.0/0"]}})
    assert said(violations(private), "eks-endpoint-allow-list") == []


def test_a_gke_or_aks_endpoint_open_to_anywhere_is_told_its_platforms_fix():
    aks = render_stack("aks")
    assert said(violations(aks), "api-endpoint-allow-list") == []
    anywhere = edited(aks, AKS_CLUSTER, change=setting("authorizedIPRanges", ["10.0.0.0/8", "0.0.0.0/0"],
                                                       "apiServerAccessProfile"))
    assert said(violations(anywhere), "api-endpoint-allow-list") == [(
        "advisory", "aks", f"aks: {ANYWHERE}, with no allow-list. Fix: set apiServerAccessProfile.authorizedIPRanges "
        "to your networks (gpuready:apiAllowedCidrs in the reference stacks), or make the endpoint private")]
    private = edited(aks, AKS_CLUSTER, change=setting("apiServerAccessProfile", {"enablePrivateCluster": True}))
    assert said(violations(private), "api-endpoint-allow-list") == []


def _iam_program():
    import pulumi_gcp as gcp

    role = aws.iam.Role("job", assume_role_policy="{}")
    aws.iam.RolePolicy("job", role=role.id, policy=json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": "*"}]}))
    aws.iam.RolePolicyAttachment("job", role=role.id, policy_arn="arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess")
    gcp.projects.IAMMember("job", project="p", role="roles/storage.objectViewer", member="serviceAccount:job@p.iam")


@pytest.fixture(scope="module")
def iam():
    """A role with an inline policy reading S3, a managed S3 read-only policy attached, a GCP viewer role."""
    return run(_iam_program, project="gpuready", stack="test", config={"aws:region": "us-east-1"})


WILDCARD = ("mandatory", "job", 'job: an inline policy allows every action ("Action": "*"). Fix: list the actions the '
                                'role needs')


def _policy(statements):
    return setting("policy", statements if isinstance(statements, str) else json.dumps(
        {"Version": "2012-10-17", "Statement": statements}))


@pytest.mark.parametrize("statements, told", [
    ([{"Effect": "Allow", "Action": "*", "Resource": "*"}], True),
    ({"Effect": "Allow", "Action": ["s3:GetObject", "*"], "Resource": "*"}, True),  # one statement, not a list
    ([{"Effect": "Deny", "Action": "*", "Resource": "*"}], False),
    ([{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}], False),
    ([{"Effect": "Allow", "Resource": "*"}], False),
    ("not json", False),
], ids=["Action *", "* among actions", "Deny *", "s3:*", "no Action", "not JSON"])
def test_an_inline_policy_allowing_every_action_is_told(iam, statements, told):
    report = violations(edited(iam, "aws:iam/rolePolicy:RolePolicy", change=_policy(statements)))
    assert said(report, "iam-no-wildcard-actions") == ([WILDCARD] if told else [])


def test_a_roles_own_inline_policies_are_read_too(iam):
    inline = edited(iam, "aws:iam/role:Role", change=setting("inlinePolicies", [
        {"name": "all", "policy": json.dumps({"Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]})}]))
    assert said(violations(inline), "iam-no-wildcard-actions") == [WILDCARD]


ADMIN = ("mandatory", "job", "job: AdministratorAccess attached. Fix: attach the AWS managed policies the role needs, "
                             "and no others")


def test_administrator_access_attached_or_managed_is_told(iam):
    assert said(violations(iam), "iam-no-administrator") == []
    attached = edited(iam, "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
                      change=setting("policyArn", "arn:aws:iam::aws:policy/AdministratorAccess"))
    assert said(violations(attached), "iam-no-administrator") == [ADMIN]
    managed = edited(iam, "aws:iam/role:Role", change=setting("managedPolicyArns", [
        "arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess", "arn:aws:iam::aws:policy/AdministratorAccess"]))
    assert said(violations(managed), "iam-no-administrator") == [ADMIN]


def test_a_managed_policy_arn_unknown_in_a_preview_is_undecided_unless_admin_is_known(iam):
    unknown = edited(iam, "aws:iam/role:Role", change=setting("managedPolicyArns", [proxy.UNKNOWN_STRING_VALUE]))
    report = violations(unknown, decided=False)
    assert said(report, "iam-no-administrator") == [] and report.undecided["iam-no-administrator"].startswith("job: ")
    both = edited(iam, "aws:iam/role:Role", change=setting("managedPolicyArns", [
        proxy.UNKNOWN_STRING_VALUE, "arn:aws:iam::aws:policy/AdministratorAccess"]))
    report = violations(both, decided=False)
    assert said(report, "iam-no-administrator") == [ADMIN] and "iam-no-administrator" not in report.undecided


@pytest.mark.parametrize("role", ["roles/owner", "roles/editor"])
def test_a_basic_gcp_role_is_told(iam, role):
    report = violations(edited(iam, "gcp:projects/iAMMember:IAMMember", change=setting("role", role)))
    assert said(report, "iam-no-administrator") == [
        ("mandatory", "job", f"job: basic role {role} granted. Fix: grant the predefined roles the member needs")]
