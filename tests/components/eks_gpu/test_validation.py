"""Impossible EKS GPU setups fail at construction with the field, the value and the fix."""

from __future__ import annotations

import pytest

from gpuready_components.eks_gpu import ClusterArgs, ExistingClusterArgs, SystemNodeGroupArgs
from gpuready_components.eks_gpu.validation import check
from gpuready_components.errors import ConfigError
from gpuready_components.k8s_gpu import GpuSoftwareOptions, MigArgs

from .helpers import args


@pytest.mark.parametrize("node_group,overrides,field,words", [
    ({"instance_types": ["g6.xlarge", "m6i.large"]}, {}, "node_group.instance_types", "has no NVIDIA GPU"),
    ({"instance_types": ["g6.xlrge"]}, {}, "node_group.instance_types", "g6.xlarge"),
    ({"instance_types": []}, {}, "node_group.instance_types", "no instance type"),
    ({"instance_types": "g6.xlarge"}, {}, "node_group.instance_types", "must be a list"),
    ({"ami_type": "AL2023_x86_64_STANDARD"}, {}, "node_group.ami_type", "not an NVIDIA AMI type"),
    ({"ami_type": "AL2_x86_64_GPU"}, {}, "node_group.ami_type", "stopped publishing Amazon Linux 2"),
    ({"ami_type": "AL2023_ARM_64_NVIDIA"}, {}, "node_group.instance_types", "not arm64 instances"),
    ({"capacity_type": "CAPACITY_BLOCK"}, {}, "node_group.capacity_type", "ON_DEMAND or SPOT"),
    ({"min_size": 3, "max_size": 2}, {}, "node_group.min_size/desired_size/max_size", "min_size <= desired_size"),
    ({"desired_size": 5}, {}, "node_group.min_size/desired_size/max_size", "desired_size <= max_size"),
    ({"max_size": 0}, {}, "node_group.min_size/desired_size/max_size", "max_size >= 1"),
    ({"root_volume_gib": 20}, {}, "node_group.root_volume_gib", "between 40"),
    ({"labels": {"bad key!": "x"}}, {}, "node_group.labels.bad key!", "not a valid Kubernetes label"),
    ({"labels": {"nvidia.com/gpu.present": "false"}}, {}, "node_group.labels.nvidia.com/gpu.present",
     "selects GPU nodes by this label"),
    ({}, {"software": GpuSoftwareOptions(install="gpu-operator", mig=MigArgs())}, "software.mig", "no MIG: L4"),
    ({"instance_types": ["p4d.24xlarge"]}, {"software": GpuSoftwareOptions(mig=MigArgs())}, "software.mig",
     "gpu-operator"),
    ({}, {"software": GpuSoftwareOptions(time_slicing_replicas=4, mig=MigArgs(), install="gpu-operator")},
     "software.time_slicing_replicas", "together with MIG"),
    ({"ami_type": "BOTTLEROCKET_x86_64_NVIDIA"}, {"software": GpuSoftwareOptions(time_slicing_replicas=4)},
     "software.time_slicing_replicas", "AL2023_x86_64_NVIDIA"),
    ({}, {"cluster": None}, "cluster/existing_cluster", "exactly one"),
    ({}, {"existing_cluster": ExistingClusterArgs(name="prod", kubeconfig="x")}, "cluster/existing_cluster",
     "exactly one"),
    ({}, {"cluster": None, "existing_cluster": ExistingClusterArgs(name="", kubeconfig="x")}, "existing_cluster.name",
     "required"),
    ({}, {"cluster": ClusterArgs(version="1.29")}, "cluster.version", "1.30 or newer"),
    ({}, {"cluster": ClusterArgs(version="latest")}, "cluster.version", "1.30 or newer"),
    ({}, {"cluster": ClusterArgs(public_access_cidrs=["203.0.113.0/33"])}, "cluster.public_access_cidrs",
     "not a CIDR"),
    ({}, {"cluster": ClusterArgs(endpoint_public_access=False, public_access_cidrs=["203.0.113.0/24"])},
     "cluster.public_access_cidrs", "public endpoint that is off"),
    ({}, {"cluster": ClusterArgs(log_types=["audit", "kubelet"])}, "cluster.log_types", "controllerManager"),
    ({}, {"cluster": ClusterArgs(system_nodes=SystemNodeGroupArgs(instance_types=["g6.xlarge"]))},
     "cluster.system_nodes.instance_types", "CPU instance types"),
    ({}, {"cluster": ClusterArgs(system_nodes=SystemNodeGroupArgs(instance_types=["m6i.huge"]))},
     "cluster.system_nodes.instance_types", "CPU instance types"),
    ({}, {"cluster": ClusterArgs(system_nodes=SystemNodeGroupArgs(size=0))}, "cluster.system_nodes.size", "CoreDNS"),
])
def test_impossible_setups_are_refused(node_group, overrides, field, words):
    with pytest.raises(ConfigError) as error:
        check(args(node_group, **overrides))
    assert error.value.field == field
    assert words in str(error.value)


def test_mig_on_h100_with_the_operator_passes():
    cap = check(args({"instance_types": ["p5.48xlarge"]},
                     software=GpuSoftwareOptions(install="gpu-operator", mig=MigArgs(config="all-1g.10gb"))))
    assert cap.gpu_models == ("H100",) and cap.max_gpus == 24


def test_capacity_is_max_nodes_in_each_gpu_group():
    cap = check(args({"instance_types": ["g6.xlarge", "g6.12xlarge"], "max_size": 5}))
    assert (cap.max_gpus_per_node, cap.max_gpus, cap.node_image) == (4, 25, "eks/AL2023_x86_64_NVIDIA")
    assert [(g.suffix, g.instance_types) for g in cap.groups] == [("", ("g6.xlarge",)), ("-4x", ("g6.12xlarge",))]


def _rack(**node_group):
    """A node group of one P6e-GB200 UltraServer (u-p6e-gb200x72) as the eks-nvl72 reference stack has it."""
    from gpuready_components.eks_gpu import CapacityReservationArgs

    block = CapacityReservationArgs(kind="capacity-block", id="cr-0123456789abcdef0",
                                    instance_type="p6e-gb200.36xlarge", count=18)
    return {"instance_types": ["p6e-gb200.36xlarge"], "ami_type": "AL2023_ARM_64_NVIDIA", "capacity_type": "ON_DEMAND",
            "max_size": 18, "reservation": block, **node_group}


DRA = {"software": GpuSoftwareOptions(install="dra", compute_domains=True),
       "cluster": ClusterArgs(version="1.34")}


def test_an_ultraserver_capacity_block_on_the_arm_ami_passes():
    cap = check(args(_rack(), **DRA))
    assert (cap.max_gpus_per_node, cap.max_gpus, cap.gpu_models) == (4, 72, ("GB200",))


@pytest.mark.parametrize("change, overrides, field, words", [
    ({"reservation": None}, {}, "node_group.reservation", "sold only inside UltraServers (u-p6e-gb200x36 (9 "),
    ({"reservation": "odcr"}, {}, "node_group.reservation.kind", "as EC2 Capacity Blocks for ML"),
    ({"reservation": 10}, {}, "node_group.reservation.count", "holds whole UltraServers"),
    ({"ami_type": "BOTTLEROCKET_ARM_64_NVIDIA"}, {"software": GpuSoftwareOptions()}, "node_group.ami_type",
     "AL2023 ARM NVIDIA"),
    ({}, {"autoscaler": "karpenter"}, "autoscaler.mode", "Karpenter and EKS Auto Mode do not support"),
    ({"efa": True}, {}, "node_group.efa", "network cards 1, 3, ... 15"),
])
def test_a_rack_outside_an_ultraserver_block_is_refused(change, overrides, field, words):
    import dataclasses

    from gpuready_components.eks_gpu import AutoscalerArgs

    node_group = _rack()
    if change.get("reservation") == "odcr":
        change = {"reservation": dataclasses.replace(node_group["reservation"], kind="odcr")}
    elif isinstance(change.get("reservation"), int):
        change = {"reservation": dataclasses.replace(node_group["reservation"], count=change["reservation"])}
    if overrides.get("autoscaler"):
        overrides = {"autoscaler": AutoscalerArgs(mode=overrides["autoscaler"])}
    with pytest.raises(ConfigError) as error:
        check(args({**node_group, **change}, **{**DRA, **overrides}))
    assert error.value.field == field and words in str(error.value)
