"""``EksGpuCluster``: an EKS cluster (new or existing) with a GPU managed node group and the NVIDIA software."""

from __future__ import annotations

import json
from typing import Any, Optional

import pulumi

from ..k8s_gpu import K8sGpuSoftwareArgs, plan
from ..k8s_gpu.cluster import GpuCluster
from ..k8s_gpu.component import K8sGpuSoftware
from ..k8s_gpu.kubeconfig import kubeconfig
from ..sdk import require
from . import facts
from .args import ClusterArgs, EksGpuClusterArgs
from .validation import EksCapacity, check

aws = require("pulumi_aws")
k8s = require("pulumi_kubernetes")


def _assume_role_policy(service: str) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}]})


def eks_kubeconfig(cluster_name: str, endpoint: str, certificate_authority: str, region: str) -> str:
    """A kubeconfig that authenticates with ``aws eks get-token``, as ``aws eks update-kubeconfig`` writes it."""
    return kubeconfig(cluster_name, endpoint, certificate_authority, "aws",
                      ["eks", "get-token", "--cluster-name", cluster_name, "--region", region],
                      "install the AWS CLI v2: https://docs.aws.amazon.com/cli/latest/userguide/getting-started-install.html")


class EksGpuCluster(GpuCluster):
    """A GPU managed node group (NVIDIA AMI, GPU taint, IMDSv2, encrypted volume, scaling from zero) in a new or
    existing EKS cluster, and :class:`~components.k8s_gpu.K8sGpuSoftware` installed through the cluster's API.

    Inputs are checked before any resource is declared (see :mod:`.validation`).
    """

    node_group_name: pulumi.Output[str]
    oidc_provider_arn: Optional[pulumi.Output[str]]
    capacity: EksCapacity

    def __init__(self, name: str, args: EksGpuClusterArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__(facts.TYPE_TOKEN, name, None, opts)
        self.capacity = cap = check(args)
        child = pulumi.ResourceOptions(parent=self)
        tags = {"gpuready:component": name, **args.tags}
        ng = args.node_group

        self.oidc_provider_arn = None
        node_role, node_policies = self._role(f"{name}-gpu-node", "node", tags)
        system_nodes = []
        if args.cluster is not None:
            cluster = self._cluster(name, args.cluster, args.subnet_ids, tags)
            cluster_name = cluster.name
            region = aws.get_region_output(opts=pulumi.InvokeOutputOptions(parent=self)).region
            config = pulumi.Output.secret(pulumi.Output.all(
                cluster.name, cluster.endpoint, cluster.certificate_authority.data, region,
            ).apply(lambda a: eks_kubeconfig(*a)))
            oidc = aws.iam.OpenIdConnectProvider(
                f"{name}-oidc", url=cluster.identities[0].oidcs[0].issuer, client_id_lists=[facts.OIDC_AUDIENCE],
                tags=tags, opts=child)
            self.oidc_provider_arn = oidc.arn
            system_nodes = [self._system_nodes(name, args, cluster.name, node_role, node_policies, tags)]
        else:
            cluster_name = pulumi.Output.from_input(args.existing_cluster.name)
            config = pulumi.Output.secret(args.existing_cluster.kubeconfig)

        launch_template = self._launch_template(f"{name}-gpu", "GPU nodes", facts.GPU_AMI_TYPES[ng.ami_type].data_device,
                                                ng.root_volume_gib, ng.root_volume_kms_key_id, tags)

        software = K8sGpuSoftwareArgs(platform="eks", node_image=cap.node_image, options=args.software,
                                      gpu_models=tuple((r.gpu_model, r.gpu_memory_gib) for r in cap.instances))
        taint = self._gpu_nodes("eks", {**ng.labels, **facts.GPU_NODE_LABELS, **plan(software).node_labels})
        node_group = aws.eks.NodeGroup(
            f"{name}-gpu",
            cluster_name=cluster_name,
            node_role_arn=node_role.arn,
            subnet_ids=ng.subnet_ids if ng.subnet_ids is not None else args.subnet_ids,
            ami_type=ng.ami_type,
            capacity_type=ng.capacity_type,
            instance_types=list(ng.instance_types),
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                min_size=ng.min_size, max_size=ng.max_size,
                desired_size=ng.min_size if ng.desired_size is None else ng.desired_size),
            update_config=aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=1),
            labels=self.gpu_node_labels,
            taints=[aws.eks.NodeGroupTaintArgs(key=taint.key, value=taint.value,
                                               effect=facts.TAINT_EFFECTS_K8S[taint.effect])],
            launch_template=aws.eks.NodeGroupLaunchTemplateArgs(
                id=launch_template.id, version=launch_template.latest_version.apply(str)),
            tags=tags,
            # desiredSize is the autoscaler's to move once the group exists.
            opts=pulumi.ResourceOptions(parent=self, depends_on=node_policies,
                                        ignore_changes=["scalingConfig.desiredSize"]))

        provider = k8s.Provider(f"{name}-k8s", kubeconfig=config, opts=child)
        self.software = K8sGpuSoftware(
            f"{name}-gpu-software",
            software,
            # The releases wait for their deployments (NFD master, the operator), which run on the system nodes.
            opts=pulumi.ResourceOptions(parent=self, providers={"kubernetes": provider},
                                        depends_on=[node_group, *system_nodes]))

        self.node_group_name = node_group.node_group_name
        self._register(cluster_name, config, "nodeGroupName", self.node_group_name, cap,
                       oidcProviderArn=self.oidc_provider_arn)

    def _launch_template(self, name: str, what: str, device: str, gib: int, kms_key_id: Any, tags: dict[str, str]):
        """IMDSv2 only (hop limit 1: pods cannot reach the node role) and one encrypted gp3 volume."""
        return aws.ec2.LaunchTemplate(
            name,
            description=f"gpuready EKS {what}: IMDSv2 only, encrypted gp3 volume for container images",
            metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(
                http_endpoint="enabled", http_tokens="required", http_put_response_hop_limit=facts.IMDS_HOP_LIMIT),
            block_device_mappings=[aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                device_name=device,
                ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                    volume_size=gib, volume_type="gp3", encrypted="true", kms_key_id=kms_key_id,
                    delete_on_termination="true"))],
            tag_specifications=[aws.ec2.LaunchTemplateTagSpecificationArgs(resource_type=kind, tags=tags)
                                for kind in ("instance", "volume")],
            tags=tags, opts=pulumi.ResourceOptions(parent=self))

    def _system_nodes(self, name: str, args: EksGpuClusterArgs, cluster_name: Any, role: Any, policies: list,
                      tags: dict[str, str]):
        system = args.cluster.system_nodes
        template = self._launch_template(f"{name}-system", "system nodes", "/dev/xvda", 50, None, tags)
        return aws.eks.NodeGroup(
            f"{name}-system",
            cluster_name=cluster_name,
            node_role_arn=role.arn,
            subnet_ids=args.subnet_ids,
            ami_type=facts.SYSTEM_AMI_TYPE,
            capacity_type="ON_DEMAND",
            instance_types=list(system.instance_types),
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(min_size=system.size, max_size=system.size,
                                                              desired_size=system.size),
            update_config=aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=1),
            launch_template=aws.eks.NodeGroupLaunchTemplateArgs(
                id=template.id, version=template.latest_version.apply(str)),
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=policies))

    def _cluster(self, name: str, cluster: ClusterArgs, subnet_ids: Any, tags: dict[str, str]):
        child = pulumi.ResourceOptions(parent=self)
        role, policies = self._role(f"{name}-cluster", "cluster", tags)
        key_arn = cluster.secrets_kms_key_arn
        if key_arn is None:
            key_arn = aws.kms.Key(f"{name}-secrets", description=f"gpuready {name}: EKS secrets envelope encryption",
                                  enable_key_rotation=True, deletion_window_in_days=30, tags=tags, opts=child).arn
        public = cluster.endpoint_public_access
        return aws.eks.Cluster(
            name,
            version=cluster.version,
            role_arn=role.arn,
            vpc_config=aws.eks.ClusterVpcConfigArgs(
                subnet_ids=subnet_ids, endpoint_private_access=True, endpoint_public_access=public,
                public_access_cidrs=list(cluster.public_access_cidrs or ["0.0.0.0/0"]) if public else None),
            access_config=aws.eks.ClusterAccessConfigArgs(
                authentication_mode="API", bootstrap_cluster_creator_admin_permissions=True),
            encryption_config=aws.eks.ClusterEncryptionConfigArgs(
                provider=aws.eks.ClusterEncryptionConfigProviderArgs(key_arn=key_arn), resources=["secrets"]),
            enabled_cluster_log_types=list(cluster.log_types),
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=policies))

    def _role(self, name: str, purpose: str, tags: dict[str, str]):
        """An IAM role for one AWS service principal with exactly its managed policies attached."""
        role = aws.iam.Role(name, assume_role_policy=_assume_role_policy(facts.SERVICE_PRINCIPALS[purpose]),
                            tags=tags, opts=pulumi.ResourceOptions(parent=self))
        attachments = [aws.iam.RolePolicyAttachment(f"{name}-{arn.rsplit('/', 1)[1]}", role=role.name, policy_arn=arn,
                                                    opts=pulumi.ResourceOptions(parent=self))
                       for arn in facts.MANAGED_POLICIES[purpose]]
        return role, attachments
