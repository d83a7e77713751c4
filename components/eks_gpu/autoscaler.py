"""cluster-autoscaler for :class:`~gpuready_components.eks_gpu.EksGpuCluster`: its IAM role through EKS Pod Identity, the
node-template tags of each GPU group's Auto Scaling group, and the pinned official chart on the system nodes."""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

import pulumi

from ..sdk import require
from ..k8s_gpu.facts import Taint
from ..k8s_gpu import scalers as sf

aws = require("pulumi_aws")
k8s = require("pulumi_kubernetes")


def iam_policy(cluster_name: str) -> str:
    """Least privilege: the Describe calls on everything, scaling only the groups tagged as this cluster's."""
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Sid": "Describe", "Effect": "Allow", "Action": list(sf.CLUSTER_AUTOSCALER_DESCRIBE_ACTIONS),
         "Resource": "*"},
        {"Sid": "ScaleThisClustersGroups", "Effect": "Allow", "Action": list(sf.CLUSTER_AUTOSCALER_SCALE_ACTIONS),
         "Resource": "*", "Condition": {"StringEquals": {
             f"aws:ResourceTag/{sf.OWNED_TAG.format(cluster=cluster_name)}": "owned"}}},
    ]})


def pod_identity_trust() -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"Service": sf.POD_IDENTITY_PRINCIPAL},
         "Action": ["sts:AssumeRole", "sts:TagSession"]}]})


def values(cluster_name: Any, region: Any, version: str, node_selector: Mapping[str, Any],
           startup_taints: Sequence[Taint] = ()) -> dict[str, Any]:
    """The chart values (every key exists in the pinned chart's values.yaml; tests check it). ``startup_taints``
    (burn-in): ignored in node templates, so a pending pod still scales a group up, and it waits for the node."""
    return {
        "cloudProvider": "aws",
        "awsRegion": region,  # pods cannot reach IMDS at hop limit 1, and Pod Identity does not inject a region
        "autoDiscovery": {"clusterName": cluster_name},
        "rbac": {"serviceAccount": {"name": sf.CLUSTER_AUTOSCALER_SERVICE_ACCOUNT}},
        "image": {"tag": sf.CLUSTER_AUTOSCALER_IMAGES[version]},
        "extraArgs": {**sf.CLUSTER_AUTOSCALER_ARGS,
                      **({sf.STARTUP_TAINT_FLAG: ",".join(t.key for t in startup_taints)} if startup_taints else {})},
        "nodeSelector": dict(node_selector),
    }


def tag_groups(parent: pulumi.Resource, node_groups: Sequence[tuple[str, Any, Mapping[str, str]]]) -> list:
    """Tag each ``(child name, node group, template tags)``'s Auto Scaling group with its node template (tags on
    the node group itself never reach the Auto Scaling group)."""
    tags = []
    for child_name, node_group, template in node_groups:
        asg = node_group.resources.apply(lambda r: r[0].autoscaling_groups[0].name)
        for i, (key, value) in enumerate(sorted(template.items())):
            tags.append(aws.autoscaling.Tag(
                f"{child_name}-template-{i}",
                autoscaling_group_name=asg,
                tag=aws.autoscaling.TagTagArgs(key=key, value=value, propagate_at_launch=False),
                opts=pulumi.ResourceOptions(parent=parent)))
    return tags


def pod_identity(parent: pulumi.Resource, component: str, name: str, cluster_name: Any, policy: Any,
                 namespace: str, service_account: str, system_nodes: Sequence[pulumi.Resource],
                 tags: Mapping[str, str]) -> list:
    """A role ``name`` for one service account through EKS Pod Identity, with an inline ``policy``; returns what a
    release using it must wait for. A new cluster (one with ``system_nodes``) also gets the agent add-on
    (``{component}-pod-identity-agent``); an existing cluster must already run it (creating it twice fails)."""
    child = pulumi.ResourceOptions(parent=parent)
    role = aws.iam.Role(name, assume_role_policy=pod_identity_trust(), tags=dict(tags), opts=child)
    inline = aws.iam.RolePolicy(name, role=role.name, policy=policy, opts=child)
    association = aws.eks.PodIdentityAssociation(
        name, cluster_name=cluster_name, namespace=namespace, service_account=service_account, role_arn=role.arn,
        tags=dict(tags), opts=child)
    if not system_nodes:
        return [inline, association]
    agent = aws.eks.Addon(f"{component}-pod-identity-agent", cluster_name=cluster_name,
                          addon_name=sf.POD_IDENTITY_ADDON, tags=dict(tags),
                          opts=pulumi.ResourceOptions(parent=parent, depends_on=list(system_nodes)))
    return [inline, association, agent]


def install(parent: pulumi.Resource, name: str, cluster_name: Any, region: Any, version: str,
            node_selector: Mapping[str, Any], depends_on: Sequence[pulumi.Resource], tags: Mapping[str, str],
            provider: Any, startup_taints: Sequence[Taint] = ()) -> Any:
    """The role, its policy, the Pod Identity agent and association, and the Helm release (after all of them)."""
    waits = pod_identity(parent, name, f"{name}-cluster-autoscaler", cluster_name,
                         pulumi.Output.from_input(cluster_name).apply(iam_policy), sf.CLUSTER_AUTOSCALER_NAMESPACE,
                         sf.CLUSTER_AUTOSCALER_SERVICE_ACCOUNT, depends_on, tags)
    chart = sf.CLUSTER_AUTOSCALER_CHART
    return k8s.helm.v3.Release(
        f"{name}-cluster-autoscaler",
        name=chart.name, chart=chart.name, version=chart.version,
        repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=chart.repo),
        namespace=sf.CLUSTER_AUTOSCALER_NAMESPACE,
        values=values(cluster_name, region, version, node_selector, startup_taints),
        description="gpuready: scales the GPU node groups from zero",
        atomic=True, cleanup_on_fail=True, timeout=600,
        opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=[*waits, *depends_on]))
