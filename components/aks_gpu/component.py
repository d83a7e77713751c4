"""``AksGpuCluster``: an AKS cluster (new or existing) with a GPU agent pool and the NVIDIA software."""

from __future__ import annotations

import base64
from typing import Any, Optional

import pulumi
import yaml

from .. import azure_roles
from ..k8s_gpu import K8sGpuSoftwareArgs, plan, startup_taints
from ..k8s_gpu import facts as k8s_facts
from ..k8s_gpu.cluster import GpuCluster
from ..k8s_gpu.component import K8sGpuSoftware
from ..k8s_gpu.kubeconfig import kubeconfig
from ..k8s_gpu.kueue import flavor
from ..teams import Pool
from ..k8s_gpu.validation import restricts
from ..sdk import require
from . import facts, reservation
from .args import AksGpuClusterArgs, ClusterArgs
from .outputs import OUTPUTS
from .validation import AksCapacity, check, checked_inputs

azure = require("pulumi_azure_native")
k8s = require("pulumi_kubernetes")


def aks_kubeconfig(cluster_name: str, credential: str) -> str:
    """A kubeconfig that authenticates with ``kubelogin`` from the Azure CLI's login (no local accounts), built
    from the server and certificate of AKS's own user credential (base64 kubeconfig)."""
    cluster = yaml.safe_load(base64.b64decode(credential))["clusters"][0]["cluster"]
    return kubeconfig(cluster_name, cluster["server"], cluster["certificate-authority-data"], "kubelogin",
                      ["get-token", "--login", "azurecli", "--server-id", facts.AAD_SERVER_APP_ID],
                      "az aks install-cli (installs kubelogin)")


class AksGpuCluster(GpuCluster):
    """A GPU agent pool (VM size from the catalog, mode User, GPU taint, Spot, autoscaling from zero, AKS's driver or
    the GPU Operator's, MIG instance profile) in a new or existing AKS cluster, and
    :class:`~gpuready_components.k8s_gpu.K8sGpuSoftware` installed through the cluster's API.
    """

    node_pool_name: pulumi.Output[str]
    capacity: AksCapacity

    def __init__(self, name: str, args: AksGpuClusterArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__(facts.TYPE_TOKEN, name, None, opts)
        self.capacity = cap = check(args)
        self._check_teams(args.teams, [Pool(facts.GPU_POOL_NAME, cap.max_gpus)], args.overcommit_quotas,
                          args.software.namespace)
        args = checked_inputs(args)
        tags = {"gpuready-component": name, **args.tags}
        pool = args.node_pool
        cs = azure.containerservice

        admins, identity, reservation_access = [], None, []
        if args.cluster is not None:
            if pool.reservation is not None:
                identity, reservation_access = self._reservation_identity(name, args, pool.reservation, tags)
            cluster = self._cluster(name, args, args.cluster, tags, identity)
            cluster_name = cluster.name
            admins = self._admins(name, args.cluster, cluster.id)
            credentials = cs.list_managed_cluster_user_credentials_output(
                resource_group_name=args.resource_group_name, resource_name=cluster.name, format="exec",
                opts=pulumi.InvokeOutputOptions(parent=self))
            config = pulumi.Output.secret(pulumi.Output.all(cluster.name, credentials.kubeconfigs[0].value)
                                          .apply(lambda a: aks_kubeconfig(*a)))
        else:
            cluster_name = pulumi.Output.from_input(args.existing_cluster.name)
            config = pulumi.Output.secret(args.existing_cluster.kubeconfig)

        extra_taints = (k8s_facts.Taint(*facts.SPOT_TAINT),) if pool.spot else ()
        software = K8sGpuSoftwareArgs(platform="aks", node_image=cap.node_image, options=args.software,
                                      gpu_models=((cap.vm.gpu_model, cap.vm.gpu_memory_gib),),
                                      extra_taints=extra_taints)
        node_labels = {**pool.labels, **plan(software).node_labels}
        taint = self._gpu_nodes("aks", {**node_labels, **facts.ACCELERATOR_LABEL}, extra_taints)
        node_labels = self.pool_labels(facts.GPU_POOL_NAME, node_labels)
        agent_pool = cs.AgentPool(
            f"{name}-gpu",
            agent_pool_name=facts.GPU_POOL_NAME,
            resource_group_name=args.resource_group_name,
            resource_name_=cluster_name,
            mode=facts.MODE_USER,
            vm_size=pool.vm_size,
            os_type="Linux",
            os_sku=facts.OS_SKU,
            type="VirtualMachineScaleSets",
            enable_auto_scaling=True,
            count=pool.min_count,
            min_count=pool.min_count,
            max_count=pool.max_count,
            node_taints=[f"{t.key}={t.value}:{t.effect}" for t in (taint, *startup_taints(args.software, "aks"))],
            node_labels=node_labels or None,
            gpu_profile=cs.GPUProfileArgs(driver=cap.gpu_driver),
            gpu_instance_profile=cap.gpu_instance_profile,
            scale_set_priority=facts.PRIORITY_SPOT if pool.spot else facts.PRIORITY_REGULAR,
            scale_set_eviction_policy=facts.SPOT_EVICTION_POLICY if pool.spot else None,
            spot_max_price=-1 if pool.spot else None,
            os_disk_size_gb=pool.os_disk_size_gb,
            os_disk_type="Managed",
            enable_node_public_ip=False,
            availability_zones=list(pool.availability_zones) or None,
            vnet_subnet_id=args.cluster.vnet_subnet_id if args.cluster else None,
            capacity_reservation_group_id=pool.reservation.group_id if pool.reservation else None,
            tags={**tags, **reservation.stamps(pool.reservation)},  # the reservation's known facts
            # The autoscaler moves the count once the pool exists. AKS uses the group through the cluster's
            # identity: its role comes first.
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=["count"], depends_on=reservation_access))

        provider = k8s.Provider(f"{name}-k8s", kubeconfig=config, opts=pulumi.ResourceOptions(parent=self))
        self.software = K8sGpuSoftware(
            f"{name}-gpu-software",
            software,
            # Azure RBAC takes minutes to honour a new role assignment (README, aks).
            opts=pulumi.ResourceOptions(parent=self, providers={"kubernetes": provider},
                                        depends_on=[agent_pool, *admins]))
        self._queues(name, [flavor(facts.GPU_POOL_NAME, cap.max_gpus,
                                   self.pool_labels(facts.GPU_POOL_NAME, self.gpu_node_labels),
                                   [k8s_facts.Taint(**t) for t in self.gpu_node_taints], [cap.vm])],
                     dict(facts.SYSTEM_NODE_LABELS), provider, [self.software, *admins])

        self.node_pool_name = agent_pool.name
        if pool.reservation is not None:  # the pool by the name its nodes' agentpool label carries
            self.gpu_reservations = [{"pool": facts.GPU_POOL_NAME, **reservation.output(pool.reservation, pool.availability_zones)}]
        self._register(OUTPUTS, cluster_name, config, cap, nodePoolName=self.node_pool_name)

    def _admins(self, name: str, cluster: ClusterArgs, scope: pulumi.Output[str]) -> list:
        """Role assignments making the deployer and the admin groups cluster admins through Azure RBAC."""
        auth = azure.authorization
        client = auth.get_client_config_output(opts=pulumi.InvokeOutputOptions(parent=self))
        role = client.subscription_id.apply(
            lambda sub: f"/subscriptions/{sub}/providers/Microsoft.Authorization/roleDefinitions/"
                        f"{azure_roles.CLUSTER_ADMIN_ROLE}")
        principals = [(f"{name}-deployer-admin", client.object_id, cluster.deployer_principal_type)] \
            if cluster.deployer_admin else []
        principals += [(f"{name}-admins-{group}", group, facts.GROUP_PRINCIPAL_TYPE)
                       for group in cluster.admin_group_object_ids]
        return [auth.RoleAssignment(resource, principal_id=principal, principal_type=kind, role_definition_id=role,
                                    scope=scope, description="gpuready: cluster admin (installs the GPU software)",
                                    opts=pulumi.ResourceOptions(parent=self))
                for resource, principal, kind in principals]

    def _reservation_identity(self, name: str, args: AksGpuClusterArgs,
                              res: reservation.CapacityReservationGroupArgs, tags: dict[str, str]) -> tuple[Any, list]:
        """The new cluster's user-assigned identity (in the cluster's resource group) and its Contributor role on the
        capacity reservation group's resource group: what AKS needs to put the agent pool's VMs in the group."""
        identity = azure.managedidentity.UserAssignedIdentity(
            f"{name}-identity", resource_group_name=args.resource_group_name, location=args.location, tags=tags,
            opts=pulumi.ResourceOptions(parent=self))
        role = azure.authorization.RoleAssignment(
            f"{name}-reservation-contributor", principal_id=identity.principal_id,
            principal_type=facts.MANAGED_IDENTITY_PRINCIPAL_TYPE, role_definition_id=reservation.contributor_role(
                res.group_id), scope=reservation.scope(res.group_id),
            description="gpuready: the AKS cluster's identity uses the GPU pool's capacity reservation group",
            opts=pulumi.ResourceOptions(parent=self))
        return identity, [role]

    def _cluster(self, name: str, args: AksGpuClusterArgs, cluster: ClusterArgs, tags: dict[str, str],
                 identity: Any = None):
        """The managed cluster: on a system-assigned identity, or on ``identity`` (user-assigned) when given."""
        cs = azure.containerservice
        return cs.ManagedCluster(
            name,
            resource_group_name=args.resource_group_name,
            location=args.location,
            dns_prefix=name,
            kubernetes_version=cluster.kubernetes_version,
            identity=cs.ManagedClusterIdentityArgs(type=facts.IDENTITY_SYSTEM_ASSIGNED) if identity is None else
            cs.ManagedClusterIdentityArgs(type=facts.IDENTITY_USER_ASSIGNED, user_assigned_identities=[identity.id]),
            agent_pool_profiles=[cs.ManagedClusterAgentPoolProfileArgs(
                name=facts.SYSTEM_POOL_NAME, mode=facts.MODE_SYSTEM, vm_size=facts.SYSTEM_VM_SIZE,
                count=cluster.system_nodes, os_type="Linux", os_sku=facts.OS_SKU, type="VirtualMachineScaleSets",
                enable_node_public_ip=False, vnet_subnet_id=cluster.vnet_subnet_id)],
            enable_rbac=True,
            aad_profile=cs.ManagedClusterAADProfileArgs(
                managed=True, enable_azure_rbac=True,
                admin_group_object_ids=list(cluster.admin_group_object_ids) or None),
            disable_local_accounts=True,
            oidc_issuer_profile=cs.ManagedClusterOIDCIssuerProfileArgs(enabled=True),
            security_profile=cs.ManagedClusterSecurityProfileArgs(
                workload_identity=cs.ManagedClusterSecurityProfileWorkloadIdentityArgs(enabled=True)),
            api_server_access_profile=cs.ManagedClusterAPIServerAccessProfileArgs(
                authorized_ip_ranges=list(cluster.authorized_ip_ranges))
            if restricts(cluster.authorized_ip_ranges) else None,
            network_profile=cs.ContainerServiceNetworkProfileArgs(network_plugin="azure",
                                                                  network_plugin_mode="overlay"),
            auto_upgrade_profile=cs.ManagedClusterAutoUpgradeProfileArgs(upgrade_channel="stable",
                                                                          node_os_upgrade_channel="NodeImage"),
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self))
