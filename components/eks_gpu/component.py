"""``EksGpuCluster``: an EKS cluster (new or existing) with GPU nodes that scale from zero and the NVIDIA software."""

from __future__ import annotations

import json
from typing import Any, Optional, Sequence

import pulumi

from ..aws_instances import efa_layout
from ..k8s_gpu import K8sGpuSoftwareArgs, plan
from ..k8s_gpu.cluster import GpuCluster
from ..k8s_gpu.component import K8sGpuSoftware
from ..k8s_gpu import facts as k8s_facts
from ..k8s_gpu.install import gpu_toleration
from ..k8s_gpu.kubeconfig import kubeconfig
from ..k8s_gpu.kueue import Flavor, flavor
from ..k8s_gpu.topology import visible as topology_visible
from ..teams import Pool
from ..sdk import require
from ..aws_network import capacity_blocks, zones
from . import autoscaler, efa, facts, karpenter, repair, reservation
from ..k8s_gpu import scalers as sf
from .args import ClusterArgs, EksGpuClusterArgs
from .auto_mode import install as reserved_node_class
from .nodepool import capacity_types, node_pool
from .outputs import OUTPUTS
from ..k8s_gpu.scale_from_zero import template_tags
from .validation import (EksCapacity, catalog_of, check, checked_inputs, efa_resources, gpu_labels, group_labels,
                         startup_taints)

aws = require("pulumi_aws")
k8s = require("pulumi_kubernetes")


def _assume_role_policy(service: str, tag_session: bool = False) -> str:
    action = ["sts:AssumeRole", "sts:TagSession"] if tag_session else "sts:AssumeRole"
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"Service": service}, "Action": action}]})


def eks_kubeconfig(cluster_name: str, endpoint: str, certificate_authority: str, region: str) -> str:
    """A kubeconfig that authenticates with ``aws eks get-token``, as ``aws eks update-kubeconfig`` writes it."""
    return kubeconfig(cluster_name, endpoint, certificate_authority, "aws",
                      ["eks", "get-token", "--cluster-name", cluster_name, "--region", region],
                      "install the AWS CLI v2: https://docs.aws.amazon.com/cli/latest/userguide/getting-started-install.html")


class EksGpuCluster(GpuCluster):
    """GPU nodes (NVIDIA AMI, GPU taint, IMDSv2, encrypted volume) in a new or existing EKS cluster, with what scales
    them from zero (``args.autoscaler``): managed node groups, one per GPU count and model, and cluster-autoscaler
    (or the cluster's own autoscaler), or a GPU NodePool of Karpenter or EKS Auto Mode; and
    :class:`~gpuready_components.k8s_gpu.K8sGpuSoftware` installed through the cluster's API.

    Inputs are checked before any resource is declared (see :mod:`.validation`).
    """

    node_group_name: pulumi.Output[str]
    """The first GPU node group (the fewest GPUs per node)."""
    node_group_names: pulumi.Output[list[str]]
    """Every GPU node group: one per GPU count and model."""
    autoscaler: Optional[pulumi.Resource]
    """The cluster-autoscaler or Karpenter Helm release, where the stack installs one."""
    oidc_provider_arn: Optional[pulumi.Output[str]]
    capacity: EksCapacity

    def __init__(self, name: str, args: EksGpuClusterArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__(facts.TYPE_TOKEN, name, None, opts)
        self.capacity = cap = check(args)
        self._check_teams(args.teams, [Pool(pool, gpus) for pool, gpus, _ in self._pools(args)], args.overcommit_quotas,
                          args.software.namespace)
        self._types = catalog_of(args)  # the file's types and the declared ones, whose facts it stamps
        args = checked_inputs(args)
        child = pulumi.ResourceOptions(parent=self)
        tags = {"gpuready:component": name, **args.tags}
        ng = args.node_group

        self.oidc_provider_arn = None
        auto_mode = cap.autoscaler == sf.AUTO_MODE
        node_pools = cap.autoscaler in (sf.AUTO_MODE, sf.KARPENTER)  # a GPU NodePool instead of node groups
        node_role, node_policies = self._role(f"{name}-gpu-node", "node", tags, auto_mode=auto_mode)
        system_nodes = []
        cluster = None
        if args.cluster is not None:
            cluster = self._cluster(name, args.cluster, args.subnet_ids, tags,
                                    auto_mode_node_role=node_role if auto_mode else None)
            cluster_name = cluster.name
            region = aws.get_region_output(opts=pulumi.InvokeOutputOptions(parent=self)).region
            config = pulumi.Output.secret(pulumi.Output.all(
                cluster.name, cluster.endpoint, cluster.certificate_authority.data, region,
            ).apply(lambda a: eks_kubeconfig(*a)))
            oidc = aws.iam.OpenIdConnectProvider(
                f"{name}-oidc", url=cluster.identities[0].oidcs[0].issuer, client_id_lists=[facts.OIDC_AUDIENCE],
                tags=tags, opts=child)
            self.oidc_provider_arn = oidc.arn
            if not auto_mode:  # Auto Mode's built-in system pool runs the controllers
                system_nodes = [self._system_nodes(name, args, cluster.name, node_role, node_policies, tags)]
        else:
            cluster_name = pulumi.Output.from_input(args.existing_cluster.name)
            config = pulumi.Output.secret(args.existing_cluster.kubeconfig)

        software = K8sGpuSoftwareArgs(platform="eks", node_image=cap.node_image, options=args.software,
                                      gpu_models=tuple((r.gpu_model, r.gpu_memory_gib) for r in cap.instances),
                                      extra_instance_types=args.extra_instance_types)
        taint = self._gpu_nodes("eks", {**gpu_labels(ng), **plan(software).node_labels})
        gpu_subnets, subnet_zones, block = self._gpu_subnets(args)
        node_groups = [] if node_pools else self._gpu_node_groups(name, args, cluster, cluster_name, node_role,
                                                                  node_policies, tags, gpu_subnets)
        if node_groups and ng.repair.enabled and system_nodes:
            # the agent whose conditions node repair acts on; an existing cluster must run it already (an add-on
            # made twice fails)
            aws.eks.Addon(f"{name}-node-monitoring-agent", cluster_name=cluster_name,
                          addon_name=repair.MONITORING_ADDON, tags=tags,
                          opts=pulumi.ResourceOptions(parent=self, depends_on=list(system_nodes)))

        provider = k8s.Provider(f"{name}-k8s", kubeconfig=config, opts=child)
        self.autoscaler = None
        selector = {"eks.amazonaws.com/nodegroup": system_nodes[0].node_group_name} if system_nodes else {}
        if node_pools:
            node_class = sf.KARPENTER_NODE_CLASS
            if auto_mode:  # the built-in default NodeClass, or on a reservation a custom one that selects it
                node_class = sf.AUTO_MODE_NODE_CLASS if ng.reservation is None else sf.AUTO_MODE_RESERVED_NODE_CLASS
            spec = node_pool(self.pool_labels(sf.NODE_POOL_NAME, self.gpu_node_labels), taint, ng.instance_types,
                             capacity_types(ng.reservation, ng.capacity_type), cap.max_gpus, node_class,
                             startup_taints(args),
                             {**self._types.stamps("aws", ng.instance_types), **reservation.stamps(ng.reservation)})
            if auto_mode:
                waits = [cluster, *node_policies]
                if ng.reservation is not None:
                    waits.append(reserved_node_class(self, name, cluster, node_role, gpu_subnets, provider,
                                                     node_policies, ng.reservation))
                pool = k8s.apiextensions.CustomResource(
                    f"{name}-gpu-nodepool", api_version=spec["apiVersion"], kind=spec["kind"],
                    metadata=spec["metadata"], spec=spec["spec"],
                    opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=waits))
            else:
                self.autoscaler, pool = karpenter.install(
                    self, name, cluster_name, gpu_subnets,
                    selector, system_nodes, tags, provider, ng.root_volume_gib, ng.root_volume_kms_key_id, spec,
                    ng.reservation)
            self.node_group_name = pulumi.Output.from_input(sf.NODE_POOL_NAME)
            self.node_group_names = pulumi.Output.from_input([sf.NODE_POOL_NAME])
            gpu_capacity = [pool]
        else:
            self.node_group_name = node_groups[0][1].node_group_name
            self.node_group_names = pulumi.Output.all(*[g.node_group_name for _, g, _ in node_groups])
            gpu_capacity = [g for _, g, _ in node_groups]
        if cap.autoscaler == sf.CLUSTER_AUTOSCALER:
            autoscaler.tag_groups(self, node_groups)
            region = aws.get_region_output(opts=pulumi.InvokeOutputOptions(parent=self)).region
            self.autoscaler = autoscaler.install(self, name, cluster_name, region, cap.kubernetes_version, selector,
                                                 system_nodes, tags, provider, startup_taints(args))
        if cap.efa_interfaces:
            self.gpu_fabric, self.gpu_efa_interfaces = "efa", cap.efa_interfaces
            self._efa_device_plugin(name, args, provider, gpu_capacity)
        self.software = K8sGpuSoftware(
            f"{name}-gpu-software",
            software,
            # The releases wait for their deployments (NFD master, the operator), which run on the system nodes.
            opts=pulumi.ResourceOptions(parent=self, providers={"kubernetes": provider},
                                        depends_on=[*gpu_capacity, *system_nodes]))
        self._queues(name, self._flavors(args), selector, provider, [self.software])

        if ng.reservation is not None:  # each GPU node group, or the GPU NodePool (its nodes carry its name)
            self.gpu_reservations = pulumi.Output.all(self.node_group_names, subnet_zones, block).apply(
                lambda a: [{"pool": n, **reservation.output(ng.reservation, zones.known_zones(a[1]), a[2])}
                           for n in a[0]])
        self._register(OUTPUTS, cluster_name, config, cap, nodeGroupName=self.node_group_name,
                       oidcProviderArn=self.oidc_provider_arn, nodeGroupNames=self.node_group_names,
                       autoscaler=cap.autoscaler)

    def _pools(self, args: EksGpuClusterArgs) -> list[tuple[str, int, Any]]:
        """(name, GPUs at full scale, the group) of each GPU pool: each GPU node group (``gpu``, ``gpu-4x``...), or
        the one NodePool of Karpenter or Auto Mode (``gpuready-gpu``)."""
        cap = self.capacity
        if cap.autoscaler in (sf.AUTO_MODE, sf.KARPENTER):
            return [(sf.NODE_POOL_NAME, cap.max_gpus, None)]
        return [(f"gpu{g.suffix}", args.node_group.max_size * g.gpus, g) for g in cap.groups]

    def _flavors(self, args: EksGpuClusterArgs) -> list[Flavor]:
        """Each GPU pool as Kueue's ResourceFlavor: the labels and taints its nodes get, its types' shapes, and for a
        multi-node pool whose nodes Kueue sees at admission its topology (:meth:`_placement`)."""
        taints = [k8s_facts.Taint(t["key"], t["value"], t["effect"]) for t in self.gpu_node_taints]
        rows = {r.name: r for r in self.capacity.instances}
        return [flavor(pool, gpus, self.pool_labels(pool, self.gpu_node_labels if group is None
                                                    else group_labels(self.gpu_node_labels, group)),
                       taints, [rows[t] for t in (group.instance_types if group else rows)],
                       topology=self._placement(args, group))
                for pool, gpus, group in self._pools(args)]

    def _placement(self, args: EksGpuClusterArgs, group: Any) -> Any:
        """The topology of a GPU node group's gangs (docs/queues/topology.md): a multi-node group (EFA, the stack's
        setting for NCCL across nodes, or an UltraServer type, whose nodes share one NVLink domain
        (:func:`facts.ultraserver_type`); and more than one node) of types EC2 describes the topology of
        (:func:`facts.placement`), whose nodes are all there when Kueue admits a job (``min_size`` = ``max_size``:
        Kueue's topology-aware scheduling counts only Ready nodes, so a group scaling from zero would keep its jobs
        from ever being admitted); ``None`` otherwise (a NodePool of Karpenter or Auto Mode has no EFA here)."""
        ng = args.node_group
        if group is None or ng.max_size < 2 \
                or not (self.capacity.efa_interfaces or facts.ultraserver_type(group.instance_types)) \
                or not topology_visible(ng.min_size, ng.max_size, provisioning=False):
            return None
        return facts.placement(group.instance_types)

    def _efa_device_plugin(self, name: str, args: EksGpuClusterArgs, provider: Any, gpu_capacity: list) -> Any:
        """The pinned AWS EFA device plugin chart, on the EFA nodes whatever their taints."""
        chart = facts.EFA_DEVICE_PLUGIN_CHART
        taints = [k8s_facts.Taint(t["key"], t["value"], t["effect"]) for t in self.gpu_node_taints]
        tolerations = [gpu_toleration(t) for t in (*taints, *startup_taints(args))]
        return k8s.helm.v3.Release(
            f"{name}-efa-device-plugin",
            name=chart.name, chart=chart.name, version=chart.version,
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=chart.repo),
            namespace=facts.EFA_DEVICE_PLUGIN_NAMESPACE,
            values=efa.device_plugin_values(tolerations, self.gpu_node_labels),
            description=f"gpuready: advertises the GPU nodes' EFA interfaces as {facts.EFA_RESOURCE}",
            atomic=True, cleanup_on_fail=True, timeout=600,
            opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=gpu_capacity))

    def _efa_network(self, name: str, args: EksGpuClusterArgs, cluster: Any, tags: dict[str, str]):
        """The EFA node group's cluster placement group, its security group (all traffic from itself: EFA's
        requirement) and the security groups its interfaces carry (the cluster's, which EKS adds only when the launch
        template names none, and that one)."""
        child = pulumi.ResourceOptions(parent=self)
        if cluster is not None:
            vpc_id, cluster_sg = cluster.vpc_config.vpc_id, cluster.vpc_config.cluster_security_group_id
        else:
            found = aws.eks.get_cluster_output(name=args.existing_cluster.name,
                                               opts=pulumi.InvokeOutputOptions(parent=self))
            vpc_id, cluster_sg = found.vpc_config.vpc_id, found.vpc_config.cluster_security_group_id
        placement = aws.ec2.PlacementGroup(f"{name}-gpu-efa", strategy=facts.EFA_PLACEMENT_STRATEGY, tags=tags,
                                           opts=child)
        group = aws.ec2.SecurityGroup(
            f"{name}-gpu-efa", vpc_id=vpc_id,
            description="gpuready EKS EFA nodes: all traffic between them, as EFA requires",
            ingress=[aws.ec2.SecurityGroupIngressArgs(protocol="-1", from_port=0, to_port=0, self=True,
                                                      description="EFA and NCCL between the EFA nodes")],
            egress=[aws.ec2.SecurityGroupEgressArgs(protocol="-1", from_port=0, to_port=0, self=True,
                                                    description="EFA and NCCL between the EFA nodes")],
            tags=tags, opts=child)
        return placement, [cluster_sg, group.id]

    def _launch_template(self, name: str, what: str, device: str, gib: int, kms_key_id: Any, tags: dict[str, str],
                         efa_interfaces: int = 0, instance_types: Sequence[str] = (), security_groups: Any = None,
                         placement_group: Any = None, reserved: Optional[reservation.CapacityReservationArgs] = None):
        """IMDSv2 only (hop limit 1: pods cannot reach the node role) and one encrypted gp3 volume; with
        ``efa_interfaces``, the EFA interfaces ``instance_types`` take (:func:`efa_layout`; ``security_groups`` on
        each) in ``placement_group`` (EKS refuses a subnet in the template: the node group's subnets place the
        interfaces); with ``reserved``, the reservation the instances launch into (:func:`_reservation_args`)."""
        efa_args: dict[str, Any] = _reservation_args(reserved)
        if efa_interfaces:
            efa_args.update(
                network_interfaces=[aws.ec2.LaunchTemplateNetworkInterfaceArgs(
                    network_card_index=card, device_index=device, interface_type=kind,
                    security_groups=security_groups, delete_on_termination="true")
                    for card, device, kind in efa_layout(instance_types, efa_interfaces)],
                placement=aws.ec2.LaunchTemplatePlacementArgs(group_name=placement_group.name))
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
            tags=tags, **efa_args, opts=pulumi.ResourceOptions(parent=self))

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

    def _cluster(self, name: str, cluster: ClusterArgs, subnet_ids: Any, tags: dict[str, str],
                 auto_mode_node_role: Any = None):
        """The cluster; with ``auto_mode_node_role``, EKS Auto Mode's compute, storage and load balancing together."""
        child = pulumi.ResourceOptions(parent=self)
        auto = auto_mode_node_role is not None
        role, policies = self._role(f"{name}-cluster", "cluster", tags, auto_mode=auto)
        key_arn = cluster.secrets_kms_key_arn
        if key_arn is None:
            key_arn = aws.kms.Key(f"{name}-secrets", description=f"gpuready {name}: EKS secrets envelope encryption",
                                  enable_key_rotation=True, deletion_window_in_days=30, tags=tags, opts=child).arn
        public = cluster.endpoint_public_access
        return aws.eks.Cluster(
            name,
            version=cluster.version or sf.DEFAULT_KUBERNETES_VERSION,
            role_arn=role.arn,
            vpc_config=aws.eks.ClusterVpcConfigArgs(
                subnet_ids=subnet_ids, endpoint_private_access=True, endpoint_public_access=public,
                public_access_cidrs=list(cluster.public_access_cidrs or ["0.0.0.0/0"]) if public else None),
            access_config=aws.eks.ClusterAccessConfigArgs(
                authentication_mode="API", bootstrap_cluster_creator_admin_permissions=True),
            encryption_config=aws.eks.ClusterEncryptionConfigArgs(
                provider=aws.eks.ClusterEncryptionConfigProviderArgs(key_arn=key_arn), resources=["secrets"]),
            enabled_cluster_log_types=list(cluster.log_types),
            **(dict(
                compute_config=aws.eks.ClusterComputeConfigArgs(
                    enabled=True, node_pools=list(sf.AUTO_MODE_BUILTIN_POOLS), node_role_arn=auto_mode_node_role.arn),
                storage_config=aws.eks.ClusterStorageConfigArgs(
                    block_storage=aws.eks.ClusterStorageConfigBlockStorageArgs(enabled=True)),
                kubernetes_network_config=aws.eks.ClusterKubernetesNetworkConfigArgs(
                    elastic_load_balancing=aws.eks.ClusterKubernetesNetworkConfigElasticLoadBalancingArgs(
                        enabled=True)),
                bootstrap_self_managed_addons=False) if auto else {}),
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=policies))

    def _role(self, name: str, purpose: str, tags: dict[str, str], auto_mode: bool = False):
        """An IAM role for one AWS service principal with exactly its managed policies attached (EKS Auto Mode's
        for Auto Mode, whose cluster role also tags sessions)."""
        policies = facts.MANAGED_POLICIES[purpose]
        if auto_mode:
            policies = sf.AUTO_MODE_CLUSTER_POLICIES if purpose == "cluster" else sf.AUTO_MODE_NODE_POLICIES
        role = aws.iam.Role(name, assume_role_policy=_assume_role_policy(
            facts.SERVICE_PRINCIPALS[purpose], tag_session=auto_mode and purpose == "cluster"),
            tags=tags, opts=pulumi.ResourceOptions(parent=self))
        attachments = [aws.iam.RolePolicyAttachment(f"{name}-{arn.rsplit('/', 1)[1]}", role=role.name, policy_arn=arn,
                                                    opts=pulumi.ResourceOptions(parent=self))
                       for arn in policies]
        return role, attachments

    def _gpu_subnets(self, args: EksGpuClusterArgs) -> tuple[Any, Any, Any]:
        """The GPU nodes' subnets (the node group's, else the cluster's), their zones (subnet id to zone) and the facts
        of a Capacity Block read from EC2. A Capacity Block is read at preview and checked against the pool, and the
        subnets against its zone (:mod:`..aws_network.capacity_blocks`); another reservation whose zone is given has
        the subnets' zones read and checked against it (:mod:`..aws_network.zones`); else the subnets as given, no
        zones and no facts read."""
        ng = args.node_group
        subnet_ids = ng.subnet_ids if ng.subnet_ids is not None else args.subnet_ids
        field = "node_group.subnet_ids" if ng.subnet_ids is not None else "subnet_ids"
        res = ng.reservation
        pool = reservation.block_pool(res, instance_types=ng.instance_types, max_size=ng.max_size,
                                      subnets_field=field) if res is not None else None
        if pool is not None:
            return capacity_blocks.checked_subnets(subnet_ids, pool, capacity_blocks.BlockFacts.of(res), self)
        if res is None or not res.availability_zone:
            return subnet_ids, {}, None
        found = zones.subnet_zones(subnet_ids, self)
        return zones.checked_subnets(subnet_ids, found, field=field, reservation=reservation.describe(res),
                                     zone=res.availability_zone,
                                     zone_field="node_group.reservation.availability_zone"), found, None

    def _gpu_node_groups(self, name: str, args: EksGpuClusterArgs, cluster: Any, cluster_name: Any, node_role: Any,
                         node_policies: list, tags: dict[str, str], subnet_ids: Any) -> list:
        """One managed node group per GPU count and model in ``subnet_ids``, each with its node-template tags (plain
        values); EFA groups in one subnet (the first given) and one cluster placement group."""
        ng, cap = args.node_group, self.capacity
        taint = facts.NODES.taint
        efa_args: dict[str, Any] = {}
        if cap.efa_interfaces:
            placement, groups = self._efa_network(name, args, cluster, tags)
            efa_args = dict(efa_interfaces=cap.efa_interfaces, instance_types=list(ng.instance_types),
                            security_groups=groups, placement_group=placement)
            subnet_ids = pulumi.Output.from_input(subnet_ids).apply(lambda ids: list(ids)[:1])
        launch_template = self._launch_template(f"{name}-gpu", "GPU nodes", facts.GPU_AMI_TYPES[ng.ami_type].data_device,
                                                ng.root_volume_gib, ng.root_volume_kms_key_id, tags,
                                                reserved=ng.reservation, **efa_args)

        node_groups = []
        for group in cap.groups:
            labels = self.pool_labels(f"gpu{group.suffix}", group_labels(self.gpu_node_labels, group))
            node_groups.append((f"{name}-gpu{group.suffix}", aws.eks.NodeGroup(
                f"{name}-gpu{group.suffix}",
                cluster_name=cluster_name,
                node_role_arn=node_role.arn,
                subnet_ids=subnet_ids,
                ami_type=ng.ami_type,
                capacity_type=reservation.capacity_type(ng.reservation, ng.capacity_type),
                instance_types=list(group.instance_types),
                scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                    min_size=ng.min_size, max_size=ng.max_size,
                    desired_size=ng.min_size if ng.desired_size is None else ng.desired_size),
                update_config=aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=1),
                labels=labels,
                taints=[aws.eks.NodeGroupTaintArgs(key=t.key, value=t.value, effect=k8s_facts.TAINT_EFFECTS_K8S[t.effect])
                        for t in (taint, *startup_taints(args))],
                launch_template=aws.eks.NodeGroupLaunchTemplateArgs(
                    id=launch_template.id, version=launch_template.latest_version.apply(str)),
                node_repair_config=repair.node_repair_config(ng.repair),
                # the GPU facts of declared types, and the reservation's known facts
                tags={**tags, **self._types.stamps("aws", group.instance_types), **reservation.stamps(ng.reservation)},
                # desiredSize is the autoscaler's to move once the group exists.
                opts=pulumi.ResourceOptions(parent=self, depends_on=node_policies,
                                            ignore_changes=["scalingConfig.desiredSize"])),
                template_tags(group.gpus, labels, [taint], efa_resources(cap.efa_interfaces))))
        return node_groups


def _reservation_args(res: Optional[reservation.CapacityReservationArgs]) -> dict[str, Any]:
    """The launch template inputs that put the nodes into ``res`` (none without one): a Capacity Block's market type
    and id, an ODCR's target (id or resource group) or ``open`` preference."""
    if res is None:
        return {}
    target = None
    if res.id is not None or res.resource_group_arn is not None:
        target = aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
            capacity_reservation_id=res.id, capacity_reservation_resource_group_arn=res.resource_group_arn)
    preference = reservation.preference(res)
    out: dict[str, Any] = dict(capacity_reservation_specification=aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
        capacity_reservation_preference=preference, capacity_reservation_target=target))
    if res.kind in reservation.MARKET_TYPE:
        out["instance_market_options"] = aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(
            market_type=reservation.MARKET_TYPE[res.kind])
    return out
