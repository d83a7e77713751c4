"""Impossible AKS GPU setups fail at construction with the field, the value and the fix."""

from __future__ import annotations

import pytest

from gpuready_components.aks_gpu import ClusterArgs
from gpuready_components.aks_gpu.validation import check
from gpuready_components.errors import ConfigError
from gpuready_components.k8s_gpu import GpuSoftwareOptions, MigArgs

from .helpers import args


@pytest.mark.parametrize("pool,overrides,field,words", [
    ({"vm_size": "Standard_D4s_v5"}, {}, "node_pool.vm_size", "not a GPU VM size"),
    ({"vm_size": "Standard_NC4as_T4"}, {}, "node_pool.vm_size", "Standard_NC4as_T4_v3"),
    ({"vm_size": "Standard_NC4as_T4_v3"}, {"software": GpuSoftwareOptions(mig=MigArgs())}, "software.mig",
     "no MIG: T4"),
    ({}, {"software": GpuSoftwareOptions(mig=MigArgs(config="all-1g.5gb"))}, "software.mig.config", "all-1g.10gb"),
    ({}, {"software": GpuSoftwareOptions(mig=MigArgs(), time_slicing_replicas=2)}, "software.time_slicing_replicas",
     "together with MIG"),
    ({"min_count": 2, "max_count": 1}, {}, "node_pool.min_count/max_count", "min_count <= max_count"),
    ({"os_disk_size_gb": 30}, {}, "node_pool.os_disk_size_gb", "between 40"),
    ({"availability_zones": ["4"]}, {}, "node_pool.availability_zones", "1, 2 and/or 3"),
    ({"labels": {"bad label": "x"}}, {}, "node_pool.labels.bad label", "not a valid Kubernetes label"),
    ({}, {"location": "East US"}, "location", "not an Azure region"),
    ({}, {"cluster": None}, "cluster/existing_cluster", "exactly one"),
    ({}, {"cluster": ClusterArgs(kubernetes_version="1.28")}, "cluster.kubernetes_version", "1.30 or newer"),
    ({}, {"cluster": ClusterArgs(authorized_ip_ranges=["1.2.3.4/40"])}, "cluster.authorized_ip_ranges",
     "not a CIDR"),
    ({}, {"cluster": ClusterArgs(system_nodes=0)}, "cluster.system_nodes", "system pool"),
    ({}, {"cluster": ClusterArgs(deployer_admin=False)}, "cluster.deployer_admin", "no one could install"),
    ({}, {"cluster": ClusterArgs(deployer_principal_type="Application")}, "cluster.deployer_principal_type",
     "ServicePrincipal"),
    ({}, {"cluster": ClusterArgs(admin_group_object_ids=["ml-admins"])}, "cluster.admin_group_object_ids",
     "az ad group show"),
])
def test_impossible_setups_are_refused(pool, overrides, field, words):
    with pytest.raises(ConfigError) as error:
        check(args(pool, **overrides))
    assert error.value.field == field
    assert words in str(error.value)


def test_operator_mig_is_left_to_its_mig_manager():
    cap = check(args(software=GpuSoftwareOptions(install="gpu-operator", mig=MigArgs(config="all-1g.10gb"))))
    assert cap.gpu_instance_profile is None and cap.gpu_driver == "None"
