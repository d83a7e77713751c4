"""Construction-time checks of :class:`AksGpuClusterArgs`: an impossible setup fails at preview.

:func:`check` raises :class:`~gpuready_components.errors.ConfigError` naming the field, the value and the fix, and returns
the catalog facts and the settings the component derives.
"""

from __future__ import annotations

import ipaddress
import re
import dataclasses
from dataclasses import dataclass
from typing import Optional

from .. import catalog
from ..errors import ConfigError
from ..inputs import checked, pattern
from ..k8s_gpu.validation import check_cluster_choice, check_dra_version, check_labels, check_options, mig_profiles
from . import facts, reservation
from .args import AksGpuClusterArgs, ClusterArgs

_LOCATION = re.compile(r"^[a-z]+[a-z0-9]*$")
_VERSION = re.compile(r"^1\.(\d+)(\.\d+)?$")
_GUID = re.compile(r"^[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$")


@dataclass(frozen=True)
class AksCapacity:
    """What the agent pool can offer, from the catalog, and the settings derived from the inputs."""

    vm: catalog.GpuInstanceType
    node_image: str
    gpu_driver: str
    gpu_instance_profile: Optional[str]
    max_gpus: int
    max_usd_per_hour: float

    @property
    def gpu_models(self) -> tuple[str, ...]:
        return (self.vm.gpu_model,)

    @property
    def max_gpus_per_node(self) -> int:
        return self.vm.gpus


def _instance_profile(args: AksGpuClusterArgs, vm: catalog.GpuInstanceType) -> Optional[str]:
    mig = args.software.mig
    if mig is None or args.software.install == "gpu-operator":
        return None
    profiles = mig_profiles(vm.gpu_model, vm.gpu_memory_gib) or ()
    size = mig.config.removeprefix("all-")
    if size not in profiles:
        raise ConfigError("software.mig.config", mig.config, f"AKS cuts every GPU of a pool into one profile of the "
                          f"{vm.gpu_model} {catalog.gib_text(vm.gpu_memory_gib)}", f"use one of "
                          f"{', '.join('all-' + p for p in profiles if p.split('.')[0] in facts.MIG_PROFILES)}")
    return facts.MIG_PROFILES[size.split(".")[0]]


def _check_admins(cluster: ClusterArgs) -> None:
    if cluster.deployer_principal_type not in facts.DEPLOYER_PRINCIPAL_TYPES:
        raise ConfigError("cluster.deployer_principal_type", cluster.deployer_principal_type,
                          "not what runs pulumi up", "use User (az login) or ServicePrincipal (CI)")
    bad = [g for g in cluster.admin_group_object_ids if not _GUID.match(g)]
    if bad:
        raise ConfigError("cluster.admin_group_object_ids", bad, "not Entra ID object IDs",
                          "use the groups' object IDs: az ad group show -g NAME --query id -o tsv")
    if not cluster.deployer_admin and not cluster.admin_group_object_ids:
        raise ConfigError("cluster.deployer_admin", False, "with Azure RBAC on and local accounts off, no one could "
                          "install the GPU software", "keep deployer_admin, or name admin_group_object_ids (a group "
                          "that whoever runs pulumi up is in)")


CLUSTER_NAME = pattern(facts.CLUSTER_NAME, "an AKS cluster name (1 to 63 letters, digits, '-' and '_', from and "
                       "to a letter or digit)", "give the cluster's name as `az aks list` shows it, not its id")
RESOURCE_GROUP_NAME = pattern(facts.RESOURCE_GROUP_NAME, "a resource group name (1 to 90 letters, digits, '_', '-', "
                              "'.', '(' and ')', not ending in '.')", "give the group's name, not its id")


def _subnet_id(field: str, value: object) -> None:
    if not isinstance(value, str) or not re.fullmatch(facts.SUBNET_ID, value, re.IGNORECASE):
        raise ConfigError(field, value, "not a subnet's resource id", "give the subnet's id, /subscriptions/SUB/"
                          "resourceGroups/RG/providers/Microsoft.Network/virtualNetworks/VNET/subnets/NAME (an "
                          "azure-native network.Subnet's id), not its name")


def checked_inputs(args: AksGpuClusterArgs) -> AksGpuClusterArgs:
    """``args`` with the inputs other resources' outputs feed checked (:mod:`~gpuready_components.inputs`): the
    resource group's name, the nodes' subnet id, an existing cluster's name; each checked now when its value is known
    and when it resolves otherwise. The component builds from the returned args only."""
    cluster, existing = args.cluster, args.existing_cluster
    if cluster is not None:
        cluster = dataclasses.replace(cluster, vnet_subnet_id=checked(cluster.vnet_subnet_id,
                                                                      "cluster.vnet_subnet_id", _subnet_id))
    if existing is not None:
        existing = dataclasses.replace(existing, name=checked(existing.name, "existing_cluster.name", CLUSTER_NAME))
    return dataclasses.replace(args, cluster=cluster, existing_cluster=existing, resource_group_name=checked(
        args.resource_group_name, "resource_group_name", RESOURCE_GROUP_NAME))


def check(args: AksGpuClusterArgs) -> AksCapacity:
    """Raise :class:`ConfigError` for the first input that cannot work; return the capacity and derived settings."""
    if not _LOCATION.match(args.location):
        raise ConfigError("location", args.location, "not an Azure region name", "use a region such as eastus")
    check_cluster_choice(args.cluster, args.existing_cluster)
    if args.cluster is not None:
        cluster = args.cluster
        version = cluster.kubernetes_version
        if version is not None and (not _VERSION.match(version) or int(_VERSION.match(version).group(1)) < 30):
            raise ConfigError("cluster.kubernetes_version", version, "not a Kubernetes version 1.30 or newer",
                              "use a version AKS supports, such as 1.33, or leave it unset")
        for cidr in cluster.authorized_ip_ranges:
            try:
                ipaddress.ip_network(cidr)
            except ValueError:
                raise ConfigError("cluster.authorized_ip_ranges", cidr, "not a CIDR block",
                                  "use a range like 203.0.113.0/24") from None
        if cluster.system_nodes < 1:
            raise ConfigError("cluster.system_nodes", cluster.system_nodes, "AKS needs a system pool",
                              "use 2 (CoreDNS survives the loss of one)")
        _check_admins(cluster)
    pool = args.node_pool
    vm = catalog.find("azure", pool.vm_size)
    vendor = catalog.not_nvidia("azure", pool.vm_size) if vm is None else None
    if vendor:
        raise ConfigError("node_pool.vm_size", pool.vm_size, f"its GPUs are {vendor}'s, not NVIDIA's: the NVIDIA "
                          "driver, device plugin and GPU Operator do not run them",
                          "use an NVIDIA GPU size, e.g. Standard_ND96isr_H100_v5 or Standard_NC24ads_A100_v4")
    if vm is None:
        close = catalog.suggest("azure", pool.vm_size)
        raise ConfigError("node_pool.vm_size", pool.vm_size, "not a GPU VM size in the catalog",
                          f"use one of {', '.join(close)}" if close else "use an NC, ND or NV GPU size")
    if pool.min_count < 0 or pool.max_count < 1 or pool.min_count > pool.max_count:
        raise ConfigError("node_pool.min_count/max_count", (pool.min_count, pool.max_count),
                          "need 0 <= min_count <= max_count and max_count >= 1",
                          "set min_count 0 (no idle GPUs billed) and max_count to the most nodes to run at once")
    low, high = facts.OS_DISK_GB_RANGE
    if not low <= pool.os_disk_size_gb <= high:
        raise ConfigError("node_pool.os_disk_size_gb", pool.os_disk_size_gb, f"must be between {low} and {high} GB",
                          "use 100 GB or more for deep-learning images")
    bad_zones = [z for z in pool.availability_zones if z not in facts.ZONES]
    if bad_zones:
        raise ConfigError("node_pool.availability_zones", bad_zones, "not Azure availability zones",
                          "use 1, 2 and/or 3")
    check_labels("node_pool.labels", pool.labels, {})
    if pool.reservation is not None:
        reservation.check(pool.reservation, vm_size=pool.vm_size, spot=pool.spot, zones=pool.availability_zones)
    driver = facts.GPU_DRIVER_NONE if args.software.install == "gpu-operator" else facts.GPU_DRIVER_INSTALL
    node_image = facts.node_image(driver)
    check_options("software", args.software, facts.NODE_IMAGES[node_image], node_image,
                  ((vm.gpu_model, vm.gpu_memory_gib),))
    if args.cluster is not None:
        check_dra_version("cluster.kubernetes_version", args.cluster.kubernetes_version, args.software,
                          "AKS gives a new cluster its default version, which preview cannot know")
    else:
        check_dra_version("existing_cluster.kubernetes_version", args.existing_cluster.kubernetes_version,
                          args.software)
    return AksCapacity(vm=vm, node_image=node_image, gpu_driver=driver,
                       gpu_instance_profile=_instance_profile(args, vm),
                       max_gpus=pool.max_count * vm.gpus,
                       max_usd_per_hour=round(pool.max_count * (vm.price_usd_hour or 0.0), 2))
