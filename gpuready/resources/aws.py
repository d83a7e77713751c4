"""Readers of AWS resources: Batch, EKS, EC2 and IAM."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Optional, Sequence

from gpuready_components import ecs_fit as fit
from gpuready_components.k8s_gpu.facts import Taint

from .base import (ON_DEMAND, RESERVED, SPOT, GpuPool, PoolCapacity, Repair, Reservation, Resource, Site, Source,
                   api_taint, dig, ec2_id, get, plain, true)



def _parse(value: Any) -> Optional[Mapping[str, Any]]:
    """A JSON input (a string, or the object itself), ``None`` when it is neither."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return None
    return value if isinstance(value, Mapping) else None


class BatchComputeEnvironment(GpuPool):
    TOKEN = "aws:batch/computeEnvironment:ComputeEnvironment"
    CLOUD = "aws"
    LAUNCH_TEMPLATE_INPUT = SUBNET_INPUT = "computeResources"
    RESERVED_ONLY_FIX = ("target the reservation alone in the launch template (a reservation id, or a resource group "
                         "with preference capacity-reservations-only) on an EC2 (not Spot) environment")

    @property
    def resources(self) -> Mapping[str, Any]:
        return self.props.get("computeResources") or {}

    @property
    def instance_types(self) -> list[str]:
        return list(self.resources.get("instanceTypes") or [])

    def source(self, linked: Sequence[Resource] = ()) -> Source:
        """``computeResources.type`` (``SPOT``, ``FARGATE_SPOT``: Spot; else on-demand) and the reservation its launch
        template (in ``linked``) names: reserved first, then on-demand where EC2 falls back to it."""
        if str(self.resources.get("type", "")).endswith("SPOT"):
            return Source((SPOT,), only=self.said_only)
        reserved = next((t.reservation for t in linked if isinstance(t, LaunchTemplate) and t.reservation), None)
        if reserved is None:
            return Source((ON_DEMAND,), only=self.said_only)
        return Source((RESERVED, ON_DEMAND) if reserved.falls_back else (RESERVED,), self.stamped_reservation(reserved),
                      self.said_only)

    @property
    def image_types(self) -> Optional[list[Any]]:
        """The Batch image types it launches (Batch's default when none is given); ``None`` with an explicit AMI.
        Pulumi spells the list ``ec2Configurations``, Batch's API ``ec2Configuration``."""
        configs = self.resources.get("ec2Configurations", self.resources.get("ec2Configuration")) or []
        if self.resources.get("imageId") or any(c.get("imageIdOverride") for c in configs):
            return None
        return [c.get("imageType") for c in configs] or ["ECS_AL2 (Batch's default)"]

    def image_without_driver(self) -> Optional[tuple[str, str]]:
        types = self.image_types
        if types is not None and not all(t in self.platform_facts.GPU_IMAGE_TYPES for t in types):
            return (f"GPU instances on image type {', '.join(map(str, types))}, which has no NVIDIA driver",
                    f"set ec2Configuration imageType {self.platform_facts.DEFAULT_IMAGE_TYPE}")
        return None

    def vcpus(self, bound: str) -> int:
        """``computeResources``' ``min`` or ``max`` vCPUs, as Pulumi spells them (``maxVcpus``) or as Batch's API
        answers them (``maxvCpus``, what the smoke diagnosis reads from DescribeComputeEnvironments)."""
        value = self.resources.get(f"{bound}Vcpus", self.resources.get(f"{bound}vCpus"))
        return int(value or 0)

    @property
    def minimum(self) -> tuple[int, str]:
        return self.vcpus("min"), "minVcpus"

    MINIMUM_KEY = "gpuready:minVcpus"

    def minimum_for(self, nodes: Optional[int]) -> str:
        """In vCPUs: ``nodes`` instances of its GPU type (of its types' largest, said so, when it has several)."""
        per = max((row.vcpus for row in self.gpu_rows), default=0)
        if nodes is None or not per:
            return "the reserved instances' vCPUs"
        several = len({row.vcpus for row in self.gpu_rows}) > 1
        return f"{nodes * per} = {nodes} instances of {'up to ' if several else ''}{per} vCPUs"

    @property
    def resource_type(self) -> str:
        """``EC2`` (on-demand), ``SPOT``, ``FARGATE`` or ``FARGATE_SPOT``."""
        return str(self.resources.get("type") or "")

    @property
    def subnets(self) -> list[Any]:
        return list(self.resources.get("subnets") or [])

    @property
    def subnet_count(self) -> int:
        """How many subnets it launches in (known in a preview even while the subnet ids are not)."""
        return len(self.resources.get("subnets") or [])

    @property
    def has_placement_group(self) -> bool:
        """Whether it launches into a placement group (known in a preview even while the group's name is not)."""
        return "placementGroup" in self.resources

    def capacity(self) -> Optional[PoolCapacity]:
        types = tuple(self.instance_types)
        rows = self.gpu_rows
        if not rows:
            return None
        scale = fit.full_scale(rows, self.vcpus("max"))  # the component's own figure (its validation's)
        return PoolCapacity("aws", types, scale.gpus, scale.usd_per_hour, self.unknown_types, tuple(rows))


class BatchJobQueue(Resource):
    TOKEN = "aws:batch/jobQueue:JobQueue"
    ENVIRONMENTS_INPUT = "computeEnvironmentOrders"
    SCHEDULING_POLICY_INPUT = "schedulingPolicyArn"

    @property
    def scheduling_policy_arn(self) -> Optional[str]:
        """The fair-share scheduling policy it schedules by; ``None``: first in, first out."""
        return self.props.get(self.SCHEDULING_POLICY_INPUT) or None

    @property
    def orders(self) -> list[Mapping[str, Any]]:
        """Its compute environments in queue order (``computeEnvironment`` ARN, ``order``)."""
        return sorted(self.props.get("computeEnvironmentOrders") or [], key=lambda o: o.get("order", 0))

    @property
    def time_limit_actions(self) -> list[Mapping[str, Any]]:
        return list(self.props.get("jobStateTimeLimitActions") or [])

    @property
    def runnable_cancels(self) -> list[Mapping[str, Any]]:
        """The actions that cancel jobs stuck in RUNNABLE."""
        return [a for a in self.time_limit_actions if a.get("state") == "RUNNABLE" and a.get("action") == "CANCEL"]


@dataclass(frozen=True)
class Share:
    """One share of a fair-share scheduling policy: the jobs submitted with ``shareIdentifier`` (a trailing ``*``
    matches every identifier it prefixes) and its weight factor."""

    identifier: str
    weight_factor: float
    """Batch's ``weightFactor`` (default 1): the lower it is, the larger the share (a share of weight factor 0.5
    gets twice the compute of one of 1.0)."""


class BatchSchedulingPolicy(Resource):
    """A fair-share scheduling policy: how a job queue divides its compute between share identifiers."""

    TOKEN = "aws:batch/schedulingPolicy:SchedulingPolicy"

    @property
    def fair_share(self) -> Mapping[str, Any]:
        return self.props.get("fairSharePolicy") or {}

    @property
    def shares(self) -> list[Share]:
        """``fairSharePolicy.shareDistributions``, in order."""
        return [Share(str(s.get("shareIdentifier", "")), float(s.get("weightFactor", 1.0)))
                for s in self.fair_share.get("shareDistributions") or ()]

    @property
    def compute_reservation(self) -> int:
        """``computeReservation`` (0-99): the percentage of the queue's maximum vCPUs kept back for share
        identifiers that are not active yet."""
        return int(self.fair_share.get("computeReservation", 0) or 0)

    @property
    def share_decay_seconds(self) -> int:
        """``shareDecaySeconds``: the window of past use fair share weighs (0: current use only)."""
        return int(self.fair_share.get("shareDecaySeconds", 0) or 0)

    def fractions(self) -> dict[str, float]:
        """Share identifier -> the fraction of the queue it gets while every share is active: inversely
        proportional to its weight factor."""
        inverse = {s.identifier: 1 / s.weight_factor for s in self.shares if s.weight_factor > 0}
        total = sum(inverse.values())
        return {k: v / total for k, v in inverse.items()} if total else {}


def _needs(container: Mapping[str, Any]) -> fit.Needs:
    asked = {r.get("type"): r.get("value") for r in container.get("resourceRequirements") or []}
    out = []
    for key in ("GPU", "VCPU", "MEMORY"):
        try:
            out.append(int(float(asked.get(key) or 0)))
        except (TypeError, ValueError):
            out.append(0)
    return fit.Needs(*out)


class BatchJobDefinition(Resource):
    TOKEN = "aws:batch/jobDefinition:JobDefinition"

    @property
    def multinode(self) -> bool:
        return self.props.get("type") == "multinode"

    @property
    def node_properties(self) -> Mapping[str, Any]:
        return _parse(self.props.get("nodeProperties")) or {}

    def containers(self) -> Iterator[Mapping[str, Any]]:
        """Its container properties: the single-node container, then each node range's."""
        container = _parse(self.props.get("containerProperties"))
        if container:
            yield container
        for node_range in self.node_properties.get("nodeRangeProperties") or []:
            if node_range.get("container"):
                yield node_range["container"]

    def needs(self) -> Iterator[fit.Needs]:
        """What each container asks for (an unreadable amount counts as 0)."""
        return map(_needs, self.containers())

    @staticmethod
    def efa_devices(container: Mapping[str, Any]) -> list[str]:
        """The EFA (InfiniBand verbs) devices a container is given (``/dev/infiniband/uverbsN``)."""
        devices = (container.get("linuxParameters") or {}).get("devices") or []
        return [d.get("hostPath", "") for d in devices if str(d.get("hostPath", "")).startswith("/dev/infiniband/")]

    @staticmethod
    def memlock_unlimited(container: Mapping[str, Any]) -> bool:
        """Whether the container may lock unlimited memory (``ulimits`` memlock -1 soft and hard), as EFA needs."""
        return any(u.get("name") == "memlock" and int(u.get("softLimit", 0)) == -1 and int(u.get("hardLimit", 0)) == -1
                   for u in container.get("ulimits") or [])


class LaunchTemplate(Resource):
    TOKEN = "aws:ec2/launchTemplate:LaunchTemplate"
    ID_PREFIX = "lt"

    @classmethod
    def stand_in(cls, name: str, state: Mapping[str, Any], site: Site) -> tuple[Optional[str], dict[str, Any]]:
        return None, {"latestVersion": 1}

    @property
    def http_tokens(self) -> str:
        """``required`` when the instances answer IMDSv2 only."""
        return dig(self.props, "metadataOptions.httpTokens", "optional")

    @property
    def hop_limit(self) -> Optional[int]:
        hops = get(self.props, "metadataOptions.httpPutResponseHopLimit")
        return None if hops is None else int(hops)

    @property
    def reservation(self) -> Optional[Reservation]:
        """The reserved capacity its instances launch into: a Capacity Block (market type ``capacity-block``), a
        targeted On-Demand Capacity Reservation (by id: a launch fails when it is full; by resource group: on-demand
        past it, unless the preference is ``capacity-reservations-only``), or any matching open one (``open``: on-demand
        past it); ``None`` when it names none. EC2's words (botocore ``CapacityReservationPreference``)."""
        spec = self.props.get("capacityReservationSpecification") or {}
        target = spec.get("capacityReservationTarget") or {}
        preference = spec.get("capacityReservationPreference")
        only = preference == "capacity-reservations-only"
        if dig(self.props, "instanceMarketOptions.marketType", None) == "capacity-block":
            return Reservation("capacity-block", target.get("capacityReservationId") or "?", False)
        if target.get("capacityReservationId"):
            return Reservation("odcr", target["capacityReservationId"], False)
        if target.get("capacityReservationResourceGroupArn"):
            return Reservation("odcr", target["capacityReservationResourceGroupArn"], not only)
        if preference == "open":
            return Reservation("odcr", "open", True)
        return None

    @property
    def volumes(self) -> list[Mapping[str, Any]]:
        """Its block device mappings."""
        return list(self.props.get("blockDeviceMappings") or [])

    @property
    def unencrypted_devices(self) -> list[Any]:
        return [m.get("deviceName") for m in self.volumes
                if m.get("ebs") is not None and not true(m["ebs"].get("encrypted"))]

    @property
    def volume_sizes(self) -> list[int]:
        return [int(get(m, "ebs.volumeSize", 0)) for m in self.volumes]

    @property
    def public_ip(self) -> bool:
        return any(true(n.get("associatePublicIpAddress")) for n in self.props.get("networkInterfaces") or [])

    @property
    def efa_interfaces(self) -> int:
        """Its EFA network interfaces (``efa`` and ``efa-only``)."""
        return sum(str(n.get("interfaceType", "")).startswith("efa") for n in self.props.get("networkInterfaces") or [])


class PlacementGroup(Resource):
    TOKEN = "aws:ec2/placementGroup:PlacementGroup"

    @property
    def strategy(self) -> str:
        """``cluster`` (one rack-close group in one AZ, what multi-node jobs need), ``spread`` or ``partition``."""
        return str(self.props.get("strategy") or "")


Vpc = plain("Vpc", "aws:ec2/vpc:Vpc", ID_PREFIX="vpc")
SecurityGroup = plain("SecurityGroup", "aws:ec2/securityGroup:SecurityGroup", ID_PREFIX="sg")
NatGateway = plain("NatGateway", "aws:ec2/natGateway:NatGateway", ID_PREFIX="nat")
InternetGateway = plain("InternetGateway", "aws:ec2/internetGateway:InternetGateway", ID_PREFIX="igw")
RouteTable = plain("RouteTable", "aws:ec2/routeTable:RouteTable", ID_PREFIX="rtb")
Eip = plain("Eip", "aws:ec2/eip:Eip", ID_PREFIX="eipalloc")


class SqsQueue(Resource):
    TOKEN = "aws:sqs/queue:Queue"

    @classmethod
    def stand_in(cls, name: str, state: Mapping[str, Any], site: Site) -> tuple[Optional[str], dict[str, Any]]:
        return None, {"url": f"https://sqs.{site.region}.amazonaws.com/{site.account}/{state['name']}"}


class Subnet(Resource):
    TOKEN = "aws:ec2/subnet:Subnet"
    ID_PREFIX = "subnet"

    @property
    def public_ips(self) -> bool:
        return true(self.props.get("mapPublicIpOnLaunch"))


class EksCluster(Resource):
    TOKEN = "aws:eks/cluster:Cluster"

    @classmethod
    def stand_in(cls, name: str, state: Mapping[str, Any], site: Site) -> tuple[Optional[str], dict[str, Any]]:
        issuer = f"https://oidc.eks.{site.region}.amazonaws.com/id/{name.upper()}"
        return None, {"endpoint": f"https://{name.upper()}.gr7.{site.region}.eks.amazonaws.com",
                      "certificateAuthority": {"data": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t"},
                      "identities": [{"oidcs": [{"issuer": issuer}]}],
                      # EKS's computed network facts: the subnets' VPC and the cluster security group it creates.
                      "vpcConfig": {"vpcId": ec2_id("vpc", name),
                                    "clusterSecurityGroupId": ec2_id("sg", f"eks-cluster-{name}")}}

    @property
    def public_endpoint(self) -> bool:
        return bool(dig(self.props, "vpcConfig.endpointPublicAccess", True))

    @property
    def authorized_networks(self) -> list[Any]:
        """Who may reach a public endpoint (empty: anywhere)."""
        return list(dig(self.props, "vpcConfig.publicAccessCidrs") or [])

    @property
    def auto_mode(self) -> bool:
        return bool((self.props.get("computeConfig") or {}).get("enabled"))

    VERSION_FIX = "set version to 1.34 or later (gpuready:kubernetesVersion)"
    """How its Kubernetes version is set."""

    @property
    def kubernetes_version(self) -> Optional[str]:
        """Its Kubernetes version as given (``None``: EKS's default)."""
        return self.props.get("version")


class EksNodeGroup(GpuPool):
    TOKEN = "aws:eks/nodeGroup:NodeGroup"
    CLOUD = "aws"
    LAUNCH_TEMPLATE_INPUT = "launchTemplate"
    SUBNET_INPUT = "subnetIds"
    NAME_LABEL = "eks.amazonaws.com/nodegroup"  # EKS user guide: labels EKS applies to managed node group nodes
    NAME_INPUT = "nodeGroupName"
    REPAIR_FIXES = ("turn node repair on (nodeRepairConfig.enabled; gpuready:repair.enabled true in the reference "
                    "stacks, EksGpuCluster node_group.repair)",
                    "set nodeRepairConfig.maxUnhealthyNodeThresholdPercentage, e.g. to 20 (gpuready:repair."
                    "maxUnhealthyPercent in the reference stacks, whose default is 20)",
                    "set nodeRepairConfig.maxParallelNodesRepairedCount to 1, or a small share (gpuready:repair."
                    "maxParallel in the reference stacks)")
    MINIMUM_KEY = "gpuready:minSize"
    RESERVED_ONLY_FIX = ("target the reservation alone in the launch template (a reservation id, or a resource group "
                         "with preference capacity-reservations-only) on capacity type ON_DEMAND or CAPACITY_BLOCK")

    @classmethod
    def stand_in(cls, name: str, state: Mapping[str, Any], site: Site) -> tuple[Optional[str], dict[str, Any]]:
        # EKS names a managed node group's Auto Scaling group eks-<node group>-<uuid>.
        return None, {"nodeGroupName": name, "resources": [{"autoscalingGroups": [{"name": f"eks-{name}-0000"}]}]}

    @property
    def instance_types(self) -> list[str]:
        return list(self.props.get("instanceTypes") or [])

    @property
    def ami_type(self) -> str:
        return self.props.get("amiType") or "AL2_x86_64 (EKS's default)"

    def source(self, linked: Sequence[Resource] = ()) -> Source:
        """``capacityType`` (``CAPACITY_BLOCK``: reserved), and the reservation its launch template (in ``linked``)
        names: reserved first, then on-demand where EC2 falls back to it."""
        reserved = next((t.reservation for t in linked if isinstance(t, LaunchTemplate) and t.reservation), None)
        kind = self.props.get("capacityType") or "ON_DEMAND"
        if kind == "SPOT":
            return Source((SPOT,), only=self.said_only)
        if reserved is None:
            return Source((RESERVED,) if kind == "CAPACITY_BLOCK" else (ON_DEMAND,), only=self.said_only)
        return Source((RESERVED, ON_DEMAND) if reserved.falls_back else (RESERVED,), self.stamped_reservation(reserved),
                      self.said_only)

    @property
    def repair(self) -> Optional[Repair]:
        """``nodeRepairConfig`` (EKS's default: off); counts read against the group's maximum size."""
        config = self.props.get("nodeRepairConfig") or {}
        if not config.get("enabled"):
            return Repair(False)
        most = max(float((self.props.get("scalingConfig") or {}).get("maxSize") or 1), 1.0)

        def share(count: str, percent: str) -> Optional[float]:
            if config.get(percent) is not None:
                return float(config[percent]) / 100
            return float(config[count]) / most if config.get(count) is not None else None
        return Repair(True, share("maxParallelNodesRepairedCount", "maxParallelNodesRepairedPercentage"),
                      share("maxUnhealthyNodeThresholdCount", "maxUnhealthyNodeThresholdPercentage"))

    def image_without_driver(self) -> Optional[tuple[str, str]]:
        if self.ami_type not in (*self.platform_facts.GPU_AMI_TYPES, *self.platform_facts.RETIRED_AMI_TYPES, "CUSTOM"):
            return (f"GPU node group on AMI type {self.ami_type}, which has no NVIDIA driver",
                    f"set amiType {self.platform_facts.DEFAULT_AMI_TYPE} (or BOTTLEROCKET_x86_64_NVIDIA)")
        return None

    @property
    def node_image(self) -> str:
        """Key of the platform descriptor's ``node_images`` (when it names one)."""
        return self.platform_facts.node_image(self.props.get("amiType", ""))

    @property
    def minimum(self) -> tuple[int, str]:
        return int(get(self.props, "scalingConfig.minSize", 0)), "scalingConfig.minSize"

    @property
    def taints(self) -> list[Taint]:
        return [api_taint(t) for t in self.props.get("taints") or []]

    @property
    def labels(self) -> dict[str, str]:
        return dict(self.props.get("labels") or {})

    @property
    def own_volume(self) -> Optional[tuple[int, str]]:
        return int(self.props.get("diskSize", 20)), "diskSize"

    @property
    def multi_node(self) -> str:
        """An EFA node group (its nodes carry the platform's EFA label: the stack's setting for NCCL across nodes) or
        a node group of a type sold only inside UltraServers (the facts' ``ultraserver_type``: its nodes share one
        NVLink domain), of more than one node, of types whose nodes its platform labels with their place in the
        network (the facts' ``placement``): a pool a Topology could place."""
        efa = getattr(self.platform_facts, "EFA_NODE_LABELS", {})
        ultraserver = getattr(self.platform_facts, "ultraserver_type", None)
        placement = getattr(self.platform_facts, "placement", None)
        nodes = int((self.props.get("scalingConfig") or {}).get("maxSize", 0))
        if nodes < 2 or placement is None or placement(self.instance_types) is None:
            return ""
        if efa and all(self.node_labels.get(k) == v for k, v in efa.items()):
            return f"EFA, up to {nodes} nodes"
        sold = ultraserver(self.instance_types) if ultraserver is not None else None
        return f"{sold} UltraServer, one NVLink domain, up to {nodes} nodes" if sold else ""

    def capacity(self) -> Optional[PoolCapacity]:
        types = tuple(self.instance_types)
        rows = self.gpu_rows
        if not rows:
            return None
        nodes = int((self.props.get("scalingConfig") or {}).get("maxSize", 0))
        return PoolCapacity("aws", types, nodes * max(x.gpus for x in rows),
                            nodes * max(x.price_usd_hour or 0.0 for x in rows), self.unknown_types, tuple(rows))


class AutoScalingTag(Resource):
    """A tag on an Auto Scaling group (cluster-autoscaler's node-template tags)."""

    TOKEN = "aws:autoscaling/tag:Tag"
    GROUP_INPUT = "autoscalingGroupName"

    @property
    def key(self) -> str:
        return (self.props.get("tag") or {}).get("key", "")

    @property
    def value(self) -> str:
        return str((self.props.get("tag") or {}).get("value", ""))


class _IamPolicyHolder(Resource):
    """A resource holding IAM policy documents."""

    def documents(self) -> list[Any]:
        """Its own policy document and its inline ones, each read on its own (one may be unknown in a preview)."""
        return [self.props, *(self.props.get("inlinePolicies") or [])]

    @property
    def policy_arn(self) -> Any:
        """The managed policy it attaches (attachments)."""
        return self.props.get("policyArn")

    @property
    def managed_policy_arns(self) -> list[Any]:
        """The managed policies it lists (roles); one built from another resource may be unknown in a preview."""
        return self.props.get("managedPolicyArns") or []


def _iam(name: str, token: str) -> type[_IamPolicyHolder]:
    return type(name, (_IamPolicyHolder,), {"TOKEN": token, "__doc__": f"A {token} resource."})


IamRole = _iam("IamRole", "aws:iam/role:Role")
IamRolePolicy = _iam("IamRolePolicy", "aws:iam/rolePolicy:RolePolicy")
IamPolicy = _iam("IamPolicy", "aws:iam/policy:Policy")
IamUserPolicy = _iam("IamUserPolicy", "aws:iam/userPolicy:UserPolicy")
IamGroupPolicy = _iam("IamGroupPolicy", "aws:iam/groupPolicy:GroupPolicy")
IamRolePolicyAttachment = _iam("IamRolePolicyAttachment", "aws:iam/rolePolicyAttachment:RolePolicyAttachment")
IamUserPolicyAttachment = _iam("IamUserPolicyAttachment", "aws:iam/userPolicyAttachment:UserPolicyAttachment")
IamGroupPolicyAttachment = _iam("IamGroupPolicyAttachment", "aws:iam/groupPolicyAttachment:GroupPolicyAttachment")

INLINE_POLICIES = (IamRolePolicy, IamPolicy, IamUserPolicy, IamGroupPolicy)
POLICY_ATTACHMENTS = (IamRolePolicyAttachment, IamUserPolicyAttachment, IamGroupPolicyAttachment)

__all__ = ["AutoScalingTag", "BatchComputeEnvironment", "BatchJobDefinition", "BatchJobQueue", "EksCluster",
           "EksNodeGroup", "INLINE_POLICIES", "IamRole", "LaunchTemplate", "POLICY_ATTACHMENTS", "Subnet"]
