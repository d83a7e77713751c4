"""Which chart installs what, on every node image and in both install modes, read from the real charts' values."""

from __future__ import annotations

import itertools

import pytest
import yaml

from gpuready_components.k8s_gpu import GpuSoftwareOptions, K8sGpuSoftwareArgs, MigArgs, facts, plan

from . import charts
from gpuready_components import platforms

NODE_IMAGES = platforms.node_images()

MATRIX = [(image, mode) for image, mode in itertools.product(NODE_IMAGES, facts.INSTALL_MODES)
          if (mode == "gpu-operator" and not NODE_IMAGES[image].operator_image)
          or (mode == "device-plugin" and {facts.DRIVER, facts.TOOLKIT} <= NODE_IMAGES[image].ships)]


DRA_IMAGES = [image for image, ships in ((i, NODE_IMAGES[i].ships) for i in NODE_IMAGES)
              if facts.DRIVER in ships and facts.DEVICE_PLUGIN not in ships]
"""The images ``install: dra`` runs on: the platform installs the driver, and no device plugin runs there."""


def _plan(image: str, **options):
    return plan(K8sGpuSoftwareArgs(platform=image.split("/")[0], node_image=image,
                                   options=GpuSoftwareOptions(**options)))


def test_matrix_covers_every_image_with_at_least_the_operator():
    assert {image for image, _ in MATRIX} == set(NODE_IMAGES)
    # 12 images x 2 modes, less device-plugin mode on the 3 images without a toolkit, less the operator beside
    # GKE's own device plugin (it runs on gke/driver-installed-operator instead).
    assert len(MATRIX) == 20


@pytest.mark.parametrize("image,mode", MATRIX)
def test_driver_toolkit_and_device_plugin_each_come_from_exactly_one_place(image, mode):
    result = _plan(image, install=mode)
    ships = NODE_IMAGES[image].ships
    for software in facts.NODE_SOFTWARE:
        sources = (["node image"] if software in ships else []) + \
            [r.chart.name for r in result.releases if software in charts.installs(r.chart.name, r.values)]
        assert len(sources) == 1, f"{software} on {image} ({mode}) comes from {sources or 'nowhere'}"
        assert result.provider(software) == sources[0]


@pytest.mark.parametrize("image,mode", MATRIX)
def test_each_release_says_what_its_values_install(image, mode):
    for release in _plan(image, install=mode).releases:
        assert set(release.installs) == charts.installs(release.chart.name, release.values), release.chart.name


def test_al2023_device_plugin_mode_installs_plugin_and_dcgm_exporter_charts():
    result = _plan("eks/AL2023_x86_64_NVIDIA")
    assert [(r.chart.name, r.chart.version) for r in result.releases] == [
        ("nvidia-device-plugin", "0.20.0"), ("dcgm-exporter", "4.8.2")]


def test_bottlerocket_gets_no_second_device_plugin_in_either_mode():
    plugin_mode = _plan("eks/BOTTLEROCKET_x86_64_NVIDIA")
    (device_plugin_chart,) = [r for r in plugin_mode.releases if r.chart.name == "nvidia-device-plugin"]
    assert device_plugin_chart.values["devicePlugin"] == {"enabled": False}  # only GPU feature discovery
    assert _plan("eks/BOTTLEROCKET_x86_64_NVIDIA", gpu_feature_discovery=False).releases[0].chart.name == \
        "dcgm-exporter"
    operator = _plan("eks/BOTTLEROCKET_x86_64_NVIDIA", install="gpu-operator").releases[0].values
    assert (operator["driver"], operator["toolkit"], operator["devicePlugin"]) == (
        {"enabled": False}, {"enabled": False}, {"enabled": False})


def test_operator_installs_the_driver_only_where_the_image_has_none():
    assert _plan("eks/AL2023_x86_64_NVIDIA", install="gpu-operator").releases[0].values["driver"] == {"enabled": False}
    assert _plan("aks/driver-none", install="gpu-operator").releases[0].values["driver"] == {"enabled": True}
    assert _plan("gke/driver-disabled", install="gpu-operator").releases[0].values["toolkit"]["enabled"] is True


def test_service_monitor_only_when_the_prometheus_operator_is_there():
    for mode, key in (("device-plugin", lambda rs: rs[-1].values["serviceMonitor"]),
                      ("gpu-operator", lambda rs: rs[0].values["dcgmExporter"]["serviceMonitor"])):
        assert key(_plan("eks/AL2023_x86_64_NVIDIA", install=mode).releases) == {"enabled": False}
        assert key(_plan("eks/AL2023_x86_64_NVIDIA", install=mode, prometheus_operator=True).releases) == \
            {"enabled": True}
        labelled = _plan("eks/AL2023_x86_64_NVIDIA", install=mode, prometheus_operator=True,
                         prometheus_labels={"release": "monitoring"})
        assert key(labelled.releases) == {"enabled": True, "additionalLabels": {"release": "monitoring"}}
        assert labelled.prometheus_rule["metadata"]["labels"]["release"] == "monitoring"
    # Both charts default to creating one, which fails where the CRD is missing: we always say which.
    assert charts.defaults("dcgm-exporter")["serviceMonitor"]["enabled"] is True
    assert charts.defaults("gpu-operator")["dcgmExporter"]["serviceMonitor"]["enabled"] is True


def test_dcgm_exporter_can_be_left_out():
    assert [r.chart.name for r in _plan("eks/AL2023_x86_64_NVIDIA", dcgm_exporter=False).releases] == [
        "nvidia-device-plugin"]
    assert _plan("eks/AL2023_x86_64_NVIDIA", install="gpu-operator", dcgm_exporter=False).releases[0] \
        .values["dcgmExporter"]["enabled"] is False


def _device_plugin_config(release) -> dict:
    if release.chart.name == "gpu-operator":
        config = release.values["devicePlugin"]["config"]
        assert config["create"] is True and config["name"]
        return yaml.safe_load(config["data"][config["default"]])
    config = release.values["config"]
    return yaml.safe_load(config["map"][config["default"]])


@pytest.mark.parametrize("mode", ["device-plugin", "gpu-operator"])  # dra refuses time-slicing
def test_time_slicing_is_rendered_into_the_device_plugin_config_file(mode):
    (release, *_) = _plan("eks/AL2023_x86_64_NVIDIA", install=mode, time_slicing_replicas=4).releases
    assert _device_plugin_config(release) == {
        "version": "v1", "flags": {"migStrategy": "none"},
        "sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}}}


@pytest.mark.parametrize("image", ["eks/AL2023_x86_64_NVIDIA", "aks/driver-none", "gke/driver-disabled",
                                   "gke/driver-installed-operator"])
def test_mig_with_the_operator_takes_the_chosen_config_from_the_node_label(image):
    result = _plan(image, install="gpu-operator", mig=MigArgs(strategy="mixed", config="all-1g.10gb"))
    values = result.releases[0].values
    assert values["mig"] == {"strategy": "mixed"}
    assert values["migManager"]["enabled"] is True
    assert result.node_labels == {"nvidia.com/mig.config": "all-1g.10gb"}
    # The ClusterPolicy keeps the chart's fallback, the only value besides "" that the operator's CRD accepts.
    assert charts.merged("gpu-operator", values)["migManager"]["config"]["default"] == "all-disabled"
    plain = _plan(image, install="gpu-operator")
    assert plain.releases[0].values["migManager"] == {"enabled": False} and plain.node_labels == {}


@pytest.mark.parametrize("mig", [MigArgs(), MigArgs(config="all-1g.10gb"), MigArgs(strategy="mixed")])
def test_the_cluster_policy_mig_default_is_one_the_operators_crd_accepts(mig):
    result = _plan("eks/AL2023_x86_64_NVIDIA", install="gpu-operator", mig=mig)
    schema = charts.cluster_policy_schema()["properties"]["spec"]["properties"]["migManager"]
    default = schema["properties"]["config"]["properties"]["default"]
    values = charts.merged("gpu-operator", result.releases[0].values)
    assert values["migManager"]["config"]["default"] in default["enum"]
    assert result.node_labels["nvidia.com/mig.config"] == mig.config


def test_no_mig_label_where_the_platform_partitions():
    assert _plan("aks/driver-installed", mig=MigArgs(strategy="single", config="all-1g.10gb")).node_labels == {}
    assert _plan("eks/AL2023_x86_64_NVIDIA").node_labels == {}


def test_mig_on_aks_is_partitioned_by_aks_and_advertised_by_the_device_plugin():
    (release, _) = _plan("aks/driver-installed", mig=MigArgs(strategy="single")).releases
    assert release.values["migStrategy"] == "single"
    assert "mig-partitioning" not in release.installs


def test_gke_needs_no_nvidia_chart_but_the_exporter_which_mounts_gkes_driver():
    (release,) = _plan("gke/driver-installed").releases
    assert release.chart.name == "dcgm-exporter"
    values = release.values
    assert values["extraHostVolumes"] == [{"name": "nvidia-driver", "hostPath": "/home/kubernetes/bin/nvidia"}]
    mounts = values["extraVolumeMounts"]
    assert {"name": "nvidia-driver", "mountPath": "/usr/local/nvidia", "readOnly": True} in mounts
    # A list replaces the chart's default: its metrics-file mount must survive.
    assert all(default in mounts for default in charts.defaults("dcgm-exporter")["extraVolumeMounts"])
    assert values["extraEnv"] == [{"name": "LD_LIBRARY_PATH", "value": "/usr/local/nvidia/lib64"}]
    assert _plan("gke/driver-installed", dcgm_exporter=False).releases == ()


def test_gpu_feature_discovery_defaults_to_on_where_nothing_else_labels_gpus():
    assert "gpu-feature-discovery" in _plan("aks/driver-installed").releases[0].installs
    assert "gpu-feature-discovery" in _plan("gke/driver-disabled", install="gpu-operator").releases[0].installs
    assert "gpu-feature-discovery" not in _plan("gke/driver-installed-operator", install="gpu-operator") \
        .releases[0].installs


def test_gke_operator_on_gkes_driver_follows_nvidias_gke_guide():
    result = _plan("gke/driver-installed-operator", install="gpu-operator",
                   mig=MigArgs(strategy="single", config="all-1g.10gb"))
    (release,) = result.releases
    values = release.values
    assert values["driver"] == {"enabled": False}
    assert values["hostPaths"] == {"driverInstallDir": "/home/kubernetes/bin/nvidia"}
    assert values["toolkit"] == {"enabled": True, "installDir": "/home/kubernetes/bin/nvidia",
                                 "env": [{"name": "RUNTIME_CONFIG_SOURCE", "value": "file"}]}
    assert values["devicePlugin"]["enabled"] is True
    assert values["migManager"] == {"enabled": True, "env": [{"name": "WITH_REBOOT", "value": "true"}]}
    assert result.provider(facts.DRIVER) == "node image"
    assert result.provider(facts.TOOLKIT) == result.provider(facts.DEVICE_PLUGIN) == "gpu-operator"


def test_the_operator_beside_gkes_own_device_plugin_is_refused():
    with pytest.raises(ValueError, match="gke/driver-installed-operator"):
        _plan("gke/driver-installed", install="gpu-operator")


def test_gke_operator_installing_the_driver_keeps_its_default_paths_but_fixes_the_toolkit():
    values = _plan("gke/driver-disabled", install="gpu-operator").releases[0].values
    assert "hostPaths" not in values and "installDir" not in values["toolkit"]
    assert values["toolkit"]["env"] == [{"name": "RUNTIME_CONFIG_SOURCE", "value": "file"}]
    assert "env" not in _plan("eks/AL2023_x86_64_NVIDIA", install="gpu-operator").releases[0].values["toolkit"]
    assert "env" not in _plan("aks/driver-none", install="gpu-operator").releases[0].values["toolkit"]


@pytest.mark.parametrize("image,mode", MATRIX)
def test_critical_pods_quota_exactly_where_the_platform_needs_one(image, mode):
    result = _plan(image, install=mode)
    needs = image.startswith("gke/") and bool(result.releases)
    assert (result.resource_quota is not None) == needs
    if needs:
        assert result.resource_quota["metadata"]["namespace"] == "nvidia-gpu"
        (expression,) = result.resource_quota["spec"]["scopeSelector"]["matchExpressions"]
        assert expression["scopeName"] == "PriorityClass" and expression["operator"] == "In"
        # Every priority class the releases' pods ask for, read from the pinned charts' values, is admitted.
        for release in result.releases:
            assert charts.priority_classes(release.chart.name, release.values) <= set(expression["values"])


def test_dra_runs_on_an_image_of_each_kubernetes_platform():
    assert {image.split("/")[0] for image in DRA_IMAGES} == {p.name for p in platforms.every(kubernetes=True)}


@pytest.mark.parametrize("image", DRA_IMAGES)
def test_dra_gives_out_the_gpus_and_no_device_plugin_runs_beside_it(image):
    result = _plan(image, install="dra")
    given = {charts.key(r.chart.name): charts.installs(r.chart.name, r.values) for r in result.releases}
    assert given[facts.DRA_CHART] == {facts.DRA_DRIVER}  # GPUs on, ComputeDomains off by default
    assert all(facts.DEVICE_PLUGIN not in what for what in given.values())
    assert facts.DEVICE_PLUGIN not in NODE_IMAGES[image].ships
    assert result.provider(facts.DRIVER) == "node image"


@pytest.mark.parametrize("image", DRA_IMAGES)
def test_the_dra_driver_reads_the_driver_where_the_image_puts_it(image):
    (dra,) = [r for r in _plan(image, install="dra").releases if charts.key(r.chart.name) == facts.DRA_CHART]
    expected = NODE_IMAGES[image].driver_root or "/"
    assert dra.values["nvidiaDriverRoot"] == expected
    assert (image.startswith("gke/") and expected == "/home/kubernetes/bin/nvidia") or (
        not image.startswith("gke/") and expected == "/")


def test_compute_domains_switch_the_drivers_compute_domain_plugin_on():
    (dra,) = [r for r in _plan("eks/AL2023_ARM_64_NVIDIA", install="dra", compute_domains=True).releases
              if charts.key(r.chart.name) == facts.DRA_CHART]
    assert charts.installs(dra.chart.name, dra.values) == {facts.DRA_DRIVER, "compute-domains"}
    assert set(dra.installs) == {facts.DRA_DRIVER, "compute-domains"}


@pytest.mark.parametrize("image", [i for i in NODE_IMAGES if i not in DRA_IMAGES])
def test_dra_is_refused_where_the_image_lacks_the_driver_or_runs_a_device_plugin(image):
    with pytest.raises(ValueError, match="options.install = 'dra'"):
        _plan(image, install="dra")


@pytest.mark.parametrize("options", [{"compute_domains": True}, {"install": "gpu-operator", "compute_domains": True}])
def test_compute_domains_without_dra_are_refused(options):
    with pytest.raises(ValueError, match="options.compute_domains = True: .*set install 'dra'"):
        _plan("eks/AL2023_x86_64_NVIDIA", **options)


@pytest.mark.parametrize("options", [{"time_slicing_replicas": 4}, {"mig": MigArgs()}])
def test_sharing_options_are_refused_with_dra(options):
    with pytest.raises(ValueError, match="not offered with install 'dra'"):
        _plan("eks/AL2023_x86_64_NVIDIA", install="dra", **options)
