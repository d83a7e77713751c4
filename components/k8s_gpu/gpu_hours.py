"""GPU-hours per team: Prometheus recording rules over the DCGM exporter's series, beside the GPU alerts.

Where the series come from: the exporter (``DCGM_EXPORTER_KUBERNETES=true`` in both charts, reading the kubelet's
pod-resources socket) labels a GPU's series with the ``pod``, ``namespace`` and ``container`` holding it, and with
none while no pod holds it. The scrape (the chart's ServiceMonitor, ``honorLabels: false``; GKE's PodMonitoring
alike) sets its own ``namespace``, ``pod`` and ``container`` target labels (the exporter's), so Prometheus stores the
workload's as ``exported_namespace``, ``exported_pod`` and ``exported_container``. The team -> namespace mapping is
known when the stack renders: one rule per team selects its namespace and adds ``team`` (the rule's ``labels``), so
the rules need no namespace-label metric from kube-state-metrics.

The rules, every :data:`INTERVAL` (the group's own ``interval``; the hours arithmetic depends on it):

- :data:`ALLOCATED` per team and ``modelName``: GPUs a pod of the team's namespace holds (a GPU that two pods of
  the team share by time-slicing counts once; one shared by two teams counts for each).
- :data:`USED` per team and ``modelName``: the same GPUs weighted by ``DCGM_FI_DEV_GPU_UTIL`` / 100 (the share of
  the sample period in which a kernel ran): a GPU busy half the time counts 0.5.
- :data:`HOURS_ALLOCATED` and :data:`HOURS_USED`: GPU-hours over the last hour, from the per-minute samples: each
  sample stands for one minute, so the sum of the samples over the window / 60. A minute in which a team held no GPU
  has no sample (counts 0), so the sum is right where an average of the samples would not be.

Units and staleness: GPU-hours = GPUs x hours. When a pod ends (or its node goes), its series go stale at the next
scrape and its GPUs stop counting within a scrape interval; while the exporter cannot be scraped its GPUs count for no
team (``DcgmExporterDown`` fires). MIG is left out: DCGM reports no ``DCGM_FI_DEV_GPU_UTIL`` for a MIG instance."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from ..teams import TeamArgs

INTERVAL_MINUTES = 1
INTERVAL = f"{INTERVAL_MINUTES}m"
"""How often the group evaluates: each per-minute sample stands for this much time."""
WINDOW_MINUTES = 60
SAMPLES_PER_HOUR = 60 // INTERVAL_MINUTES
"""Each sample stands for :data:`INTERVAL_MINUTES` minutes: GPUs summed over the samples / this = GPU-hours."""
_RANGE_SECONDS = WINDOW_MINUTES * 60 - INTERVAL_MINUTES * 30
RANGE = f"{_RANGE_SECONDS // 60}m" + (f"{_RANGE_SECONDS % 60}s" if _RANGE_SECONDS % 60 else "")
"""The range the hourly sums read (``59m30s``): exactly the last hour's samples (60 at one a minute), as the sums are
evaluated in the same group, at the samples' own timestamps, in every Prometheus: a range of ``1h`` holds 61 there in
Prometheus 2 (its ranges include their left end) and 60 in Prometheus 3; half an interval less holds 60 in both."""

UTIL = "DCGM_FI_DEV_GPU_UTIL"
"""What the rules read: a default counter of both charts, reported for every whole GPU every scrape (utilisation in
%, the share of the sample period in which a kernel ran)."""
GPU = ("UUID", "modelName")
"""What a GPU is known by (``UUID`` is unique; ``modelName`` kept for the per-model breakdown)."""
TEAM_LABEL = "team"

ALLOCATED = "team_model:gpuready_gpus_allocated:count"
USED = "team_model:gpuready_gpus_used:sum"
HOURS_ALLOCATED = "team_model:gpuready_gpu_hours_allocated:sum1h"
HOURS_USED = "team_model:gpuready_gpu_hours_used:sum1h"
RECORDS = (ALLOCATED, USED, HOURS_ALLOCATED, HOURS_USED)

RULE_GROUP = "gpuready-gpu-hours"
PROMETHEUS_RULE_NAME = "gpuready-gpu-hours"


def _selector(exporter_job: str, namespace: str) -> str:
    return f'{UTIL}{{job="{exporter_job}", exported_namespace="{namespace}"}}'


def recording_rules(teams: Sequence[TeamArgs], *, exporter_job: str) -> list[dict[str, Any]]:
    """The recording rules (one :data:`ALLOCATED` and one :data:`USED` per team, then the hourly sums), in the order
    the group evaluates them: the sums read the per-minute samples of the same evaluation. ``exporter_job``: the
    exporter's scrape job (another scrape of the same metric is not counted twice)."""
    by = ", ".join(GPU)
    rules: list[dict[str, Any]] = []
    for team in teams:
        held = _selector(exporter_job, team.home)
        labels = {TEAM_LABEL: team.name}
        rules.append({"record": ALLOCATED, "expr": f"count by (modelName) (count by ({by}) ({held}))",
                      "labels": labels})
        rules.append({"record": USED, "expr": f"sum by (modelName) (max by ({by}) ({held})) / 100",
                      "labels": dict(labels)})
    for hours, per_minute in ((HOURS_ALLOCATED, ALLOCATED), (HOURS_USED, USED)):
        rules.append({"record": hours,
                      "expr": f"sum_over_time({per_minute}[{RANGE}]) / {SAMPLES_PER_HOUR}"})
    return rules


def group(teams: Sequence[TeamArgs], *, exporter_job: str) -> dict[str, Any]:
    """The rule group, with its own ``interval`` (the hours arithmetic holds for it alone)."""
    return {"name": RULE_GROUP, "interval": INTERVAL, "rules": recording_rules(teams, exporter_job=exporter_job)}


def prometheus_rule(namespace: str, teams: Sequence[TeamArgs], *, exporter_job: str,
                    labels: Optional[dict[str, str]] = None) -> dict[str, Any]:
    """The ``PrometheusRule`` (monitoring.coreos.com/v1) of the GPU-hours rules, in ``namespace`` (the alerts'),
    with the labels the Prometheus's ``ruleSelector`` picks rules by."""
    return {
        "apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
        "metadata": {"name": PROMETHEUS_RULE_NAME, "namespace": namespace,
                     "labels": {"app.kubernetes.io/managed-by": "gpuready", **(labels or {})}},
        "spec": {"groups": [group(teams, exporter_job=exporter_job)]},
    }
