"""``GkeGpuCluster``: a GKE cluster (new or existing) with a GPU node pool and the NVIDIA software."""

from __future__ import annotations

import re
from typing import Any, Optional

import pulumi

from ..errors import ConfigError
from ..k8s_gpu import K8sGpuSoftwareArgs, plan, startup_taints
from ..k8s_gpu.cluster import GpuCluster
from ..k8s_gpu.component import K8sGpuSoftware
from ..k8s_gpu import facts as k8s_facts
from ..k8s_gpu.kubeconfig import kubeconfig
from ..capacity import reservation_stamps
from ..k8s_gpu.kueue import Provisioning, flavor
from ..k8s_gpu.topology import visible as topology_visible
from ..teams import Pool
from ..k8s_gpu.validation import restricts
from ..sdk import require
from . import alerts, facts, reservation
from .args import ClusterArgs, GkeGpuClusterArgs
from .outputs import OUTPUTS
from .validation import GkeCapacity, check, checked_inputs, region

gcp = require("pulumi_gcp")
k8s = require("pulumi_kubernetes")

_NAME = re.compile(r"^[a-z][-a-z0-9]{0,18}$")


def gke_kubeconfig(cluster_name: str, endpoint: str, certificate_authority: str) -> str:
    """A kubeconfig that authenticates with ``gke-gcloud-auth-plugin``, as ``gcloud container clusters
    get-credentials`` writes it."""
    return kubeconfig(cluster_name, f"https://{endpoint}", certificate_authority, "gke-gcloud-auth-plugin", [],
                      "gcloud components install gke-gcloud-auth-plugin")


def _provisioning_args(res: Optional[reservation.ReservationArgs],
                       flex: Optional[reservation.FlexStartArgs]) -> dict[str, Any]:
    """The node config's reservation affinity, flex-start and run duration (none set: GKE's defaults)."""
    affinity = reservation.affinity_of(res, flex)
    named = res is not None and res.affinity == reservation.SPECIFIC
    return {
        "reservation_affinity": gcp.container.NodePoolNodeConfigReservationAffinityArgs(
            consume_reservation_type=affinity, key=facts.RESERVATION_NAME_KEY if named else None,
            values=[res.name] if named else None) if affinity else None,
        "flex_start": True if flex is not None else None,
        "max_run_duration": reservation.max_run_duration(flex),
    }


def _admission_check(flex: Optional[reservation.FlexStartArgs]) -> Optional[Provisioning]:
    """Kueue's ProvisioningRequest admission check on a queued pool: GKE's class, and the run duration its requests
    carry."""
    if flex is None or not flex.queued:
        return None
    seconds = flex.max_run_duration_seconds
    return Provisioning(facts.PROVISIONING_CLASS,
                        {facts.MAX_RUN_DURATION_PARAMETER: str(seconds)} if seconds else {})


def _placement(pool: Any, machine_type: str, queued: bool) -> Any:
    """The topology of the GPU pool's gangs (docs/queues/topology.md): a multi-node pool (a machine type GKE labels
    with its place in the network, :func:`facts.placement`: its RDMA types, built for jobs across nodes; more than one
    node) whose nodes Kueue sees when it admits a job (queued provisioning's ProvisioningRequest check, or a fixed
    size: Kueue's topology-aware scheduling counts only Ready nodes); ``None`` otherwise."""
    if pool.max_nodes < 2 or not topology_visible(pool.min_nodes, pool.max_nodes, provisioning=queued):
        return None
    return facts.placement(machine_type)


class GkeGpuCluster(GpuCluster):
    """A GPU node pool (accelerators from the catalog, GKE's driver or the GPU Operator's, GPU sharing or MIG, Spot,
    autoscaling from zero, shielded nodes, Workload Identity, a least-privilege node service account) in a new or
    existing GKE cluster, and :class:`~gpuready_components.k8s_gpu.K8sGpuSoftware` installed through the cluster's API.
    """

    node_pool_name: pulumi.Output[str]
    capacity: GkeCapacity

    def __init__(self, name: str, args: GkeGpuClusterArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__(facts.TYPE_TOKEN, name, None, opts)
        if not _NAME.match(name):
            raise ConfigError("name", name, "names the node service account, which takes 6-30 lowercase characters",
                              "use up to 19 lowercase letters, digits and '-', starting with a letter")
        project = args.project or pulumi.Config("gcp").get("project")
        self.capacity = cap = check(args, project)
        self._check_teams(args.teams, [Pool(facts.GPU_POOL, cap.max_gpus)], args.overcommit_quotas,
                          args.software.namespace)
        args = checked_inputs(args)
        child = pulumi.ResourceOptions(parent=self)
        labels = {"gpuready-component": name, **args.labels}
        pool = args.node_pool

        account = gcp.serviceaccount.Account(
            f"{name}-nodes", account_id=f"{name}-gpu-nodes", project=project,
            display_name=f"gpuready {name}: GKE nodes (logs, metrics, image pulls only)", opts=child)
        member = account.email.apply(lambda email: f"serviceAccount:{email}")
        grants = [gcp.projects.IAMMember(f"{name}-nodes-{role.split('/')[1].replace('.', '-')}", project=project,
                                         role=role, member=member, opts=child)
                  for role in facts.NODE_SERVICE_ACCOUNT_ROLES]

        system_pools, nat = [], []
        if args.cluster is not None:
            network, subnetwork, nat = self._network(name, args.cluster, project, region(args.location))
            cluster = self._cluster(name, args, args.cluster, project, labels, network, subnetwork)
            cluster_name = cluster.name
            config = pulumi.Output.secret(pulumi.Output.all(
                cluster.name, cluster.endpoint, cluster.master_auth.cluster_ca_certificate,
            ).apply(lambda a: gke_kubeconfig(*a)))
            system_pools.append(gcp.container.NodePool(
                f"{name}-system", cluster=cluster.name, location=args.location, project=project,
                node_count=args.cluster.system_nodes,
                management=gcp.container.NodePoolManagementArgs(auto_repair=True, auto_upgrade=True),
                node_config=self._node_config(facts.SYSTEM_MACHINE_TYPE, account.email, 50, {}, labels,
                                              image_type=facts.IMAGE_TYPES["device-plugin"], secure_boot=True),
                opts=pulumi.ResourceOptions(parent=self, depends_on=grants)))
        else:
            cluster_name = pulumi.Output.from_input(args.existing_cluster.name)
            config = pulumi.Output.secret(args.existing_cluster.kubeconfig)

        operator = args.software.install in facts.OWN_PLUGIN_OFF  # GKE's device plugin off
        arm = (facts.ARM_TAINT,) if cap.machine.machine_type.split("-")[0] in facts.ARM_FAMILIES else ()
        software = K8sGpuSoftwareArgs(platform="gke", node_image=cap.node_image, options=cap.software,
                                      gpu_models=((cap.machine.gpu_model, cap.machine.gpu_memory_gib),),
                                      extra_taints=arm)
        node_labels = {**pool.labels, **(facts.NO_GKE_DEVICE_PLUGIN_LABEL if operator else {}),
                       **plan(software).node_labels}
        flex, reserved = pool.flex_start, pool.reservation
        queued = flex is not None and flex.queued
        taint = self._gpu_nodes("gke", {**node_labels, facts.ACCELERATOR_LABEL: cap.machine.accelerator,
                                        **facts.provisioning_labels(flex is not None, queued)},
                                (*arm, *((facts.QUEUED_TAINT,) if queued else ())))
        # The stamps of a reservation's facts ride on the nodes' Kubernetes labels: GCE resource label keys take no '.'.
        stamps = reservation_stamps(only=reserved.only, start=reserved.start, end=reserved.end,
                                    count=reserved.count) if reserved is not None else {}
        node_labels = {**self.pool_labels(facts.GPU_POOL, node_labels), **stamps}
        sharing = pool.gpu_sharing
        self.gpu_sharing = "mig" if cap.partition_size else \
            {"TIME_SHARING": "time-slicing", "MPS": "mps"}.get(sharing.strategy) if sharing else None
        accelerator = gcp.container.NodePoolNodeConfigGuestAcceleratorArgs(
            type=cap.machine.accelerator,
            count=cap.machine.gpus,
            gpu_driver_installation_config=gcp.container.NodePoolNodeConfigGuestAcceleratorGpuDriverInstallationConfigArgs(
                gpu_driver_version=cap.driver_version),
            gpu_sharing_config=gcp.container.NodePoolNodeConfigGuestAcceleratorGpuSharingConfigArgs(
                gpu_sharing_strategy=sharing.strategy, max_shared_clients_per_gpu=sharing.max_clients_per_gpu)
            if sharing else None,
            gpu_partition_size=cap.partition_size)
        placement = self._nvl72_placement(name, cap.machine.machine_type, project, region(args.location))
        node_pool = gcp.container.NodePool(
            f"{name}-gpu",
            placement_policy=placement,
            cluster=cluster_name,
            location=args.location,
            project=project,
            node_locations=list(pool.node_locations) or None,
            initial_node_count=pool.min_nodes,
            autoscaling=gcp.container.NodePoolAutoscalingArgs(
                total_min_node_count=pool.min_nodes, total_max_node_count=pool.max_nodes, location_policy="ANY"),
            management=gcp.container.NodePoolManagementArgs(
                auto_repair=facts.FLEX_START_AUTO_REPAIR if flex is not None else True, auto_upgrade=True),
            queued_provisioning=gcp.container.NodePoolQueuedProvisioningArgs(enabled=True) if queued else None,
            node_config=self._node_config(
                cap.machine.machine_type, account.email, pool.disk_size_gb, node_labels, labels,
                provisioning=_provisioning_args(reserved, flex),
                image_type=facts.IMAGE_TYPES[args.software.install],
                # The GPU Operator's driver is an unsigned kernel module, which Secure Boot refuses to load.
                secure_boot=cap.driver_version != facts.DRIVER_DISABLED, spot=pool.spot, accelerators=[accelerator],
                taints=[gcp.container.NodePoolNodeConfigTaintArgs(key=t.key, value=t.value,
                                                                  effect=facts.GPU_TAINT_EFFECT)
                        for t in (taint, *startup_taints(args.software, "gke"))]),
            opts=pulumi.ResourceOptions(parent=self, depends_on=grants))

        provider = k8s.Provider(f"{name}-k8s", kubeconfig=config, opts=child)
        self.software = K8sGpuSoftware(
            f"{name}-gpu-software",
            software,
            opts=pulumi.ResourceOptions(parent=self, providers={"kubernetes": provider},
                                        depends_on=[node_pool, *system_pools, *nat]))
        if args.managed_alerts:
            self._alerts(name, cap.software.namespace, plan(software).provider("dcgm-exporter"), provider)
        self._queues(name, [flavor(facts.GPU_POOL, cap.max_gpus, self.pool_labels(facts.GPU_POOL, self.gpu_node_labels),
                                   [k8s_facts.Taint(**t) for t in self.gpu_node_taints], [cap.machine],
                                   _admission_check(flex), _placement(pool, cap.machine.machine_type, queued))],
                     {facts.NODE_POOL_LABEL: system_pools[0].name} if system_pools else {}, provider, [self.software])

        self.node_pool_name = node_pool.name
        if reserved is not None and reserved.affinity != reservation.NONE:
            self.gpu_reservations = node_pool.name.apply(lambda pool_name: [{
                "pool": pool_name, "kind": "reservation", "target": reserved.name or reservation.ANY,
                "only": reserved.only, **{k: v for k, v in (("start", reserved.start), ("end", reserved.end),
                                                            ("count", reserved.count), ("zone", reserved.zone))
                                          if v is not None},
                # the zones check_reservation found the zone among (by name: the reservation is not read)
                **({"nodeZones": list(pool.node_locations) or [args.location]} if reserved.zone else {})}])
        self._register(OUTPUTS, cluster_name, config, cap, nodePoolName=self.node_pool_name)

    def _nvl72_placement(self, name: str, machine_type: str, project: Optional[str], pool_region: str) -> Any:
        """An NVL72 machine's pool (:data:`facts.NVL72_FAMILIES`): the workload policy that places its VMs in one
        72-GPU NVLink domain, and the placement policy naming it; None for other machines."""
        if machine_type.split("-")[0] not in facts.NVL72_FAMILIES:
            return None
        policy = gcp.compute.ResourcePolicy(
            f"{name}-nvl72", project=project, region=pool_region,
            workload_policy=gcp.compute.ResourcePolicyWorkloadPolicyArgs(**facts.NVL72_WORKLOAD_POLICY),
            opts=pulumi.ResourceOptions(parent=self))
        return gcp.container.NodePoolPlacementPolicyArgs(type=facts.NVL72_PLACEMENT_TYPE, policy_name=policy.name)

    def _alerts(self, name: str, namespace: str, exporter: str, provider: k8s.Provider) -> None:
        """A PodMonitoring of the exporter and a ClusterRules of the GPU alerts (with teams, another of their
        GPU-hours), once the software is up (their CRDs come with managed collection)."""
        opts = pulumi.ResourceOptions(parent=self, providers={"kubernetes": provider}, depends_on=[self.software])
        hours = (("gpu-hours", alerts.hours_rules(self.teams)),) if self.gpu_hours_wanted() else ()
        for suffix, manifest in (("gpu-scrape", alerts.pod_monitoring(namespace, exporter)),
                                 ("gpu-alerts", alerts.cluster_rules()), *hours):
            k8s.apiextensions.CustomResource(f"{name}-{suffix}", api_version=manifest["apiVersion"],
                                             kind=manifest["kind"], metadata=manifest["metadata"],
                                             spec=manifest["spec"], opts=opts)

    def _node_config(self, machine_type: str, service_account: Any, disk_gb: int, node_labels: dict[str, str],
                     resource_labels: dict[str, str], *, image_type: str, secure_boot: bool, spot: bool = False,
                     accelerators: Optional[list] = None, taints: Optional[list] = None,
                     provisioning: Optional[dict[str, Any]] = None):
        return gcp.container.NodePoolNodeConfigArgs(
            **(provisioning or {}),
            machine_type=machine_type,
            image_type=image_type,
            disk_size_gb=disk_gb,
            disk_type=facts.DISK_TYPE,
            service_account=service_account,
            oauth_scopes=list(facts.OAUTH_SCOPES),
            workload_metadata_config=gcp.container.NodePoolNodeConfigWorkloadMetadataConfigArgs(
                mode=facts.WORKLOAD_METADATA_MODE),
            shielded_instance_config=gcp.container.NodePoolNodeConfigShieldedInstanceConfigArgs(
                enable_secure_boot=secure_boot, enable_integrity_monitoring=True),
            metadata={"disable-legacy-endpoints": "true"},
            labels=node_labels or None,
            resource_labels=resource_labels,
            spot=spot or None,
            guest_accelerators=accelerators,
            taints=taints)

    def _network(self, name: str, cluster: ClusterArgs, project: str, region: str) -> tuple[Any, Any, list]:
        """(network, subnetwork, [Cloud NAT]) of a new cluster: the user's, or created with their Cloud NAT."""
        child = pulumi.ResourceOptions(parent=self)
        network, subnetwork, nat = cluster.network, cluster.subnetwork, cluster.cloud_nat
        if network is not None:
            if not nat:
                return network, subnetwork, []
            # Cloud NAT names a subnetwork by its URL, which a subnetwork's name alone is not.
            nat_link = pulumi.Output.from_input(subnetwork).apply(
                lambda s: s if "/" in s else f"projects/{project}/regions/{region}/subnetworks/{s}")
        else:
            created = gcp.compute.Network(f"{name}-network", project=project, auto_create_subnetworks=False,
                                          description=f"gpuready {name}: GKE GPU cluster", opts=child)
            ranges = facts.SUBNET_RANGES
            network = created.id
            subnetwork = gcp.compute.Subnetwork(
                f"{name}-subnet", project=project, region=region, network=network, ip_cidr_range=ranges["nodes"],
                secondary_ip_ranges=[gcp.compute.SubnetworkSecondaryIpRangeArgs(range_name=key, ip_cidr_range=cidr)
                                     for key, cidr in ranges.items() if key != "nodes"],
                private_ip_google_access=True, opts=child).id
            nat_link = subnetwork
            if nat is False:
                return network, subnetwork, []
        router = gcp.compute.Router(f"{name}-router", project=project, region=region, network=network,
                                    description=f"gpuready {name}: Cloud NAT for the GKE nodes", opts=child)
        return network, subnetwork, [gcp.compute.RouterNat(
            f"{name}-nat", project=project, region=region, router=router.name,
            nat_ip_allocate_option=facts.NAT_IP_ALLOCATION,
            source_subnetwork_ip_ranges_to_nat=facts.NAT_SOURCE_SUBNETWORKS,
            subnetworks=[gcp.compute.RouterNatSubnetworkArgs(
                name=nat_link, source_ip_ranges_to_nats=list(facts.NAT_SUBNETWORK_RANGES))],
            log_config=gcp.compute.RouterNatLogConfigArgs(enable=True, filter=facts.NAT_LOG_FILTER), opts=child)]

    def _cluster(self, name: str, args: GkeGpuClusterArgs, cluster: ClusterArgs, project: str,
                 labels: dict[str, str], network: Any, subnetwork: Any):
        created = cluster.network is None
        return gcp.container.Cluster(
            name,
            location=args.location,
            project=project,
            network=network,
            subnetwork=subnetwork,
            remove_default_node_pool=True,
            initial_node_count=1,
            release_channel=gcp.container.ClusterReleaseChannelArgs(channel=cluster.release_channel),
            min_master_version=cluster.kubernetes_version,
            workload_identity_config=gcp.container.ClusterWorkloadIdentityConfigArgs(
                workload_pool=f"{project}.svc.id.goog"),
            private_cluster_config=gcp.container.ClusterPrivateClusterConfigArgs(
                enable_private_nodes=True, enable_private_endpoint=False,
                master_ipv4_cidr_block=cluster.master_ipv4_cidr_block),
            master_authorized_networks_config=gcp.container.ClusterMasterAuthorizedNetworksConfigArgs(
                cidr_blocks=[gcp.container.ClusterMasterAuthorizedNetworksConfigCidrBlockArgs(
                    cidr_block=cidr, display_name=f"allowed-{i}")
                    for i, cidr in enumerate(cluster.master_authorized_networks)])
            if restricts(cluster.master_authorized_networks) else None,
            ip_allocation_policy=gcp.container.ClusterIpAllocationPolicyArgs(
                cluster_secondary_range_name="pods", services_secondary_range_name="services")
            if created else gcp.container.ClusterIpAllocationPolicyArgs(),
            enable_shielded_nodes=True,
            monitoring_config=gcp.container.ClusterMonitoringConfigArgs(
                enable_components=list(facts.MONITORING_COMPONENTS if cluster.managed_dcgm else
                                       facts.MONITORING_COMPONENTS[:1]),
                managed_prometheus=gcp.container.ClusterMonitoringConfigManagedPrometheusArgs(enabled=True))
            if cluster.managed_dcgm or args.managed_alerts else None,
            deletion_protection=cluster.deletion_protection,
            resource_labels=labels,
            opts=pulumi.ResourceOptions(parent=self))
