"""Impossible GKE GPU setups fail at construction with the field, the value and the fix."""

from __future__ import annotations

import pytest

from gpuready_components.errors import ConfigError
from gpuready_components.gke_gpu import ClusterArgs, ExistingClusterArgs, GpuSharingArgs
from gpuready_components.gke_gpu.validation import check
from gpuready_components.k8s_gpu import GpuSoftwareOptions, MigArgs

from .helpers import args


@pytest.mark.parametrize("pool,overrides,field,words", [
    ({"machine_type": "g2-standard-8", "accelerator": "nvidia-tesla-a100"}, {}, "node_pool.accelerator",
     "comes with nvidia-l4"),
    ({"machine_type": "a3-highgpu-8g", "accelerator": "nvidia-l4"}, {}, "node_pool.accelerator",
     "comes with nvidia-h100-80gb"),
    ({"machine_type": "n1-standard-8"}, {}, "node_pool.accelerator", "N1 machines take only"),
    ({"machine_type": "n1-standard-8", "accelerator": "nvidia-l4", "accelerator_count": 1}, {},
     "node_pool.accelerator", "use G2 for L4"),
    ({"machine_type": "n1-standard-8", "accelerator": "nvidia-tesla-t4", "accelerator_count": 3}, {},
     "node_pool.accelerator_count", "n1-standard-8:nvidia-tesla-t4:1"),
    ({"machine_type": "g2-standard-8", "accelerator_count": 2}, {}, "node_pool.accelerator_count", "fixed number"),
    ({"machine_type": "e2-standard-8"}, {}, "node_pool.machine_type", "not a GPU machine family"),
    ({"machine_type": "g2-standard-7"}, {}, "node_pool.machine_type", "unknown GPU machine type"),
    ({"gpu_driver_version": "SPECIFIC"}, {}, "node_pool.gpu_driver_version", "not a GKE driver"),
    ({"gpu_driver_version": "INSTALLATION_DISABLED"}, {}, "software.install", "ships no driver"),
    ({"gpu_sharing": GpuSharingArgs(strategy="SLICING")}, {}, "node_pool.gpu_sharing.strategy", "TIME_SHARING"),
    ({"gpu_sharing": GpuSharingArgs(max_clients_per_gpu=64)}, {}, "node_pool.gpu_sharing.max_clients_per_gpu",
     "2 to 48"),
    ({"gpu_sharing": GpuSharingArgs()}, {"software": GpuSoftwareOptions(install="gpu-operator")},
     "node_pool.gpu_sharing", "time_slicing_replicas"),
    ({"machine_type": "a2-highgpu-1g", "gpu_sharing": GpuSharingArgs()},
     {"software": GpuSoftwareOptions(mig=MigArgs(config="all-1g.5gb"))}, "node_pool.gpu_sharing", "MIG"),
    ({}, {"software": GpuSoftwareOptions(time_slicing_replicas=4)}, "software.time_slicing_replicas",
     "GPU sharing on the node pool"),
    ({}, {"software": GpuSoftwareOptions(mig=MigArgs())}, "software.mig", "no MIG: L4"),
    ({"machine_type": "a2-highgpu-1g"}, {"software": GpuSoftwareOptions(mig=MigArgs(config="all-1g.10gb"))},
     "software.mig.config", "all-1g.5gb"),
    ({"machine_type": "a2-highgpu-1g"}, {"software": GpuSoftwareOptions(mig=MigArgs(strategy="mixed",
                                                                                    config="all-1g.5gb"))},
     "software.mig.strategy", "single"),
    ({}, {"software": GpuSoftwareOptions(dcgm_exporter=True)}, "software.dcgm_exporter", "twice"),
    ({}, {"software": GpuSoftwareOptions(gpu_feature_discovery=True)}, "software.gpu_feature_discovery",
     "labels GPU nodes itself"),
    ({"min_nodes": 3, "max_nodes": 1}, {}, "node_pool.min_nodes/max_nodes", "min_nodes <= max_nodes"),
    ({"disk_size_gb": 20}, {}, "node_pool.disk_size_gb", "between 40"),
    ({"node_locations": ["us-central1"]}, {}, "node_pool.node_locations", "not a zone"),
    ({"node_locations": ["us-east1-b"]}, {}, "node_pool.node_locations", "us-east1-b not in us-central1"),
    ({"node_locations": ["us-central1-b"]}, {"location": "us-east1-c"}, "node_pool.node_locations",
     "us-central1-b not in us-east1"),
    ({"labels": {"gke-no-default-nvidia-gpu-device-plugin": "true"}}, {},
     "node_pool.labels.gke-no-default-nvidia-gpu-device-plugin", "install mode"),
    ({}, {"location": "US Central"}, "location", "not a region or zone"),
    ({}, {"cluster": None}, "cluster/existing_cluster", "exactly one"),
    ({}, {"existing_cluster": ExistingClusterArgs(name="x", kubeconfig="y")}, "cluster/existing_cluster",
     "exactly one"),
    ({}, {"cluster": ClusterArgs(release_channel="NIGHTLY")}, "cluster.release_channel", "RAPID"),
    ({}, {"cluster": ClusterArgs(master_authorized_networks=["10.0.0.0/33"])}, "cluster.master_authorized_networks",
     "not a CIDR"),
    ({}, {"cluster": ClusterArgs(subnetwork="gpu-nodes")}, "cluster.network", "without its network"),
    ({}, {"cluster": ClusterArgs(network="shared-vpc", cloud_nat=True)}, "cluster.subnetwork", "Cloud NAT"),
])
def test_impossible_setups_are_refused(pool, overrides, field, words):
    with pytest.raises(ConfigError) as error:
        check(args(pool, **overrides), "ml-project")
    assert error.value.field == field
    assert words in str(error.value)


def test_project_is_required():
    with pytest.raises(ConfigError, match="gcp:project"):
        check(args(), None)


def test_existing_cluster_keeps_the_exporter_on_by_default():
    cap = check(args(cluster=None, existing_cluster=ExistingClusterArgs(name="x", kubeconfig="y")), "p")
    assert cap.software.dcgm_exporter is True
    assert check(args(), "p").software.dcgm_exporter is False


def test_every_catalog_gcp_row_pairs_machine_family_and_accelerator():
    from gpuready_components import catalog
    from gpuready_components.gke_gpu import facts

    for row in (r for r in catalog.rows() if r.cloud == "gcp"):
        family = row.machine_type.split("-")[0]
        assert row.accelerator in facts.FAMILY_ACCELERATORS[family], row.name
        assert (":" in row.name) == (family in facts.ATTACHED_GPU_FAMILIES), row.name


@pytest.mark.parametrize("version", ["DEFAULT", "LATEST"])
def test_the_operator_runs_on_gkes_own_driver(version):
    cap = check(args({"gpu_driver_version": version}, software=GpuSoftwareOptions(install="gpu-operator")),
                "ml-project")
    assert (cap.node_image, cap.driver_version) == ("gke/driver-installed-operator", version)
