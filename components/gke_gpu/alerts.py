"""The GPU alerts on GKE's own Prometheus: Google Cloud Managed Service for Prometheus, with managed collection.

Where the stack runs gpuready's DCGM exporter (``cluster.managed_dcgm`` false, or an existing cluster), a
``PodMonitoring`` scrapes it and a ``ClusterRules`` holds the GPU alerts of :mod:`gpuready_components.k8s_gpu.health`,
the same the Prometheus Operator is given in a ``PrometheusRule``; the managed rule evaluator runs them over the
cluster's metrics (``monitoring.googleapis.com/v1``, the CRDs of GoogleCloudPlatform/prometheus-engine, which the tests
read). The scrape job is the PodMonitoring's name. GKE's managed DCGM package runs its own exporter with its own list
of fields, which gpuready cannot extend (GKE's docs point to a self-managed exporter for another list): the alerts
need gpuready's. With teams, a second ``ClusterRules`` records each team's GPU-hours
(:mod:`gpuready_components.k8s_gpu.gpu_hours`): managed collection stores the exporter's series as the Prometheus
Operator's scrape does (the PodMonitoring's target ``namespace`` and ``pod`` are the exporter's; the workload's are
``exported_namespace`` and ``exported_pod``). The alerts that read kube-state-metrics' node capacity are left out (managed collection scrapes
kube-state-metrics only where the cluster runs it and a PodMonitoring selects it)."""

from __future__ import annotations

from typing import Any, Sequence

from ..k8s_gpu import gpu_hours, health
from ..teams import TeamArgs

API_VERSION = "monitoring.googleapis.com/v1"
POD_MONITORING = "gpuready-dcgm-exporter"
"""The PodMonitoring's name, which managed collection gives the scrape job (``job``)."""
CLUSTER_RULES = "gpuready-gpu-health"
HOURS_RULES = "gpuready-gpu-hours"
SCRAPE_INTERVAL = "30s"


def pod_monitoring(namespace: str, exporter: str) -> dict[str, Any]:
    """The PodMonitoring that scrapes the exporter run by chart ``exporter`` (a key of
    :data:`~gpuready_components.k8s_gpu.health.EXPORTER_PODS`) in ``namespace``."""
    return {
        "apiVersion": API_VERSION, "kind": "PodMonitoring",
        "metadata": {"name": POD_MONITORING, "namespace": namespace,
                     "labels": {"app.kubernetes.io/managed-by": "gpuready"}},
        "spec": {"selector": {"matchLabels": dict(health.EXPORTER_PODS[exporter])},
                 "endpoints": [{"port": health.EXPORTER_PORT, "interval": SCRAPE_INTERVAL}]},
    }


def cluster_rules() -> dict[str, Any]:
    """The ClusterRules holding the GPU alerts (cluster-scoped: the rule evaluator adds the cluster's project,
    location and cluster to every selector). Time-slicing and MIG change only the node-capacity alert, left out."""
    return {
        "apiVersion": API_VERSION, "kind": "ClusterRules",
        "metadata": {"name": CLUSTER_RULES, "labels": {"app.kubernetes.io/managed-by": "gpuready"}},
        "spec": {"groups": [{"name": health.RULE_GROUP, "interval": "1m", "rules": health.alerting_rules(
            exporter_job=POD_MONITORING, node_capacity=False)}]},
    }


def hours_rules(teams: Sequence[TeamArgs]) -> dict[str, Any]:
    """The ClusterRules recording the teams' GPU-hours from the exporter the PodMonitoring scrapes."""
    return {
        "apiVersion": API_VERSION, "kind": "ClusterRules",
        "metadata": {"name": HOURS_RULES, "labels": {"app.kubernetes.io/managed-by": "gpuready"}},
        "spec": {"groups": [gpu_hours.group(teams, exporter_job=POD_MONITORING)]},
    }
