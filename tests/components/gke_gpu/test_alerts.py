"""The GPU alerts on GKE's managed collection (``components/gke_gpu/alerts.py``): the PodMonitoring and ClusterRules
against Google's own CRDs (prometheus-engine), the PodMonitoring against the exporter pods the charts really run, the
rules through promtool with the scrape job managed collection gives, and the component's wiring."""

from __future__ import annotations

import subprocess

import jsonschema
import pytest
import yaml

from gpuready_components.errors import ConfigError
from gpuready_components.gke_gpu import ClusterArgs, alerts
from gpuready_components.k8s_gpu import gpu_hours, health
from gpuready_components.teams import TeamArgs
from tests import helm
from tests.components.k8s_gpu.kueue_schemas import _strict
from tests.components.k8s_gpu.test_gpu_hours import _expect, _run
from tests.components.k8s_gpu.test_health import (  # noqa: F401 (promtool: a fixture)
    NODE, SCRAPE, _alert, _promtool_test, _rendered, _series, promtool)
from tests.conftest import ROOT

from .helpers import CLUSTER, build

CRDS = ROOT / "tests" / "data" / "gmp-crds"
CUSTOM = "kubernetes:monitoring.googleapis.com/v1:"
OPERATOR_EXPORTER = ROOT / "tests" / "data" / "helm-charts" / "gpu-operator-v26.7.0-operand-assets" / \
    "state-dcgm-exporter.yaml"


def _validator(kind: str) -> jsonschema.Draft202012Validator:
    crd = yaml.safe_load((CRDS / f"monitoring.googleapis.com_{kind.lower()}{'s' * (kind == 'PodMonitoring')}.yaml")
                         .read_text())
    assert crd["spec"]["names"]["kind"] == kind
    return jsonschema.Draft202012Validator(_strict(helm.crd_schema(crd)))


def test_the_pod_monitoring_and_cluster_rules_are_what_googles_crds_accept():
    for exporter in health.EXPORTER_PODS:
        _validator("PodMonitoring").validate(alerts.pod_monitoring("nvidia-gpu", exporter))
    rules = alerts.cluster_rules()
    _validator("ClusterRules").validate(rules)
    assert "namespace" not in rules["metadata"]  # cluster-scoped


def test_a_bad_field_is_refused_by_the_crd_so_the_check_can_fail():
    monitoring = alerts.pod_monitoring("nvidia-gpu", "dcgm-exporter")
    monitoring["spec"]["endpoints"][0]["portName"] = "metrics"
    with pytest.raises(jsonschema.ValidationError):
        _validator("PodMonitoring").validate(monitoring)


@pytest.mark.parametrize("exporter", sorted(health.EXPORTER_PODS))
def test_the_pod_monitoring_selects_the_exporter_pods_the_chart_runs_and_their_port(exporter):
    if exporter == "dcgm-exporter":
        (daemonset,) = [o for o in _rendered("device-plugin") if o["kind"] == "DaemonSet"]
    else:  # the GPU Operator's own asset for the exporter it deploys
        daemonset = yaml.safe_load(OPERATOR_EXPORTER.read_text())
    pod = daemonset["spec"]["template"]
    spec = alerts.pod_monitoring("nvidia-gpu", exporter)["spec"]
    assert spec["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    ports = [p["name"] for c in pod["spec"]["containers"] for p in c.get("ports", [])]
    assert [e["port"] for e in spec["endpoints"]] == [health.EXPORTER_PORT] and health.EXPORTER_PORT in ports


def test_the_rules_are_the_gpu_alerts_on_the_pod_monitorings_job_less_the_node_capacity_one(promtool, tmp_path):
    (group,) = alerts.cluster_rules()["spec"]["groups"]
    names = [r["alert"] for r in group["rules"]]
    assert names == [s.alert for s in health.SIGNALS if s.alerts and s.when != health.NODE_CAPACITY]
    gpu = {**NODE, **SCRAPE, "job": alerts.POD_MONITORING}
    down = {"job": alerts.POD_MONITORING, "instance": "10.0.1.5:9400"}
    done = _promtool_test(promtool, tmp_path, group["rules"], [
        {"interval": "1m", "input_series": [
            {"series": 'up{job="gpuready-dcgm-exporter",instance="10.0.1.5:9400"}', "values": "1 1 0x10"}],
         "alert_rule_test": [{"eval_time": "8m", "alertname": "DcgmExporterDown", "exp_alerts": [
             _alert("DcgmExporterDown", 0, down)]}]},
        {"interval": "1m", "input_series": [_series("DCGM_FI_DEV_XID_ERRORS", "0 0 79x10", job=alerts.POD_MONITORING)],
         "alert_rule_test": [{"eval_time": "5m", "alertname": "GpuXidUnrecoverable", "exp_alerts": [
             _alert("GpuXidUnrecoverable", 79, gpu)]}]},
    ])
    assert done.returncode == 0, done.stdout + done.stderr


def test_managed_alerts_create_both_after_the_software_with_managed_collection_on(render):
    rendering, gke = build(render, cluster=ClusterArgs(managed_dcgm=False), managed_alerts=True)
    (monitoring,) = rendering.of_type(CUSTOM + "PodMonitoring")
    (rules,) = rendering.of_type(CUSTOM + "ClusterRules")
    assert monitoring.name == "ml-gpu-scrape" and rules.name == "ml-gpu-alerts"
    assert monitoring.inputs["metadata"]["namespace"] == "nvidia-gpu"
    assert monitoring.inputs["spec"] == alerts.pod_monitoring("nvidia-gpu", "dcgm-exporter")["spec"]
    assert rules.inputs["spec"] == alerts.cluster_rules()["spec"]
    (cluster,) = rendering.of_type(CLUSTER)
    assert cluster.inputs["monitoringConfig"] == {"enableComponents": ["SYSTEM_COMPONENTS"],
                                                  "managedPrometheus": {"enabled": True}}
    off, _ = build(render, cluster=ClusterArgs(managed_dcgm=False))
    assert off.of_type(CUSTOM + "PodMonitoring") == [] and off.of_type(CUSTOM + "ClusterRules") == []


def test_managed_alerts_on_gkes_managed_dcgm_are_refused_at_preview(render):
    with pytest.raises(ConfigError, match=r"managed_alerts.*GKE's managed DCGM package runs its own.*"
                                          r"set cluster.managed_dcgm false"):
        build(render, managed_alerts=True)


def test_with_teams_managed_alerts_also_record_their_gpu_hours(render, promtool, tmp_path):
    teams = (TeamArgs("research", 2), TeamArgs("prod", 1, namespace="ml-prod"))
    rendering, _ = build(render, cluster=ClusterArgs(managed_dcgm=False), managed_alerts=True, teams=teams)
    rules = {r.name: r.inputs for r in rendering.of_type(CUSTOM + "ClusterRules")}
    assert set(rules) == {"ml-gpu-alerts", "ml-gpu-hours"}
    hours = rules["ml-gpu-hours"]
    assert hours["metadata"]["name"] == "gpuready-gpu-hours" and "namespace" not in hours["metadata"]
    assert hours["spec"] == alerts.hours_rules(teams)["spec"]
    _validator("ClusterRules").validate(alerts.hours_rules(teams))
    # read from the PodMonitoring's job, as managed collection stores the exporter's series
    (group,) = hours["spec"]["groups"]
    labels = {**NODE, **SCRAPE, "job": alerts.POD_MONITORING, "exported_namespace": "ml-prod",
              "exported_pod": "serve-0"}
    series = [{"series": "DCGM_FI_DEV_GPU_UTIL{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}",
               "values": "40x90"}]
    done = _run(promtool, tmp_path, group["rules"], [{"interval": "1m", "input_series": series, "promql_expr_test": [
        _expect("60m", gpu_hours.HOURS_USED, [("prod", NODE["modelName"], 0.4)])]}])
    assert done.returncode == 0, done.stdout + done.stderr
    without, _ = build(render, cluster=ClusterArgs(managed_dcgm=False), managed_alerts=True)
    assert [r.name for r in without.of_type(CUSTOM + "ClusterRules")] == ["ml-gpu-alerts"]


def test_the_objects_are_named_labelled_and_timed_as_gpuready_manages_them():
    assert alerts.pod_monitoring("gpu-operator", "gpu-operator") == {
        "apiVersion": "monitoring.googleapis.com/v1", "kind": "PodMonitoring",
        "metadata": {"name": "gpuready-dcgm-exporter", "namespace": "gpu-operator",
                     "labels": {"app.kubernetes.io/managed-by": "gpuready"}},
        "spec": {"selector": {"matchLabels": dict(health.EXPORTER_PODS["gpu-operator"])},
                 "endpoints": [{"port": "metrics", "interval": "30s"}]}}
    rules = alerts.cluster_rules()
    assert {k: v for k, v in rules.items() if k != "spec"} == {
        "apiVersion": "monitoring.googleapis.com/v1", "kind": "ClusterRules",
        "metadata": {"name": "gpuready-gpu-health", "labels": {"app.kubernetes.io/managed-by": "gpuready"}}}
    (group,) = rules["spec"]["groups"]
    # evaluated every minute (the managed rule evaluator's group interval)
    assert (group["name"], group["interval"]) == (health.RULE_GROUP, "1m")
    teams = (TeamArgs("research", 2),)
    hours = alerts.hours_rules(teams)
    assert {k: v for k, v in hours.items() if k != "spec"} == {
        "apiVersion": "monitoring.googleapis.com/v1", "kind": "ClusterRules",
        "metadata": {"name": "gpuready-gpu-hours", "labels": {"app.kubernetes.io/managed-by": "gpuready"}}}
    assert hours["spec"] == {"groups": [gpu_hours.group(teams, exporter_job="gpuready-dcgm-exporter")]}
