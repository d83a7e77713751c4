"""Amazon EKS platform facts, in one table. Tests check each value EKS constrains against botocore's EKS model."""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Optional, Sequence

from ..k8s_gpu.kubeconfig import CredentialPlugin
from ..k8s_gpu.topology import Placement
from ..aws_instances import ARM64_GPU_FAMILIES  # noqa: F401 (arm64 GPU families: one list for every AWS component)
from ..k8s_gpu.facts import (ALL_NODE_SOFTWARE, DRIVER_TOOLKIT, GPU_LABELS, CapacityLabel, Chart, NodeFacts, NodeImage,
                             Taint)

TYPE_TOKEN = "gpuready:aws:EksGpuCluster"
"""Never change: renaming a type token replaces every cloud resource under it."""


@dataclass(frozen=True)
class AmiType:
    """An EKS managed node group AMI type with the NVIDIA driver."""

    arch: str
    """``x86_64`` or ``arm64``: the instance types it runs on."""
    data_device: str
    """The block device holding container images: the root volume on AL2023, the data volume on Bottlerocket."""


GPU_AMI_TYPES = MappingProxyType({
    "AL2023_x86_64_NVIDIA": AmiType("x86_64", "/dev/xvda"),
    "AL2023_ARM_64_NVIDIA": AmiType("arm64", "/dev/xvda"),
    "BOTTLEROCKET_x86_64_NVIDIA": AmiType("x86_64", "/dev/xvdb"),
    "BOTTLEROCKET_ARM_64_NVIDIA": AmiType("arm64", "/dev/xvdb"),
    "BOTTLEROCKET_x86_64_NVIDIA_FIPS": AmiType("x86_64", "/dev/xvdb"),
    "BOTTLEROCKET_ARM_64_NVIDIA_FIPS": AmiType("arm64", "/dev/xvdb"),
})
"""AMI types whose image ships the NVIDIA driver (what each ships beyond it: ``NODE_IMAGES``)."""
DEFAULT_AMI_TYPE = "AL2023_x86_64_NVIDIA"
RETIRED_AMI_TYPES = MappingProxyType({
    "AL2_x86_64_GPU": "EKS stopped publishing Amazon Linux 2 AMIs on 2025-11-26 (AL2 reached end of support)",
})
SYSTEM_AMI_TYPE = "AL2023_x86_64_STANDARD"
"""AMI type of the system node group that a new cluster gets for CoreDNS, the GPU Operator and NFD's master."""
SYSTEM_INSTANCE_TYPES = ("m6i.large", "m7i.large")

CAPACITY_TYPES = ("ON_DEMAND", "SPOT")
"""EKS ``capacityType`` values we accept (``CAPACITY_BLOCK`` needs a reservation this component does not make)."""
CLUSTER_NAME = r"[0-9A-Za-z][A-Za-z0-9\-_]{0,99}"
"""An EKS cluster's name (botocore's EKS model, shape ``ClusterName``: that pattern, 1 to 100 characters)."""
CLUSTER_SUBNETS = 2
"""Subnets a new cluster needs at the least: EKS puts the control plane's network interfaces in two or more
Availability Zones, and refuses fewer subnets."""

GPU_TAINT_EFFECT = "NO_SCHEDULE"
"""The EKS API's spelling of ``NoSchedule`` for the GPU taint (``NODES``)."""

ROOT_VOLUME_GIB_RANGE = (40, 16_384)
"""Below 40 GiB a node fills up with one deep-learning image plus the system; 16 TiB is gp3's maximum."""
IMDS_HOP_LIMIT = 1
"""IMDSv2 responses do not reach pods on the pod network, so a pod cannot take the node role's credentials
(EKS best practices guide, security: restrict access to the instance profile). Pods use IAM roles via the OIDC
provider instead."""

CLUSTER_LOG_TYPES = ("api", "audit", "authenticator")
"""Control-plane logs sent to CloudWatch by default."""
LOG_TYPES = ("api", "audit", "authenticator", "controllerManager", "scheduler")
"""Every EKS control-plane log type."""
MIN_KUBERNETES_VERSION = (1, 30)
"""Oldest Kubernetes version accepted: the oldest whose API schemas our objects are validated against."""

MANAGED_POLICIES = MappingProxyType({
    "cluster": ("arn:aws:iam::aws:policy/AmazonEKSClusterPolicy",),
    "node": ("arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
             "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
             "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly"),
})
"""The AWS managed policies each role needs, and no others (nodes pull images but never push)."""
SERVICE_PRINCIPALS = MappingProxyType({"cluster": "eks.amazonaws.com", "node": "ec2.amazonaws.com"})
OIDC_AUDIENCE = "sts.amazonaws.com"

GPU_NODE_LABELS = MappingProxyType({"nvidia.com/gpu.present": "true"})
"""Labels every GPU node registers with; the shared GPU software selects GPU nodes by them. The GPU Operator sets
the same label once node-feature-discovery has seen the GPU, so nothing disagrees."""

EFA_DEVICE_PLUGIN_CHART = Chart(
    "aws-efa-k8s-device-plugin", "https://aws.github.io/eks-charts", "v0.5.30",
    "aws/eks-charts bfe91c4b9257c80f754ad4b3d6a9a3c239b2b8ec stable/aws-efa-k8s-device-plugin (image v0.5.20)")
"""The AWS EFA Kubernetes device plugin: advertises each node's EFA interfaces as ``vpc.amazonaws.com/efa`` and
mounts ``/dev/infiniband`` into pods that ask for them (EKS user guide, Run machine learning training on Amazon EKS
with Elastic Fabric Adapter)."""
EFA_DEVICE_PLUGIN_NAMESPACE = "kube-system"
"""Where the EKS user guide installs it; its pods are system-node-critical, which EKS admits in any namespace."""
EFA_RESOURCE = "vpc.amazonaws.com/efa"
"""The extended resource a pod requests EFA interfaces by (with the IPC_LOCK capability)."""
EFA_NODE_LABELS = MappingProxyType({"vpc.amazonaws.com/efa.present": "true"})
"""Label every node of an EFA node group registers with: the EFA device plugin and multi-node pods select it."""
EFA_PLACEMENT_STRATEGY = "cluster"
"""Placement group strategy of an EFA node group: instances close together in one AZ, for EFA's low latency."""

NETWORK_LAYERS = tuple(f"topology.k8s.aws/network-node-layer-{n}" for n in (1, 2, 3, 4))
"""The labels EKS puts on a node of a type EC2 describes the topology of: its network node at each layer of the AWS
network, layer 1 the top (broadest), layer 3 the bottom on most types, layer 4 the bottom on the types whose topology
has four layers (EKS user guide, Place distributed AI/ML workloads with network topology labels)."""
TOPOLOGY_SOURCE = "https://docs.aws.amazon.com/eks/latest/userguide/ml-workload-topology.html"
TOPOLOGY_TYPES_SOURCE = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-instance-topology-prerequisites.html"
TOPOLOGY_LAYERS = MappingProxyType({
    **{t: 3 for t in ("g6e.xlarge", "g6e.2xlarge", "g6e.4xlarge", "g6e.8xlarge", "g6e.12xlarge", "g6e.16xlarge",
                      "g6e.24xlarge", "g6e.48xlarge", "g7e.2xlarge", "g7e.4xlarge", "g7e.8xlarge", "g7e.12xlarge",
                      "g7e.24xlarge", "g7e.48xlarge", "p3dn.24xlarge", "p4d.24xlarge", "p4de.24xlarge",
                      "p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge", "p6e-gb200.36xlarge")},
    **{t: 4 for t in ("p6-b200.48xlarge", "p6-b300.48xlarge")},
})
"""GPU instance type -> the layers of its network topology, for the types EC2 describes it for (Amazon EC2 User
Guide, Prerequisites for Amazon EC2 topology, Instance types: "returns 3 network nodes" / "returns 4 network nodes";
its Trainium and HPC types carry no GPU). Another type's nodes carry no such label. AWS publishes no number of
instances under one network node: a gang's fit in one is not known before it runs. Where AWS's own pages differ (the
AWS Containers blog on P6e-GB200 shows ``-layer-1`` to ``-layer-4`` on its nodes; the EC2 page lists
``p6e-gb200.36xlarge`` with 3), the EC2 page's count is kept: a Topology with fewer levels than a node's labels
still places it, one with a level its nodes lack would leave them out of Kueue's placement."""


NODES = NodeFacts(
    "eks", Taint("nvidia.com/gpu", "true", "NoSchedule"),
    (("nvidia.com/gpu.present", "In", ("true",)),),
    MappingProxyType({"nvidia.com/gpu.present": "true", "eks.amazonaws.com/nodegroup": "gpu",
                      "node.kubernetes.io/instance-type": "g6.xlarge"}),
    "EKS applies no GPU label or taint of its own: gpuready_components.eks_gpu sets both on the managed node group, so "
    "kubelet registers the node with them (EKS user guide, managed node group labels and taints)",
    sharing_fix="use ami_type AL2023_x86_64_NVIDIA, whose device plugin the charts configure",
    capacity_labels=(
        # Karpenter's well-known labels (karpenter.sh/capacity-type: on-demand, spot, reserved; the EC2NodeClass
        # provider's karpenter.k8s.aws/capacity-reservation-type (default or capacity-block) and -id, listed as
        # well-known in the 1.13.0 NodePool CRD), then the label EKS puts on managed node group nodes with the
        # group's capacity type (EKS user guide, managed node groups; values: botocore EKS CapacityTypes).
        CapacityLabel("karpenter.sh/capacity-type", MappingProxyType(
            {"on-demand": "on-demand", "spot": "spot", "reserved": "reserved"})),
        CapacityLabel("karpenter.k8s.aws/capacity-reservation-type", reservation=True,
                      shown=MappingProxyType({"default": "odcr"})),
        CapacityLabel("karpenter.k8s.aws/capacity-reservation-id", reservation=True),
        # EKS Auto Mode's, on nodes of capacity-type reserved (EKS user guide, auto-odcr, "Scheduling labels for
        # Capacity Reservations": eks.amazonaws.com/capacity-reservation-type default or capacity-block, and -id).
        CapacityLabel("eks.amazonaws.com/capacity-reservation-type", reservation=True,
                      shown=MappingProxyType({"default": "odcr"})),
        CapacityLabel("eks.amazonaws.com/capacity-reservation-id", reservation=True),
        CapacityLabel("eks.amazonaws.com/capacityType", MappingProxyType(
            {"ON_DEMAND": "on-demand", "SPOT": "spot", "CAPACITY_BLOCK": "reserved"}))))
"""How this platform's GPU nodes register: their taint, the labels they carry from boot (its descriptor's ``node``)."""

NODE_IMAGES = MappingProxyType({
    "eks/AL2023_x86_64_NVIDIA": NodeImage(
        "eks", DRIVER_TOOLKIT, "EKS-optimized AL2023 NVIDIA AMI: NVIDIA driver and container toolkit, no device plugin"),
    "eks/AL2023_ARM_64_NVIDIA": NodeImage(
        "eks", DRIVER_TOOLKIT, "EKS-optimized AL2023 NVIDIA AMI (arm64): driver and container toolkit"),
    "eks/BOTTLEROCKET_x86_64_NVIDIA": NodeImage(
        "eks", ALL_NODE_SOFTWARE, "Bottlerocket NVIDIA variant: driver, toolkit and NVIDIA's device plugin as a host service"),
    "eks/BOTTLEROCKET_ARM_64_NVIDIA": NodeImage("eks", ALL_NODE_SOFTWARE, "Bottlerocket NVIDIA variant (arm64)"),
    "eks/BOTTLEROCKET_x86_64_NVIDIA_FIPS": NodeImage("eks", ALL_NODE_SOFTWARE, "Bottlerocket NVIDIA variant, FIPS"),
    "eks/BOTTLEROCKET_ARM_64_NVIDIA_FIPS": NodeImage("eks", ALL_NODE_SOFTWARE, "Bottlerocket NVIDIA variant (arm64), FIPS"),
    "eks/auto-mode": NodeImage(
        "eks", ALL_NODE_SOFTWARE | {GPU_LABELS}, "EKS Auto Mode nodes: AWS runs the driver, toolkit and device plugin and labels "
        "GPU nodes (eks.amazonaws.com/instance-gpu-*); a second device plugin breaks GPU allocation"),
})
"""``PLATFORM/IMAGE`` -> what this platform's GPU node images ship before any chart (its descriptor's ``node_images``)."""
AUTO_MODE_NODE_IMAGE = "eks/auto-mode"
"""Key of the platform descriptor's ``node_images`` for Auto Mode nodes: AWS ships all the NVIDIA node software."""


def node_image(ami_type: str) -> str:
    """Key of ``NODE_IMAGES`` for a node group of ``ami_type`` (one it does not name where the type ships no
    NVIDIA software)."""
    return f"eks/{ami_type}"

_AWS_GLOBAL_OPTIONS = ("--region", "--profile", "--output")
"""Options ``aws eks update-kubeconfig`` writes before ``eks get-token``."""


def _get_token(args: Sequence[str]) -> bool:
    rest = list(args)
    while rest and rest[0].split("=", 1)[0] in _AWS_GLOBAL_OPTIONS:
        rest = rest[1:] if "=" in rest[0] else rest[2:]
    return rest[:2] == ["eks", "get-token"]


CREDENTIALS = CredentialPlugin("aws", "aws eks get-token", _get_token, frozenset({
    "AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_STS_REGIONAL_ENDPOINTS"}))
"""The kubeconfig's credential plugin (``aws eks update-kubeconfig --profile`` writes that environment)."""


def placement(instance_types: Sequence[str]) -> Optional[Placement]:
    """How EKS labels the place of a node group's nodes in the AWS network (:data:`NETWORK_LAYERS`): the layers every
    one of its ``instance_types`` has (:data:`TOPOLOGY_LAYERS`), a gang asking for one network node of the lowest;
    ``None`` when one of them has no described topology (its nodes would lack the labels) or none is given."""
    layers = [TOPOLOGY_LAYERS.get(t, 0) for t in instance_types]
    if not layers or not min(layers):
        return None
    levels = NETWORK_LAYERS[:min(layers)]
    return Placement(levels, levels[-1], f"{TOPOLOGY_SOURCE}; {TOPOLOGY_TYPES_SOURCE}")


ULTRASERVERS = MappingProxyType({"p6e-gb200.36xlarge": MappingProxyType({"u-p6e-gb200x36": 9, "u-p6e-gb200x72": 18})})
"""Instance types EC2 sells only inside UltraServers, bought as EC2 Capacity Blocks for ML: type -> UltraServer type
-> its instances (EKS user guide, "Use P6e-GB200 UltraServers with Amazon EKS": u-p6e-gb200x36 holds 9
p6e-gb200.36xlarge, u-p6e-gb200x72 18; botocore's DescribeCapacityBlockOfferings takes ``UltraserverType`` and
``UltraserverCount``). The same page: EKS supports them from Kubernetes 1.33, where DRA is on, with managed or
self-managed node groups (Karpenter and EKS Auto Mode do not support DRA), a custom launch template for the Capacity
Block, and recommends the AL2023 ARM NVIDIA AMI."""
ULTRASERVER_AMI_TYPE = "AL2023_ARM_64_NVIDIA"
ULTRASERVER_LABEL_SOURCE = "https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-topology.html"
"""Where AWS documents a node label for an UltraServer (``topology.k8s.aws/ultraserver-id``, the instances of one
NVLink domain): SageMaker HyperPod's topology-aware scheduling page, for the nodes HyperPod manages. The EKS user
guide's topology labels for node groups (:data:`TOPOLOGY_SOURCE`) are the network layers only, so a Topology for an
EKS node group has no UltraServer level: it places by :data:`NETWORK_LAYERS`, and the NVLink domain is the node
group's Capacity Block itself (one UltraServer; ``nvidia.com/gpu.clique`` from GPU feature discovery names it)."""


def ultraserver_type(instance_types: Sequence[str]) -> Optional[str]:
    """The first of ``instance_types`` EC2 sells only inside UltraServers (:data:`ULTRASERVERS`), ``None`` if none: a
    node group of it is built for gangs across nodes by nature (its nodes share one NVLink domain), with or without
    EFA."""
    return next((t for t in instance_types if t in ULTRASERVERS), None)
