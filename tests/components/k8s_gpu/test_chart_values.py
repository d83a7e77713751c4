"""Every values key we set exists in the pinned chart version, and every NVIDIA daemonset lands on each platform's
GPU nodes: it tolerates the platform's GPU taint and selects the labels those nodes carry from boot."""

from __future__ import annotations

import itertools

import pytest
import yaml

from gpuready_components.k8s_gpu import GpuSoftwareOptions, K8sGpuSoftwareArgs, MigArgs, facts, plan
from gpuready_components.k8s_gpu.scheduling import schedulable

from . import charts
from .test_install import DRA_IMAGES, MATRIX
from gpuready_components import platforms

PLATFORMS = {p.name: p.node for p in platforms.every(kubernetes=True)}

OPTION_SETS = [
    {},
    {"time_slicing_replicas": 4},
    {"prometheus_operator": True},
    {"gpu_feature_discovery": False, "dcgm_exporter": False},
]


def _releases():
    for (image, mode), options in itertools.product(MATRIX, OPTION_SETS):
        try:
            result = plan(K8sGpuSoftwareArgs(platform=image.split("/")[0], node_image=image,
                                             options=GpuSoftwareOptions(install=mode, **options)))
        except ValueError:
            continue  # e.g. time-slicing on an image whose own device plugin the charts do not configure
        for release in result.releases:
            yield pytest.param(image, release, id=f"{image}-{mode}-{release.key}-{'+'.join(options) or 'default'}")
    mig = plan(K8sGpuSoftwareArgs(platform="eks", node_image="eks/AL2023_x86_64_NVIDIA", options=GpuSoftwareOptions(
        install="gpu-operator", mig=MigArgs(strategy="mixed", config="all-1g.10gb"))))
    yield pytest.param("eks/AL2023_x86_64_NVIDIA", mig.releases[0], id="eks-operator-mig")
    gke_mig = plan(K8sGpuSoftwareArgs(platform="gke", node_image="gke/driver-installed-operator",
                                      options=GpuSoftwareOptions(install="gpu-operator", mig=MigArgs())))
    yield pytest.param("gke/driver-installed-operator", gke_mig.releases[0], id="gke-operator-gke-driver-mig")
    for image, options in itertools.product(DRA_IMAGES, ({}, {"compute_domains": True})):
        dra = plan(K8sGpuSoftwareArgs(platform=image.split("/")[0], node_image=image,
                                      options=GpuSoftwareOptions(install="dra", **options)))
        for release in dra.releases:
            yield pytest.param(image, release, id=f"{image}-dra-{release.key}-{'+'.join(options) or 'default'}")
    aks_mig = plan(K8sGpuSoftwareArgs(platform="aks", node_image="aks/driver-installed",
                                      options=GpuSoftwareOptions(mig=MigArgs(strategy="single"))))
    yield pytest.param("aks/driver-installed", aks_mig.releases[0], id="aks-device-plugin-mig")


RELEASES = list(_releases())


def test_reference_files_are_the_pinned_versions():
    for name, chart in facts.CHARTS.items():
        assert charts.defaults(name), name
        chart_yaml = yaml.safe_load((charts.chart_dir(name) / "Chart.yaml").read_text())
        assert (chart_yaml["name"], str(chart_yaml["version"])) == (name, chart.version)
    lock = yaml.safe_load((charts.chart_dir("gpu-operator") / "Chart.lock").read_text())
    assert [(d["name"], d["version"]) for d in lock["dependencies"]] == [
        ("node-feature-discovery", facts.NFD_CHART_VERSION)]
    nfd = yaml.safe_load((charts.chart_dir("node-feature-discovery") / "Chart.yaml").read_text())
    assert nfd["version"] == facts.NFD_CHART_VERSION


@pytest.mark.parametrize("image,release", RELEASES)
def test_every_values_key_exists_in_the_pinned_chart(image, release):
    assert list(charts.unknown_keys(release.chart.name, release.values)) == []


def test_a_misspelled_key_is_caught():
    bad = {"devicePlugin": {"enabeld": False}, "nfd": {"worker": {"tolerationz": []}}, "gfd": {"enabled": "true"}}
    assert list(charts.unknown_keys("nvidia-device-plugin", bad)) == [
        "devicePlugin.enabeld", "nfd.worker.tolerationz", "gfd.enabled (the chart expects true/false, got 'true')"]


def _daemonset_pod_specs(chart: str, values: dict) -> dict[str, dict]:
    """The scheduling fields of each daemonset the release creates on GPU nodes, as its templates fill them in."""
    chart = charts.key(chart)
    v = charts.merged(chart, values)
    if chart == "nvidia-device-plugin":
        pod = {"tolerations": v["tolerations"], "affinity": v["affinity"], "nodeSelector": v["nodeSelector"]}
        specs = {"device-plugin": pod} if v["devicePlugin"]["enabled"] else {}
        if v["gfd"]["enabled"]:
            specs["gpu-feature-discovery"] = pod
            specs["nfd-worker"] = {"tolerations": v["nfd"]["worker"]["tolerations"]}
        return specs
    if chart == facts.DRA_CHART:  # templates/kubeletplugin.yaml: one daemonset, both plugins as its containers
        plugin = v["kubeletPlugin"]
        return {"kubelet-plugin": {"tolerations": plugin["tolerations"], "affinity": plugin["affinity"],
                                   "nodeSelector": plugin["nodeSelector"]}}
    if chart == "dcgm-exporter":
        return {"dcgm-exporter": {"tolerations": v["tolerations"], "affinity": v["affinity"],
                                  "nodeSelector": v["nodeSelector"]}}
    # The operator puts its operands on nodes labelled nvidia.com/gpu.present=true (from NFD's PCI labels), all
    # with daemonsets.tolerations; NFD's worker runs everywhere with its own tolerations.
    nfd = v["node-feature-discovery"]["worker"]
    return {"operands": {"tolerations": v["daemonsets"]["tolerations"],
                         "nodeSelector": {"nvidia.com/gpu.present": "true"}},
            "nfd-worker": {"tolerations": nfd["tolerations"], "nodeSelector": nfd.get("nodeSelector") or {}}}


@pytest.mark.parametrize("image,release", RELEASES)
def test_every_daemonset_tolerates_the_gpu_taint_and_selects_gpu_nodes(image, release):
    platform = PLATFORMS[image.split("/")[0]]
    gpu_node = dict(platform.boot_labels)
    if release.chart.name == "gpu-operator":
        gpu_node["nvidia.com/gpu.present"] = "true"  # what NFD's labels make the operator set
    cpu_node = {"kubernetes.io/os": "linux"}
    for name, spec in _daemonset_pod_specs(release.chart.name, release.values).items():
        assert schedulable(spec, gpu_node, [platform.taint]), f"{name} never runs on {platform.name} GPU nodes"
        if name != "nfd-worker":
            assert not schedulable(spec, cpu_node, []), f"{name} would run on CPU nodes"


@pytest.mark.parametrize("platform", PLATFORMS.values(), ids=lambda p: p.name)
def test_the_charts_own_defaults_would_miss_some_platform(platform):
    """Why the values above are needed: left alone, the charts fail on at least one platform."""
    device_plugin = charts.defaults("nvidia-device-plugin")
    nfd_worker = {"tolerations": device_plugin["nfd"]["worker"]["tolerations"]}
    dcgm = charts.defaults("dcgm-exporter")
    misses = [
        not schedulable(nfd_worker, dict(platform.boot_labels), [platform.taint]),
        not schedulable({"tolerations": dcgm["tolerations"]}, dict(platform.boot_labels), [platform.taint]),
        not schedulable({"tolerations": device_plugin["tolerations"], "affinity": device_plugin["affinity"]},
                        {k: v for k, v in platform.boot_labels.items() if k != "nvidia.com/gpu.present"},
                        [platform.taint]),
    ]
    assert any(misses)


@pytest.mark.parametrize("chart", sorted(facts.CHART_DAEMONSETS))
def test_daemonset_facts_match_the_pinned_charts(chart):
    defaults = charts.defaults(chart)
    for daemonset in facts.CHART_DAEMONSETS[chart]:
        assert list(daemonset.default_tolerations) == charts._default(
            defaults, daemonset.tolerations_key.split(".")), daemonset.name
        if daemonset.enabled_key:
            assert charts._default(defaults, daemonset.enabled_key.split(".")) is daemonset.enabled_default


@pytest.mark.parametrize("image,release", [p for p in RELEASES if p.values[1].chart.name == "gpu-operator"])
def test_the_cluster_policy_mig_default_is_in_the_crds_enum(image, release):
    """The chart copies migManager.config.default into the ClusterPolicy, whose CRD admits only a few values."""
    schema = charts.cluster_policy_schema()["properties"]["spec"]["properties"]["migManager"]
    allowed = schema["properties"]["config"]["properties"]["default"]["enum"]
    assert charts.merged("gpu-operator", release.values)["migManager"]["config"]["default"] in allowed
