"""Readers of Google Cloud resources: GKE, networking and IAM."""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from gpuready_components import catalog
from gpuready_components.k8s_gpu.facts import Taint

from .kubernetes import AlertRules
from .base import (FLEX_START, ON_DEMAND, RESERVED, SPOT, GpuPool, PoolCapacity, Repair, Reservation, Resource, Site,
                   Source, api_taint, dig, get, plain, true)



class GkeCluster(Resource):
    TOKEN = "gcp:container/cluster:Cluster"
    ALLOW_LIST_FIX = "set masterAuthorizedNetworksConfig.cidrBlocks to your networks"
    """How its API endpoint's allow-list is set."""

    @classmethod
    def stand_in(cls, name: str, state: Mapping[str, Any], site: Site) -> tuple[Optional[str], dict[str, Any]]:
        return None, {"endpoint": "203.0.113.10",
                      "masterAuth": {"clusterCaCertificate": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t"}}

    @property
    def private_nodes(self) -> bool:
        return bool(dig(self.props, "privateClusterConfig.enablePrivateNodes", False))

    @property
    def public_endpoint(self) -> bool:
        return not dig(self.props, "privateClusterConfig.enablePrivateEndpoint", False)

    @property
    def authorized_networks(self) -> list[Any]:
        return [c.get("cidrBlock") for c in dig(self.props, "masterAuthorizedNetworksConfig.cidrBlocks") or []]

    VERSION_FIX = "set minMasterVersion to 1.34 or later (gpuready:kubernetesVersion)"
    """How its Kubernetes version is set."""

    @property
    def kubernetes_version(self) -> Optional[str]:
        """The oldest Kubernetes version it starts at (``None``: its release channel's default)."""
        return self.props.get("minMasterVersion")

    @property
    def managed_dcgm(self) -> bool:
        return "DCGM" in (dig(self.props, "monitoringConfig.enableComponents") or [])


class GkeNodePool(GpuPool):
    TOKEN = "gcp:container/nodePool:NodePool"
    CLOUD = "gcp"
    TAGS = "labels"
    CLUSTER_INPUT = "cluster"
    NAME_LABEL = "cloud.google.com/gke-nodepool"  # the label GKE sets on every node with its node pool's name
    NAME_INPUT = "name"
    REPAIR_FIXES = ("turn auto-repair on (management.autoRepair; gpuready's node pools have it)",
                    *GpuPool.REPAIR_FIXES[1:])  # GKE bounds repair itself (Repair.own_limits)
    MINIMUM_KEY = "gpuready:minNodes"
    STAMPS = "nodeConfig.labels"  # GCE resource label keys take no '.', so a reservation's stamps are node labels

    @property
    def flex_start(self) -> bool:
        return true(self.node_config.get("flexStart"))

    @property
    def queued(self) -> bool:
        """Queued provisioning: its nodes come only for a ProvisioningRequest (``queuedProvisioning.enabled``)."""
        return true((self.props.get("queuedProvisioning") or {}).get("enabled"))

    def source(self, linked: Sequence[Resource] = ()) -> Source:
        """Flex-start (``nodeConfig.flexStart``), Spot, a reservation (``reservationAffinity``: the one named, which a
        node that does not fit fails on; any matching one, then on-demand unless ``ANY_RESERVATION_THEN_FAIL``), or
        on-demand. An unset affinity reads as on-demand: the pool names no reservation."""
        if self.flex_start:
            return Source((FLEX_START,), only=self.said_only)
        if true(self.node_config.get("spot")) or true(self.node_config.get("preemptible")):
            return Source((SPOT,), only=self.said_only)
        affinity = self.node_config.get("reservationAffinity") or {}
        kind = affinity.get("consumeReservationType")
        if kind == "SPECIFIC_RESERVATION":
            values = affinity.get("values") or ["?"]
            reserved = Reservation("reservation", values[0] if isinstance(values[0], str) else "?", False)
        elif kind in ("ANY_RESERVATION", "ANY_RESERVATION_THEN_FAIL"):
            reserved = Reservation("reservation", "any", kind == "ANY_RESERVATION")
        else:
            return Source((ON_DEMAND,), only=self.said_only)
        return Source((RESERVED, ON_DEMAND) if reserved.falls_back else (RESERVED,), self.stamped_reservation(reserved),
                      self.said_only)

    @property
    def node_config(self) -> Mapping[str, Any]:
        return self.props.get("nodeConfig") or {}

    @property
    def repair(self) -> Optional[Repair]:
        """``management.autoRepair`` (GKE's default for a new pool: on), at GKE's own pace; ``None`` for a flex-start
        pool or one of queued provisioning (GKE's guides turn their auto-repair off: a repaired node would be a new
        flex-start VM, obtained again; a queued pool's nodes live for one request, at most ``maxRunDuration``)."""
        if self.flex_start or self.queued:
            return None
        return Repair(bool((self.props.get("management") or {}).get("autoRepair", True)), own_limits=True)

    @property
    def instance_types(self) -> list[str]:
        return [self.node_config.get("machineType", "")]

    @property
    def machine(self) -> Optional[catalog.GpuInstanceType]:
        """The catalog row of its machine type with its accelerators."""
        config = self.node_config
        return catalog.find_gcp(config.get("machineType", ""), config.get("guestAccelerators") or [])

    def row(self, name: str) -> Optional[catalog.GpuInstanceType]:
        """The row of its machine (with its accelerators) for its machine type ``name``."""
        return self.machine if name in self.instance_types else None

    @property
    def gpu_rows(self) -> list[catalog.GpuInstanceType]:
        row = self.machine
        return [row] if row else []

    @property
    def minimum(self) -> tuple[int, str]:
        scaling = self.props.get("autoscaling")
        if not scaling:
            return int(self.props.get("nodeCount", self.props.get("initialNodeCount", 1))), \
                "a fixed nodeCount (no autoscaling)"
        return int(scaling.get("totalMinNodeCount", scaling.get("minNodeCount", 0))), "autoscaling minimum"

    @property
    def max_nodes(self) -> int:
        scaling = self.props.get("autoscaling") or {}
        if "totalMaxNodeCount" in scaling:
            return int(scaling["totalMaxNodeCount"])
        zones = max(len(self.props.get("nodeLocations") or []), 1)
        return int(scaling.get("maxNodeCount", self.props.get("nodeCount", self.props.get("initialNodeCount", 0)))) \
            * zones

    @property
    def tag_keys(self) -> set[str]:
        return set(get(self.props, "nodeConfig.resourceLabels", {}) or {})

    @property
    def taints(self) -> list[Taint]:
        """Its own, and the one GKE puts on a queued-provisioning pool's nodes."""
        return [api_taint(t) for t in get(self.props, "nodeConfig.taints") or []] + \
            ([self.platform_facts.QUEUED_TAINT] if self.queued else [])

    @property
    def labels(self) -> dict[str, str]:
        """The labels its nodes carry: the pool's own, the accelerator label GKE sets on a GPU pool's nodes, and its
        flex-start label."""
        accelerators = get(self.props, "nodeConfig.guestAccelerators") or []
        kind = accelerators[0].get("type") if accelerators and isinstance(accelerators[0], Mapping) else None
        return {**(self.node_config.get("labels") or {}),
                **({self.platform_facts.ACCELERATOR_LABEL: kind} if isinstance(kind, str) else {}),
                **self.platform_facts.provisioning_labels(self.flex_start, self.queued)}

    @property
    def node_image(self) -> str:
        """Key of the platform descriptor's ``node_images`` from its driver setting ('' where GKE's is unknown)."""
        accelerators = get(self.props, "nodeConfig.guestAccelerators") or [{}]
        version = get(accelerators[0], "gpuDriverInstallationConfig.gpuDriverVersion")
        # GKE's device plugin is off where the pool carries its opt-out label: the GPU Operator's then runs.
        return self.platform_facts.node_image(version, get(self.props, "nodeConfig.labels") or {}) \
            if version in (*self.platform_facts.DRIVER_INSTALLED, self.platform_facts.DRIVER_DISABLED) else ""

    @property
    def own_volume(self) -> Optional[tuple[int, str]]:
        return int(get(self.props, "nodeConfig.diskSizeGb", 100)), "nodeConfig.diskSizeGb"

    def capacity(self) -> Optional[PoolCapacity]:
        row = self.machine
        if row is None:
            return None
        nodes = self.max_nodes
        return PoolCapacity("gcp", (row.name,), nodes * row.gpus, nodes * (row.price_usd_hour or 0.0), (), (row,))


Subnetwork = plain("Subnetwork", "gcp:compute/subnetwork:Subnetwork")
RouterNat = plain("RouterNat", "gcp:compute/routerNat:RouterNat", SUBNETWORKS_INPUT="subnetworks")


class ClusterRules(AlertRules):
    """A ``ClusterRules`` of Google Cloud Managed Service for Prometheus (the GPU alerts with ``managedAlerts``),
    which its managed rule evaluator runs over the cluster's metrics."""

    TOKEN = "kubernetes:monitoring.googleapis.com/v1:ClusterRules"


class ServiceAccount(Resource):
    TOKEN = "gcp:serviceaccount/account:Account"

    @classmethod
    def stand_in(cls, name: str, state: Mapping[str, Any], site: Site) -> tuple[Optional[str], dict[str, Any]]:
        project = state.get("project") or site.gcp_project
        return None, {"email": f"{state.get('accountId', name)}@{project}.iam.gserviceaccount.com"}


class _ProjectRole(Resource):
    """A project IAM grant."""

    @property
    def role(self) -> Any:
        return self.props.get("role")


IamMember = type("IamMember", (_ProjectRole,), {"TOKEN": "gcp:projects/iAMMember:IAMMember"})
IamBinding = type("IamBinding", (_ProjectRole,), {"TOKEN": "gcp:projects/iAMBinding:IAMBinding"})


PROJECT_ROLES = (IamMember, IamBinding)
