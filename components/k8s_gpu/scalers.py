"""The Kubernetes node scalers gpuready installs or reads, in tables: cluster-autoscaler, Karpenter and EKS Auto Mode
(Karpenter run by AWS): their modes, charts, images and flags, the node-template tags and labels they read, their
NodePool and NodeClass APIs and capacity types, and what their AWS providers are allowed. The EKS component installs
them; the readers, ``gpuready plan`` and the scale-from-zero check (:mod:`.scale_from_zero`) read them.

Tests check the chart values against the vendored chart (``tests/data/helm-charts``), the flags against the
cluster-autoscaler source, and every IAM action against botocore's service models.
"""

from __future__ import annotations

from types import MappingProxyType

from .facts import Chart

CLUSTER_AUTOSCALER, KARPENTER, AUTO_MODE, NONE = "cluster-autoscaler", "karpenter", "auto-mode", "none"
MODES = MappingProxyType({
    CLUSTER_AUTOSCALER: "Kubernetes cluster-autoscaler (official chart) scales each GPU node group's Auto Scaling "
                        "group, from zero, using node-template tags",
    KARPENTER: "Karpenter launches GPU instances for pending pods from a NodePool",
    AUTO_MODE: "EKS Auto Mode launches GPU nodes from a NodePool and ships its own NVIDIA software",
    NONE: "nothing installed: the cluster's own autoscaler must scale the GPU node groups",
})
"""``gpuready:autoscaler`` values. Default: cluster-autoscaler for a new cluster, none for an existing one."""

DEFAULT_KUBERNETES_VERSION = "1.34"
"""Version of a new cluster when none is given: pinned, so that the cluster-autoscaler image matches it."""

CLUSTER_AUTOSCALER_CHART = Chart(
    "cluster-autoscaler", "https://kubernetes.github.io/autoscaler", "9.59.0",
    "kubernetes/autoscaler cluster-autoscaler-chart-9.59.0 cluster-autoscaler/charts/cluster-autoscaler")
CLUSTER_AUTOSCALER_IMAGES = MappingProxyType({
    "1.30": "v1.30.7", "1.31": "v1.31.5", "1.32": "v1.32.7", "1.33": "v1.33.6", "1.34": "v1.34.5", "1.35": "v1.35.2",
})
"""Kubernetes minor -> cluster-autoscaler image tag (latest patch tagged in kubernetes/autoscaler): its minor must
match the cluster's."""
CLUSTER_AUTOSCALER_NAMESPACE = "kube-system"
CLUSTER_AUTOSCALER_SERVICE_ACCOUNT = "cluster-autoscaler"
CLUSTER_AUTOSCALER_ARGS = MappingProxyType({
    "expander": "least-waste",
    "balance-similar-node-groups": True,
    "skip-nodes-with-system-pods": False,
    "scale-down-unneeded-time": "10m",
    "scale-down-delay-after-add": "10m",
    "max-node-provision-time": "15m",
})
"""Flags beyond the chart's defaults. ``least-waste``: a 1-GPU pod gets the 1-GPU group, not a 4-GPU node; GPU
nodes boot slowly, so they get 15 minutes to register before the group is backed off."""

STARTUP_TAINT_FLAG = "startup-taint"
"""cluster-autoscaler ignores these taints (keys) in node templates and treats nodes carrying them as not ready yet
(``config/flags/flags.go``: a ``multiStringFlag``, so absent from the ``flag.<Type>`` list in tests/data)."""

POD_IDENTITY_PRINCIPAL = "pods.eks.amazonaws.com"
POD_IDENTITY_ADDON = "eks-pod-identity-agent"
CLUSTER_AUTOSCALER_DESCRIBE_ACTIONS = (
    "autoscaling:DescribeAutoScalingGroups",
    "autoscaling:DescribeAutoScalingInstances",
    "autoscaling:DescribeLaunchConfigurations",
    "autoscaling:DescribeScalingActivities",
    "autoscaling:DescribeTags",
    "ec2:DescribeImages",
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeLaunchTemplateVersions",
    "ec2:GetInstanceTypesFromInstanceRequirements",
    "eks:DescribeNodegroup",
)
"""Read-only calls cluster-autoscaler's AWS provider makes, on every resource (Describe calls take no resource)."""
CLUSTER_AUTOSCALER_SCALE_ACTIONS = (
    "autoscaling:SetDesiredCapacity",
    "autoscaling:TerminateInstanceInAutoScalingGroup",
)
"""Allowed only on Auto Scaling groups tagged ``k8s.io/cluster-autoscaler/<cluster>=owned`` (EKS tags its managed
node groups' groups so)."""
OWNED_TAG = "k8s.io/cluster-autoscaler/{cluster}"

TEMPLATE_TAG = "k8s.io/cluster-autoscaler/node-template/"
"""Prefix of the Auto Scaling group tags that describe a node of an empty group: ``resources/<name>``,
``label/<key>``, ``taint/<key>`` (value ``<value>:<effect>``)."""
GPU_RESOURCE = "nvidia.com/gpu"
ACCELERATOR_LABEL = "k8s.amazonaws.com/accelerator"
"""The label cluster-autoscaler's AWS provider reads as "this node has GPUs": until the device plugin reports them,
the node counts as not ready instead of as a node without GPUs (else it scales out again)."""


def accelerator(gpu_model: str) -> str:
    """``L4`` -> ``nvidia-l4``: the accelerator label's value."""
    return "nvidia-" + gpu_model.lower().replace(" ", "-")

NODE_POOL_NAME = "gpuready-gpu"
"""Literal name of the GPU NodePool (Karpenter, Auto Mode): never derived, so it is never replaced."""
NODE_POOL_API = "karpenter.sh/v1"
AUTO_MODE_NODE_CLASS = {"group": "eks.amazonaws.com", "kind": "NodeClass", "name": "default"}
"""The NodeClass EKS Auto Mode creates with its built-in node pools (API ``eks.amazonaws.com/v1``)."""
AUTO_MODE_BUILTIN_POOLS = ("general-purpose", "system")
"""Built-in node pools: ``system`` runs CoreDNS and controllers; enabling them creates the ``default`` NodeClass."""
AUTO_MODE_CLUSTER_POLICIES = (
    "arn:aws:iam::aws:policy/AmazonEKSClusterPolicy",
    "arn:aws:iam::aws:policy/AmazonEKSComputePolicy",
    "arn:aws:iam::aws:policy/AmazonEKSBlockStoragePolicy",
    "arn:aws:iam::aws:policy/AmazonEKSLoadBalancingPolicy",
    "arn:aws:iam::aws:policy/AmazonEKSNetworkingPolicy",
)
"""The cluster role of an Auto Mode cluster: EKS launches nodes, volumes and load balancers with it (its trust also
allows ``sts:TagSession``)."""
AUTO_MODE_NODE_POLICIES = (
    "arn:aws:iam::aws:policy/AmazonEKSWorkerNodeMinimalPolicy",
    "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly",
)
"""The node role of Auto Mode nodes (no CNI policy: Auto Mode runs the network itself)."""
CAPACITY_TYPES = MappingProxyType({"ON_DEMAND": "on-demand", "SPOT": "spot"})
"""EKS capacity type -> ``karpenter.sh/capacity-type`` value."""
KARPENTER_RESERVED = "reserved"
"""The ``karpenter.sh/capacity-type`` of capacity reservations (ODCRs and Capacity Blocks alike), which Karpenter
prefers to ``spot``, and ``spot`` to ``on-demand`` (kubernetes-sigs/karpenter v1.13.0 ``pkg/apis/v1/labels.go``
``CapacityType*``; the provider's v1.13 NodePool docs give the order)."""
KARPENTER_PREFERENCE = (KARPENTER_RESERVED, "spot", "on-demand")
"""Karpenter's capacity types, the one it launches first first."""
AUTO_MODE_NODE_CLASS_API = "eks.amazonaws.com/v1"
AUTO_MODE_RESERVED_NODE_CLASS = {"group": "eks.amazonaws.com", "kind": "NodeClass", "name": NODE_POOL_NAME}
"""The custom NodeClass the Auto Mode GPU NodePool uses on a reservation (never named ``default``, which is the
built-in one: EKS user guide, create-node-class, Considerations)."""
AUTO_MODE_OPEN_ODCRS = ("capacityReservationSelectorTerms on any NodeClass stops EKS Auto Mode launching into open "
                        "ODCRs for every NodeClass of the cluster")
"""What selecting a reservation does to the rest of an Auto Mode cluster (EKS user guide, auto-odcr, its warning)."""
AUTO_MODE_RESERVATION_TERMS = ("id", "tags")
"""What an Auto Mode NodeClass's ``capacityReservationSelectorTerms`` select by (EKS user guide, auto-odcr: an ``id``,
or ``tags`` with an optional ``owner``; Karpenter's ``instanceMatchCriteria`` is not documented there)."""

KARPENTER_CHART = Chart(
    "oci://public.ecr.aws/karpenter/karpenter", "", "1.13.0",
    "aws/karpenter-provider-aws fe623d537 (Release v1.13.0) charts/karpenter")
"""An OCI chart: ``name`` is the full reference and there is no repository."""
KARPENTER_NAMESPACE = "kube-system"
KARPENTER_SERVICE_ACCOUNT = "karpenter"
KARPENTER_AMI_ALIAS = "al2023@v20260724"
"""EKS-optimized AL2023 release (awslabs/amazon-eks-ami tag v20260724), pinned: for GPU instance types Karpenter
picks its NVIDIA variant (driver and toolkit), so nodes change only when this changes."""
KARPENTER_NODE_CLASS_API = "karpenter.k8s.aws/v1"
KARPENTER_NODE_CLASS = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": NODE_POOL_NAME}
KARPENTER_AMI_TYPES = ("AL2023_x86_64_NVIDIA", "AL2023_ARM_64_NVIDIA")
"""Node images the pinned ``al2023`` alias gives (Bottlerocket would need a bottlerocket@ alias)."""
KARPENTER_INTERRUPTION_EVENTS = MappingProxyType({
    "health": ("aws.health", "AWS Health Event"),
    "spot": ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
    "rebalance": ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
    "state": ("aws.ec2", "EC2 Instance State-change Notification"),
    "reservation": ("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning"),
})
"""EventBridge rules feeding the interruption queue (Karpenter's getting-started CloudFormation, v1.13.0)."""
KARPENTER_READ_ACTIONS = (
    "ec2:DescribeCapacityReservations", "ec2:DescribeImages", "ec2:DescribeInstances", "ec2:DescribeInstanceStatus",
    "ec2:DescribeInstanceTypeOfferings", "ec2:DescribeInstanceTypes", "ec2:DescribeLaunchTemplates",
    "ec2:DescribePlacementGroups", "ec2:DescribeSecurityGroups", "ec2:DescribeSpotPriceHistory",
    "ec2:DescribeSubnets", "pricing:GetProducts", "iam:ListInstanceProfiles",
)
"""Read-only calls Karpenter's controller makes on every resource of the region."""
