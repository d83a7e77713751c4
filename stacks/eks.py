"""Reference stack ``eks``: an EKS cluster (or yours) with a GPU managed node group and the NVIDIA software."""

from __future__ import annotations

from gpuready_components.aws_network import AwsNetwork, AwsNetworkArgs
from gpuready_components.eks_gpu import (AutoscalerArgs, CapacityReservationArgs, ClusterArgs, EksGpuCluster,
                                        EksGpuClusterArgs, ExistingClusterArgs, GpuNodeGroupArgs)
from gpuready_components.eks_gpu.repair import NodeRepairArgs
from gpuready_components.errors import ConfigError

from . import extra_types
from . import teams
from .config import StackConfig
from .kubernetes import api_allowed_cidrs, existing_cluster, export, kubernetes_settings, software_options
from .settings import Setting, args_of, object_of

NG = GpuNodeGroupArgs
R = CapacityReservationArgs
_R = "node_group.reservation."
_N = "node_group.repair."
SETTINGS = kubernetes_settings(
    "cluster.public_access_cidrs", "EKS's `publicAccessCidrs`",
    Setting("instanceTypes", list, "GPU instance types, one architecture; split into one node group per GPU count "
            "and model (`eks-gpu`, then e.g. `eks-gpu-4x`)", ("node_group.instance_types",), default=[],
            required=True),
    Setting("amiType", str, "`AL2023_x86_64_NVIDIA` (driver and toolkit) or `BOTTLEROCKET_x86_64_NVIDIA` (also the "
            "device plugin); the `_ARM_64_` ones for Graviton GPU types", ("node_group.ami_type",), NG),
    Setting("capacityType", str, "`ON_DEMAND` or `SPOT`", ("node_group.capacity_type",), NG),
    # EKS service quota "Nodes per managed node group": 450 (docs.aws.amazon.com/eks/latest/userguide/service-quotas).
    Setting("minSize", int, "GPU nodes kept when idle", ("node_group.min_size",), NG, most=450),
    Setting("maxSize", int, "most GPU nodes at once in each GPU node group; caps GPUs and cost",
            ("node_group.max_size",), NG, most=450),
    Setting("desiredSize", int, "GPU nodes at creation; the autoscaler owns it afterwards",
            ("node_group.desired_size",), NG, most=450, shown="`minSize`"),
    Setting("rootVolumeGiB", int, "encrypted gp3 volume for container images per node", ("node_group.root_volume_gib",),
            NG),
    Setting("efa", bool, "Elastic Fabric Adapter for multi-node NCCL: EFA types only (same interface count), one "
            "subnet, a cluster placement group and the AWS EFA device plugin; exports `gpuFabric: efa`",
            ("node_group.efa",), NG),
    Setting("reservation", dict, "reserved capacity the GPU node group launches into: `{kind: capacity-block, id: "
            "cr-...}` (an EC2 Capacity Block for ML: capacity type `CAPACITY_BLOCK`, one instance type) or `{kind: "
            "odcr, id | resourceGroupArn | tags | preference: open}` (an On-Demand Capacity Reservation; `tags`: "
            "Karpenter and Auto Mode only, every ODCR carrying them); with `autoscaler: karpenter` the EC2NodeClass "
            "selects it, with `auto-mode` a custom NodeClass (by id or tags; Auto Mode then uses no open ODCR "
            "cluster-wide), and the NodePool prefers reserved capacity; optional known "
            "facts `instanceType`, `availabilityZone`, `count`, `start`, `end`, checked at preview; `only: true`: no "
            "node outside the reservation", ("node_group.reservation",),
            default={}, sub=(
                Setting("kind", str, fields=(_R + "kind",)),  # required: no default
                Setting("id", str, fields=(_R + "id",), feeds=R),
                Setting("resourceGroupArn", str, fields=(_R + "resource_group_arn",), feeds=R),
                Setting("preference", str, fields=(_R + "preference",), feeds=R),
                Setting("instanceType", str, fields=(_R + "instance_type",), feeds=R),
                Setting("availabilityZone", str, fields=(_R + "availability_zone",), feeds=R),
                Setting("count", int, fields=(_R + "count",), feeds=R),
                Setting("end", str, fields=(_R + "end",), feeds=R),
                Setting("start", str, fields=(_R + "start",), feeds=R),
                Setting("only", bool, fields=(_R + "only",), feeds=R),
                Setting("tags", dict, fields=(_R + "tags",), feeds=R))),
    Setting("repair", dict, "automatic repair of failing GPU nodes (EKS node monitoring agent + the node groups' "
            "`nodeRepairConfig`; on by default): `{enabled, maxParallel, maxUnhealthyPercent, waitMinutes}`: at most "
            "`maxParallel` nodes at once, none while more than `maxUnhealthyPercent` of a group is unhealthy, a node "
            "repaired after failing `waitMinutes`; which failures reboot and which replace: docs/health.md",
            ("node_group.repair",), default={}, sub=(
                Setting("enabled", bool, fields=(_N + "enabled",), feeds=NodeRepairArgs),
                Setting("maxParallel", int, fields=(_N + "max_parallel",), feeds=NodeRepairArgs),
                Setting("maxUnhealthyPercent", int, fields=(_N + "max_unhealthy_percent",), feeds=NodeRepairArgs),
                Setting("waitMinutes", int, fields=(_N + "wait_minutes",), feeds=NodeRepairArgs))),
    Setting("nodeLabels", dict, "extra node labels (map); `nvidia.com/gpu.present=true` is always set",
            ("node_group.labels",), NG),
    Setting("kubernetesVersion", str, "Kubernetes version of a new cluster, 1.30 or newer (default 1.34, pinned so the "
            "cluster-autoscaler image matches); with `existingCluster` and `cluster-autoscaler`, that cluster's "
            "version (required there)", ("cluster.version", "autoscaler.kubernetes_version"), ClusterArgs),
    Setting("autoscaler", str, "what adds GPU nodes from zero: `cluster-autoscaler` (default for a new cluster), "
            "`karpenter`, `auto-mode` (new cluster) or `none` (default with `existingCluster`); see below",
            ("autoscaler.mode",), AutoscalerArgs),
    Setting("endpointPublicAccess", bool, "public API endpoint; false: private only, run pulumi inside the VPC",
            ("cluster.endpoint_public_access",), ClusterArgs),
    Setting("network", dict, "existing network `{vpcId, subnetIds}` (private subnets in two or more zones); or "
            "`{cidrBlock, availabilityZones}` for the VPC the stack creates", default={}, sub=(
                Setting("vpcId", str, fields=("vpc_id",)), Setting("subnetIds", list, fields=("subnet_ids",)),
                Setting("cidrBlock", str, fields=("cidr_block",), feeds=AwsNetworkArgs),
                Setting("availabilityZones", int, fields=("availability_zones",), feeds=AwsNetworkArgs))),
    Setting("tags", dict, "tags for every AWS resource, the instances and their volumes (map)", ("tags",),
            EksGpuClusterArgs),
    extra_types.SETTING,
)
"""The ``gpuready:`` keys this platform reads (besides ``platform``)."""
CLOUD_KEYS = {"aws:region": "AWS region (the reference stack: us-east-1)"}
RENAMED = {"publicAccessCidrs": "apiAllowedCidrs"}


def build(config: StackConfig) -> None:
    """Declare the stack's resources and export what ``gpuready smoke`` reads."""
    read = config.read
    tags, network = read("tags"), read("network")
    reserved = _reservation(config)
    zone = reserved.availability_zone if reserved else None
    gpu_subnets: dict = {}
    if network.get("subnetIds"):
        subnet_ids = network["subnetIds"]
    else:
        if network.get("vpcId"):
            raise ConfigError("gpuready:network.subnetIds", None, "vpcId given without subnets",
                              "give subnetIds too, or drop the network key to create a VPC")
        vpc = AwsNetwork("gpu", AwsNetworkArgs(
            cidr_block=network.get("cidrBlock", SETTINGS["network.cidrBlock"].value),
            availability_zones=network.get("availabilityZones", SETTINGS["network.availabilityZones"].value),
            first_zone=zone, tags=tags))
        subnet_ids = vpc.private_subnet_ids
        if zone:  # a reservation launches in its zone only: the GPU nodes get that zone's subnet
            gpu_subnets = {"subnet_ids": subnet_ids[:1]}

    existing = existing_cluster(config)
    public = read("endpointPublicAccess")
    allowed = api_allowed_cidrs(config, existing is not None, public)

    cluster = EksGpuCluster("eks", EksGpuClusterArgs(**config.args(
        subnet_ids=subnet_ids,
        cluster=None if existing else ClusterArgs(**config.args("cluster", public_access_cidrs=allowed)),
        existing_cluster=ExistingClusterArgs(name=existing[0], kubeconfig=existing[1]) if existing else None,
        autoscaler=AutoscalerArgs(**config.args(
            "autoscaler", kubernetes_version=read("kubernetesVersion") if existing else None)),
        node_group=GpuNodeGroupArgs(**config.args("node_group", reservation=reserved,
                                                  repair=NodeRepairArgs(**args_of(SETTINGS["repair"],
                                                                                  read("repair"))),
                                                  **gpu_subnets)),
        software=software_options(config),
        extra_instance_types=extra_types.args(config),
        teams=teams.args(config),
    )))
    export(cluster)


def _reservation(config: StackConfig) -> CapacityReservationArgs | None:
    """``gpuready:reservation`` as the node group's reservation (none when the key is absent or empty)."""
    return object_of(SETTINGS["reservation"], config.read("reservation"), CapacityReservationArgs, "kind",
                     "set kind: capacity-block or kind: odcr")
