"""K8sGpuSoftware under Pulumi's mock runtime: a privileged namespace, pinned Helm releases, the given provider;
every Kubernetes object we write validates against the Kubernetes OpenAPI schema in strict mode."""

from __future__ import annotations

import kubernetes_validate
import pulumi
import pulumi_kubernetes as k8s
import pytest

from gpuready_components.k8s_gpu import GpuSoftwareOptions, K8sGpuSoftware, K8sGpuSoftwareArgs, facts

from .test_chart_values import RELEASES

NS = "kubernetes:core/v1:Namespace"
QUOTA = "kubernetes:core/v1:ResourceQuota"
RELEASE = "kubernetes:helm.sh/v3:Release"
SERVICE_ACCOUNT = "kubernetes:core/v1:ServiceAccount"
KUBERNETES_VERSIONS = ("1.30.0", "1.33.0", "1.37.0")


def _render(render, image="eks/AL2023_x86_64_NVIDIA", **options):
    def program():
        provider = k8s.Provider("cluster", kubeconfig="{}")
        K8sGpuSoftware("gpu", K8sGpuSoftwareArgs(platform=image.split("/")[0], node_image=image,
                                                 options=GpuSoftwareOptions(**options)),
                       opts=pulumi.ResourceOptions(providers={"kubernetes": provider}))
    return render(program)


def test_releases_are_pinned_official_charts_in_the_privileged_namespace(render):
    rendering = _render(render)
    (namespace,) = rendering.of_type(NS)
    assert namespace.inputs["metadata"]["name"] == "nvidia-gpu"
    assert namespace.inputs["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    releases = {r.inputs["chart"]: r for r in rendering.of_type(RELEASE)}
    assert set(releases) == {"nvidia-device-plugin", "dcgm-exporter"}
    for chart, release in releases.items():
        pinned = facts.CHARTS[chart]
        assert (release.inputs["version"], release.inputs["repositoryOpts"]["repo"]) == (pinned.version, pinned.repo)
        assert release.inputs["name"] == chart and release.inputs["namespace"] == "nvidia-gpu"
        assert release.inputs["atomic"] is True
    assert releases["nvidia-device-plugin"].inputs["values"]["devicePlugin"] == {"enabled": True}
    assert "installs device-plugin" in releases["nvidia-device-plugin"].inputs["description"]


def test_children_are_parented_and_use_the_given_provider(render):
    rendering = _render(render, install="gpu-operator")
    (component,) = rendering.of_type(facts.TYPE_TOKEN)
    children = [r for r in rendering.resources if r.parent == component.urn]
    assert {r.type for r in children} == {NS, RELEASE, SERVICE_ACCOUNT}
    assert sorted(r.name for r in children) == ["gpu-gpu-operator", "gpu-jobs", "gpu-namespace"]
    assert all(r.provider.split("::")[-2:] == ["cluster", "cluster-id"] and "pulumi:providers:kubernetes" in r.provider
               for r in children)


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_the_jobs_service_account_validates_strictly_and_mounts_no_token(render, version):
    (account,) = _render(render).of_type(SERVICE_ACCOUNT)
    manifest = {"apiVersion": "v1", "kind": "ServiceAccount", **account.inputs}
    kubernetes_validate.validate(manifest, version, strict=True)
    assert account.inputs["metadata"] == {"name": "gpu-jobs", "namespace": "default",
                                          "labels": {"app.kubernetes.io/managed-by": "gpuready"}}
    assert account.inputs["automountServiceAccountToken"] is False


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_namespace_validates_strictly(render, version):
    (namespace,) = _render(render).of_type(NS)
    manifest = {"apiVersion": "v1", "kind": "Namespace", **namespace.inputs}
    kubernetes_validate.validate(manifest, version, strict=True)


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("image,release", RELEASES[::7] + RELEASES[-2:])
def test_tolerations_and_affinity_we_write_validate_strictly(image, release, version):
    """Our tolerations and node affinity, placed in a pod as the charts place them, against the Pod schema."""
    values = release.values
    fragments = [(values.get("tolerations"), values.get("affinity")),
                 (values.get("daemonsets", {}).get("tolerations"), None),
                 (((values.get("nfd") or values.get("node-feature-discovery") or {}).get("worker") or {})
                  .get("tolerations"), None)]
    for tolerations, affinity in fragments:
        if tolerations is None and affinity is None:
            continue
        spec = {"containers": [{"name": "probe", "image": "busybox"}]}
        if tolerations is not None:
            spec["tolerations"] = tolerations
        if affinity is not None:
            spec["affinity"] = affinity
        kubernetes_validate.validate({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": spec},
                                     version, strict=True)


def test_strict_validation_catches_a_misspelled_field():
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": {
            "containers": [{"name": "p", "image": "b"}], "tolerations": [{"key": "a", "operater": "Exists"}]}},
            "1.30.0", strict=True)


@pytest.mark.parametrize("image,options", [
    ("gke/driver-installed", {"dcgm_exporter": True}),
    ("gke/driver-disabled", {"install": "gpu-operator"}),
    ("gke/driver-installed-operator", {"install": "gpu-operator"}),
])
def test_gke_namespace_admits_critical_pods_before_any_release(render, image, options):
    """GKE refuses system-node-critical pods outside kube-system unless a quota of their namespace admits them."""
    rendering = _render(render, image, **options)
    (quota,) = rendering.of_type(QUOTA)
    assert quota.name == "gpu-critical-pods"
    assert quota.inputs["metadata"]["namespace"] == "nvidia-gpu"
    assert quota.inputs["spec"]["scopeSelector"] == {"matchExpressions": [{
        "scopeName": "PriorityClass", "operator": "In", "values": ["system-node-critical", "system-cluster-critical"]}]}
    releases = rendering.of_type(RELEASE)
    assert releases and all(quota.urn in r.dependencies for r in releases)
    for version in KUBERNETES_VERSIONS:
        kubernetes_validate.validate({"apiVersion": "v1", "kind": "ResourceQuota", **quota.inputs}, version,
                                     strict=True)


def test_no_quota_where_the_platform_admits_critical_pods_or_nothing_is_installed(render):
    assert _render(render).of_type(QUOTA) == []
    assert _render(render, "aks/driver-installed").of_type(QUOTA) == []
    # GKE provides driver, device plugin and (managed) metrics: no release, no namespace, no quota.
    assert _render(render, "gke/driver-installed", dcgm_exporter=False).of_type(QUOTA) == []


def test_the_gpu_alerts_are_a_prometheus_rule_beside_the_exporter_only_with_the_operator(render):
    assert _render(render).of_type("kubernetes:monitoring.coreos.com/v1:PrometheusRule") == []
    rendering = _render(render, prometheus_operator=True, prometheus_labels={"release": "monitoring"})
    (rule,) = rendering.of_type("kubernetes:monitoring.coreos.com/v1:PrometheusRule")
    assert rule.name == "gpu-gpu-alerts"
    assert rule.inputs["metadata"] == {"name": "gpuready-gpu-health", "namespace": facts.NAMESPACE, "labels": {
        "app.kubernetes.io/managed-by": "gpuready", "release": "monitoring"}}
    assert [r["alert"] for r in rule.inputs["spec"]["groups"][0]["rules"]][:3] == [
        "GpuXidHardwareError", "GpuXidUnrecoverable", "GpuXidApplicationError"]
    (dashboard,) = [c for c in rendering.of_type("kubernetes:core/v1:ConfigMap") if c.name == "gpu-gpu-dashboard"]
    assert dashboard.inputs["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert list(dashboard.inputs["data"]) == ["dcgm-exporter-dashboard.json"]
