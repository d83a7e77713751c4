"""Karpenter for :class:`~gpuready_components.eks_gpu.EksGpuCluster`: the controller's Pod Identity role (the policy of
Karpenter's getting-started CloudFormation, scoped to this cluster), the interruption queue and its EventBridge
rules, the node role and its access entry, the pinned chart, and the GPU EC2NodeClass and NodePool."""

from __future__ import annotations

import json
from typing import Any, Mapping, Optional, Sequence

import pulumi

from ..sdk import require
from . import autoscaler
from . import facts
from . import reservation
from ..k8s_gpu import scalers as sf
from .reservation import CapacityReservationArgs

aws = require("pulumi_aws")
k8s = require("pulumi_kubernetes")


def controller_policy(cluster: str, region: str, account: str, node_role_arn: str, queue_arn: str) -> str:
    """Launch, tag and terminate only instances tagged for this cluster; pass only the node role."""
    owned = {f"aws:ResourceTag/kubernetes.io/cluster/{cluster}": "owned"}
    request = {f"aws:RequestTag/kubernetes.io/cluster/{cluster}": "owned", "aws:RequestTag/eks:eks-cluster-name": cluster}
    ec2 = f"arn:aws:ec2:{region}"
    launched = [f"{ec2}:*:{kind}/*" for kind in ("fleet", "instance", "volume", "network-interface",
                                                  "launch-template", "spot-instances-request")]
    profile = f"arn:aws:iam::{account}:instance-profile/*"
    profile_tags = {**{k.replace("ResourceTag", "RequestTag"): v for k, v in owned.items()},
                    "aws:RequestTag/eks:eks-cluster-name": cluster,
                    "aws:RequestTag/topology.kubernetes.io/region": region}
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Sid": "Launch", "Effect": "Allow", "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
         "Resource": [f"{ec2}::image/*", f"{ec2}::snapshot/*", f"{ec2}:*:security-group/*", f"{ec2}:*:subnet/*",
                      f"{ec2}:*:capacity-reservation/*", f"{ec2}:*:placement-group/*"]},
        {"Sid": "LaunchFromOwnTemplates", "Effect": "Allow", "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
         "Resource": f"{ec2}:*:launch-template/*",
         "Condition": {"StringEquals": owned, "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"}}},
        {"Sid": "CreateTagged", "Effect": "Allow",
         "Action": ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"], "Resource": launched,
         "Condition": {"StringEquals": request, "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"}}},
        {"Sid": "TagOnCreate", "Effect": "Allow", "Action": "ec2:CreateTags", "Resource": launched,
         "Condition": {"StringEquals": {**request, "ec2:CreateAction": ["RunInstances", "CreateFleet",
                                                                        "CreateLaunchTemplate"]},
                       "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"}}},
        {"Sid": "TagOwnInstances", "Effect": "Allow", "Action": "ec2:CreateTags", "Resource": f"{ec2}:*:instance/*",
         "Condition": {"StringEquals": owned, "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
                       "ForAllValues:StringEquals": {"aws:TagKeys": ["eks:eks-cluster-name", "karpenter.sh/nodeclaim",
                                                                    "Name"]}}},
        {"Sid": "DeleteOwn", "Effect": "Allow", "Action": ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
         "Resource": [f"{ec2}:*:instance/*", f"{ec2}:*:launch-template/*"],
         "Condition": {"StringEquals": owned, "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"}}},
        {"Sid": "PassNodeRole", "Effect": "Allow", "Action": "iam:PassRole", "Resource": node_role_arn,
         "Condition": {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}}},
        {"Sid": "CreateInstanceProfile", "Effect": "Allow", "Action": ["iam:CreateInstanceProfile",
                                                                       "iam:TagInstanceProfile"],
         "Resource": profile, "Condition": {"StringEquals": profile_tags,
                                            "StringLike": {"aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*"}}},
        {"Sid": "ManageOwnInstanceProfiles", "Effect": "Allow",
         "Action": ["iam:AddRoleToInstanceProfile", "iam:RemoveRoleFromInstanceProfile", "iam:DeleteInstanceProfile"],
         "Resource": profile, "Condition": {
             "StringEquals": {**owned, "aws:ResourceTag/topology.kubernetes.io/region": region},
             "StringLike": {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*"}}},
        {"Sid": "ReadInstanceProfiles", "Effect": "Allow", "Action": "iam:GetInstanceProfile", "Resource": profile},
        {"Sid": "Read", "Effect": "Allow", "Action": list(sf.KARPENTER_READ_ACTIONS), "Resource": "*"},
        {"Sid": "ReadAmiParameters", "Effect": "Allow", "Action": "ssm:GetParameter",
         "Resource": f"arn:aws:ssm:{region}::parameter/aws/service/*"},
        {"Sid": "DiscoverEndpoint", "Effect": "Allow", "Action": "eks:DescribeCluster",
         "Resource": f"arn:aws:eks:{region}:{account}:cluster/{cluster}"},
        {"Sid": "InterruptionQueue", "Effect": "Allow",
         "Action": ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"], "Resource": queue_arn},
    ]})


def queue_policy(queue_arn: str) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Sid": "EventBridge", "Effect": "Allow",
         "Principal": {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]},
         "Action": "sqs:SendMessage", "Resource": queue_arn},
        {"Sid": "DenyHTTP", "Effect": "Deny", "Principal": "*", "Action": "sqs:*", "Resource": queue_arn,
         "Condition": {"Bool": {"aws:SecureTransport": "false"}}},
    ]})


def reservation_terms(res: CapacityReservationArgs) -> list[dict[str, Any]]:
    """The EC2NodeClass's ``capacityReservationSelectorTerms`` for ``res``: its id (an ODCR or a Capacity Block), the
    tags its ODCRs carry, or every ``open`` ODCR (``instanceMatchCriteria``)."""
    if res.id is not None:
        return [{"id": res.id}]
    if res.tags:
        return [{"tags": dict(res.tags)}]
    return [{"instanceMatchCriteria": reservation.OPEN}]


def node_class(role_name: Any, subnet_ids: Any, cluster_name: Any, volume_gib: int, kms_key_id: Any,
               tags: Mapping[str, str], reserved: Optional[CapacityReservationArgs] = None) -> dict[str, Any]:
    """The GPU EC2NodeClass: the pinned AL2023 alias, one encrypted gp3 volume, IMDSv2 at hop limit 1; with
    ``reserved``, the reservations it selects (:func:`reservation_terms`)."""
    ebs = {"volumeSize": f"{volume_gib}Gi", "volumeType": "gp3", "encrypted": True, "deleteOnTermination": True}
    if kms_key_id is not None:
        ebs["kmsKeyID"] = kms_key_id
    return {
        "apiVersion": sf.KARPENTER_NODE_CLASS_API, "kind": "EC2NodeClass",
        "metadata": {"name": sf.NODE_POOL_NAME, "labels": {"app.kubernetes.io/managed-by": "gpuready"}},
        "spec": {
            "role": role_name,
            "amiSelectorTerms": [{"alias": sf.KARPENTER_AMI_ALIAS}],
            "subnetSelectorTerms": pulumi.Output.from_input(subnet_ids).apply(lambda ids: [{"id": i} for i in ids]),
            "securityGroupSelectorTerms": [{"tags": {"aws:eks:cluster-name": cluster_name}}],
            "blockDeviceMappings": [{"deviceName": "/dev/xvda", "rootVolume": True, "ebs": ebs}],
            "metadataOptions": {"httpEndpoint": "enabled", "httpTokens": "required",
                                "httpPutResponseHopLimit": facts.IMDS_HOP_LIMIT, "httpProtocolIPv6": "disabled"},
            "tags": dict(tags),
            **({"capacityReservationSelectorTerms": reservation_terms(reserved)} if reserved is not None else {}),
        },
    }


def values(cluster_name: Any, queue_name: Any, node_selector: Mapping[str, Any]) -> dict[str, Any]:
    """The chart values (every key exists in the pinned chart's values.yaml; tests check it)."""
    # nodeRepair: Karpenter replaces a node whose GPU condition (the node monitoring agent's) stays false
    return {"settings": {"clusterName": cluster_name, "interruptionQueue": queue_name,
                         "featureGates": {"nodeRepair": True}},
            "serviceAccount": {"name": sf.KARPENTER_SERVICE_ACCOUNT},
            "nodeSelector": dict(node_selector)}


def install(parent: pulumi.Resource, name: str, cluster_name: Any, subnet_ids: Any, node_selector: Mapping[str, Any],
            depends_on: Sequence[pulumi.Resource], tags: Mapping[str, str], provider: Any, volume_gib: int,
            kms_key_id: Any, node_pool: Mapping[str, Any],
            reserved: Optional[CapacityReservationArgs] = None) -> tuple[Any, Any]:
    """Everything Karpenter needs; returns (the release, the GPU NodePool). ``reserved``: the reservation the
    EC2NodeClass selects."""
    child = pulumi.ResourceOptions(parent=parent)
    node_role = aws.iam.Role(f"{name}-karpenter-node", assume_role_policy=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"},
                                                "Action": "sts:AssumeRole"}]}), tags=dict(tags), opts=child)
    attachments = [aws.iam.RolePolicyAttachment(f"{name}-karpenter-node-{arn.rsplit('/', 1)[1]}", role=node_role.name,
                                                policy_arn=arn, opts=child) for arn in facts.MANAGED_POLICIES["node"]]
    entry = aws.eks.AccessEntry(f"{name}-karpenter-node", cluster_name=cluster_name, principal_arn=node_role.arn,
                                type="EC2_LINUX", tags=dict(tags), opts=child)
    queue = aws.sqs.Queue(f"{name}-karpenter", message_retention_seconds=300, sqs_managed_sse_enabled=True,
                          tags=dict(tags), opts=child)
    aws.sqs.QueuePolicy(f"{name}-karpenter", queue_url=queue.url, policy=queue.arn.apply(queue_policy), opts=child)
    for key, (source, detail) in sf.KARPENTER_INTERRUPTION_EVENTS.items():
        rule = aws.cloudwatch.EventRule(f"{name}-karpenter-{key}", description=f"Karpenter: {detail}",
                                        event_pattern=json.dumps({"source": [source], "detail-type": [detail]}),
                                        tags=dict(tags), opts=child)
        aws.cloudwatch.EventTarget(f"{name}-karpenter-{key}", rule=rule.name, arn=queue.arn, opts=child)
    identity = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=parent))
    region = aws.get_region_output(opts=pulumi.InvokeOutputOptions(parent=parent)).region
    policy = pulumi.Output.all(cluster_name, region, identity.account_id, node_role.arn, queue.arn).apply(
        lambda a: controller_policy(*a))
    waits = autoscaler.pod_identity(parent, name, f"{name}-karpenter", cluster_name, policy, sf.KARPENTER_NAMESPACE,
                                    sf.KARPENTER_SERVICE_ACCOUNT, depends_on, tags)
    chart = sf.KARPENTER_CHART
    release = k8s.helm.v3.Release(
        f"{name}-karpenter", name="karpenter", chart=chart.name, version=chart.version,
        namespace=sf.KARPENTER_NAMESPACE, values=values(cluster_name, queue.name, node_selector),
        description="gpuready: launches GPU nodes for pending GPU pods", atomic=True, cleanup_on_fail=True,
        timeout=600, opts=pulumi.ResourceOptions(parent=parent, provider=provider,
                                                 depends_on=[*waits, entry, *attachments, *depends_on]))
    cr = pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=[release])
    spec = node_class(node_role.name, subnet_ids, cluster_name, volume_gib, kms_key_id, tags, reserved)
    nodeclass = k8s.apiextensions.CustomResource(f"{name}-gpu-nodeclass", api_version=spec["apiVersion"],
                                                 kind=spec["kind"], metadata=spec["metadata"], spec=spec["spec"],
                                                 opts=cr)
    pool = k8s.apiextensions.CustomResource(
        f"{name}-gpu-nodepool", api_version=node_pool["apiVersion"], kind=node_pool["kind"],
        metadata=node_pool["metadata"], spec=node_pool["spec"],
        opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=[release, nodeclass]))
    return release, pool
