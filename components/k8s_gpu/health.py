"""GPU health after day one: the DCGM fields the exporter must collect, and the alerts that read them.

One table (:data:`SIGNALS`): each failure the probe judges on a node (``gpuready/probe/core.py``'s checks), the
alert that watches for the same failure while the GPUs work, with the DCGM fields it reads and what to do, and the
repair that cures it (:data:`REBOOT`, :data:`REPLACE` or none): EKS's node repair overrides (in the EKS platform's
own folder) and ``gpuready sweep --repair`` read their actions from it. The
exporter's metric list (:func:`counters_csv`) is the pinned chart's own list plus every field an alert reads (the
chart's default list leaves out double-bit ECC, throttling and NVLink error counters: an alert on a metric that is not
collected never fires). :func:`prometheus_rule` is the ``PrometheusRule`` the Prometheus Operator loads."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Iterable, Optional

XID_HARDWARE = (48, 61, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120, 140)
"""Xids of the GPU's hardware or its links (NVIDIA's Xid catalogue): drain the node, reset or replace the GPU. The
probe's ``XID_DRAIN`` (tests hold them equal: the probe runs on nodes with the standard library alone)."""
XID_REPLACE = (64, 79)
"""Hardware Xids a reset does not cure: a row remap that failed (no spare rows left), a GPU fallen off the bus. The
node is replaced (the cloud gives other hardware); every other hardware Xid is cured by a reset, so the node reboots."""
XID_RESET = tuple(x for x in XID_HARDWARE if x not in XID_REPLACE)
"""Hardware Xids a GPU reset cures (the node reboots)."""
XID_APPLICATION = (13, 31, 43, 45)
"""Xids of an application's fault (illegal access, page fault, stopped or killed channel): the GPU is fine."""

DEFAULT_COUNTERS = (
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %)."),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter", "Total number of NVLink bandwidth counters for all lanes."),
    ("DCGM_FI_DEV_VGPU_LICENSE_STATUS", "gauge", "vGPU License status"),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for uncorrectable errors"),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors"),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed"),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active."),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active."),
    ("DCGM_FI_PROF_DRAM_ACTIVE", "gauge",
     "Ratio of cycles the device memory interface is active sending or receiving data."),
    ("DCGM_FI_PROF_PCIE_TX_BYTES", "gauge", "The rate of data transmitted over the PCIe bus - including both protocol "
                                            "headers and data payloads - in bytes per second."),
    ("DCGM_FI_PROF_PCIE_RX_BYTES", "gauge", "The rate of data received over the PCIe bus - including both protocol "
                                            "headers and data payloads - in bytes per second."),
)
"""What the pinned dcgm-exporter chart (4.8.2, ``templates/metrics-configmap.yaml``) collects by default: the list
``customMetrics`` replaces whole (tests render the chart and compare). ``DCGM_FI_DRIVER_VERSION`` (a label) is left
out, as the exporter adds it to every metric anyway."""

HEALTH_COUNTERS = (
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors."),
    ("DCGM_FI_DEV_ROW_REMAP_PENDING", "gauge", "Whether remapping of rows is pending (a GPU reset applies it)."),
    ("DCGM_FI_DEV_THERMAL_VIOLATION", "counter", "Throttling duration due to thermal constraints."),
    ("DCGM_FI_DEV_POWER_VIOLATION", "counter", "Throttling duration due to power constraints."),
    ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink flow-control CRC errors."),
    ("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink data CRC errors."),
    ("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink retries."),
    ("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink recovery errors."),
)
"""Fields the alerts read that the chart's default list leaves out (their names and help as NVIDIA's lists, commented
out there, spell them; ``ROW_REMAP_PENDING`` is DCGM field 396)."""

EXPORTER_JOBS = MappingProxyType({"dcgm-exporter": "dcgm-exporter", "gpu-operator": "nvidia-dcgm-exporter"})
"""The chart that runs the exporter -> its Service's name, which the Prometheus Operator gives the scrape job."""

EXPORTER_PODS = MappingProxyType({"dcgm-exporter": MappingProxyType({"app.kubernetes.io/name": "dcgm-exporter"}),
                                  "gpu-operator": MappingProxyType({"app": "nvidia-dcgm-exporter"})})
"""The chart that runs the exporter -> a label its exporter pods carry (the dcgm-exporter chart's DaemonSet; the GPU
Operator's ``state-dcgm-exporter`` asset): what a pod-level scrape (GKE's PodMonitoring) selects them by."""
EXPORTER_PORT = "metrics"
"""The name both give the exporter's container port (9400)."""
GPU_LABELS = ("Hostname", "gpu", "UUID", "modelName")
"""The labels dcgm-exporter gives each GPU's series (``Hostname``: the node's name)."""
NODE_GPUS = 'sum by (node) (kube_node_status_capacity{resource="nvidia_com_gpu"})'
"""GPUs the kubelet advertises per node (kube-state-metrics, which the Prometheus Operator's stacks ship)."""
NODE_REPORTING = 'count by (node) (label_replace(DCGM_FI_DEV_GPU_TEMP, "node", "$1", "Hostname", "(.*)"))'
"""GPUs the exporter reports per node."""


NODE_CAPACITY = "node-capacity"
"""A :attr:`Signal.when`: the alert reads kube-state-metrics' node capacity (:data:`NODE_GPUS`)."""
REBOOT, REPLACE = "reboot", "replace"
"""The repairs a platform makes of a node: reboot it (its GPUs reset with it), or replace it by other hardware."""
STRENGTH = {"": 0, REBOOT: 1, REPLACE: 2}
"""A node with several failures gets the strongest repair any of them needs."""


@dataclass(frozen=True)
class Signal:
    """A failure the probe judges on a node and the alert that watches for it while GPUs work."""

    alert: str
    """The alert's name."""
    probe: tuple[str, ...]
    """The probe's checks that judge the same failure (``gpuN.`` for each GPU's)."""
    fields: tuple[str, ...]
    """The DCGM fields the alert reads."""
    expr: str
    """Its PromQL, with ``{by}`` (the GPU's labels), ``{job}`` (the exporter's scrape job), ``{gpus}`` (the GPUs a
    node advertises) and ``{reporting}`` (the GPUs the exporter reports) to fill in."""
    severity: str
    """``critical`` (the GPU cannot be trusted: act now), ``warning`` (degraded), ``info`` (cost or noise)."""
    summary: str
    """What failed, one line (Prometheus template: ``{{ $labels.Hostname }}``, ``{{ $value }}``)."""
    action: str
    """What to do (and what automatic repair does, where a platform repairs)."""
    for_: str = "0m"
    """How long the condition holds before the alert fires."""
    when: str = ""
    """What the alert needs beyond the exporter: :data:`NODE_CAPACITY` (what the kubelet advertises, through
    kube-state-metrics: left out with MIG, where the kubelet advertises MIG instances, not GPUs, and where the
    Prometheus is not known to collect kube-state-metrics)."""
    repair: str = ""
    """What cures the failure on a node: :data:`REBOOT`, :data:`REPLACE`, or ``""`` (no repair: the alert only)."""
    xids: tuple[int, ...] = ()
    """The Xids it stands for: a probe Xid check is this signal's when it saw one of them."""
    measured: str = ""
    """A regular expression a probe check's measured value must match to be this signal's (``""``: any)."""

    @property
    def alerts(self) -> bool:
        """Whether an alert watches for it (``False``: the exporter collects no field that shows it)."""
        return bool(self.expr)


def _each(field: str, values: tuple[int, ...]) -> str:
    return " or ".join(f"{field} == {v}" for v in values)


SIGNALS = (
    Signal("GpuXidHardwareError", ("xid", "gpuN.xid", "gpuN.xid_under_load"), ("DCGM_FI_DEV_XID_ERRORS",),
           _each("DCGM_FI_DEV_XID_ERRORS", XID_RESET), "critical",
           "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} reported hardware Xid {{ $value }}",
           "drain the node and reset the GPU (reboot); replace the node if the Xid comes back", repair=REBOOT,
           xids=XID_RESET),
    Signal("GpuXidUnrecoverable", ("xid", "gpuN.xid", "gpuN.xid_under_load"), ("DCGM_FI_DEV_XID_ERRORS",),
           _each("DCGM_FI_DEV_XID_ERRORS", XID_REPLACE), "critical",
           "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} reported Xid {{ $value }}, which a reset does not cure",
           "drain and replace the node (64: no spare memory rows left; 79: the GPU fell off the bus)",
           repair=REPLACE, xids=XID_REPLACE),
    Signal("GpuXidApplicationError", ("gpuN.xid",), ("DCGM_FI_DEV_XID_ERRORS",),
           _each("DCGM_FI_DEV_XID_ERRORS", XID_APPLICATION), "info",
           "a job on GPU {{ $labels.gpu }} on {{ $labels.Hostname }} faulted (Xid {{ $value }})",
           "look at the job's own error; the GPU is fine", xids=XID_APPLICATION),
    Signal("GpuDoubleBitEccError", ("gpuN.ecc_uncorrected",), ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",),
           "max by ({by}) (DCGM_FI_DEV_ECC_DBE_VOL_TOTAL) > 0", "critical",
           "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} has {{ $value }} uncorrected (double-bit) ECC errors",
           "drain the node and reset the GPU (the reset remaps the row); replace it if the errors return",
           repair=REBOOT),
    Signal("GpuRowRemapFailure", ("gpuN.row_remap_failure",), ("DCGM_FI_DEV_ROW_REMAP_FAILURE",),
           "max by ({by}) (DCGM_FI_DEV_ROW_REMAP_FAILURE) > 0", "critical",
           "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} could not remap a failed memory row",
           "replace the node: the GPU has no spare rows left", repair=REPLACE),
    Signal("GpuRowRemapPending", ("gpuN.row_remap_pending",), ("DCGM_FI_DEV_ROW_REMAP_PENDING",),
           "max by ({by}) (DCGM_FI_DEV_ROW_REMAP_PENDING) > 0", "warning",
           "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} has a memory row remap waiting for a reset",
           "drain the node and reset the GPU, which applies the remap", for_="5m", repair=REBOOT),
    Signal("GpuThermalThrottling", ("gpuN.clock_event_reasons", "gpuN.thermal_margin"),
           ("DCGM_FI_DEV_THERMAL_VIOLATION",), "max by ({by}) (rate(DCGM_FI_DEV_THERMAL_VIOLATION[5m])) > 0", "warning",
           "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} has slowed down for heat for 10 minutes",
           "check the node's cooling and airflow; move work off it if it stays", for_="10m"),
    Signal("GpuPowerThrottling", ("gpuN.clock_event_reasons",), ("DCGM_FI_DEV_POWER_VIOLATION",),
           "max by ({by}) (rate(DCGM_FI_DEV_POWER_VIOLATION[5m])) > 0", "info",
           "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} has been held at its power limit for 30 minutes",
           "expected under a heavy load; check the power limit if the job is slower than it should be", for_="30m"),
    Signal("GpuNvlinkRecoveryError", ("gpuN.nvlink_errors", "gpuN.nvlink_errors_under_load"),
           ("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",),
           "max by ({by}) (increase(DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL[10m])) > 0", "critical",
           "an NVLink of GPU {{ $labels.gpu }} on {{ $labels.Hostname }} had to recover from a fault",
           "drain the node and reset its GPUs; replace it if the link fails again", repair=REBOOT),
    Signal("GpuNvlinkErrors", ("gpuN.nvlink_errors", "gpuN.nvlink_errors_under_load"),
           ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
            "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL"),
           " or ".join(f"max by ({{by}}) (increase({f}[10m])) > 0" for f in (
               "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
               "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL")), "warning",
           "NVLink errors rising on GPU {{ $labels.gpu }} on {{ $labels.Hostname }}",
           "run `gpuready sweep` on the node; drain it if the all-reduce bandwidth is low", for_="10m"),
    Signal("GpuMissing", ("gpu_count",), ("DCGM_FI_DEV_GPU_TEMP",),
           "({gpus}) - ({reporting}) > 0 or (({gpus}) unless on (node) ({reporting}))", "critical",
           "{{ $labels.node }} advertises {{ $value }} GPUs more than the exporter reports",
           "a GPU fell off the bus or its driver failed: drain the node and replace it", for_="10m", when=NODE_CAPACITY,
           repair=REPLACE),
    Signal("DcgmExporterDown", (), (), 'up{{job="{job}"}} == 0', "warning",
           "the DCGM exporter on {{ $labels.instance }} cannot be scraped",
           "GPU health is unwatched on that node: look at the exporter pod's log", for_="5m"),
    Signal("GpuAllocatedIdle", ("gpuN.memory_in_use",), ("DCGM_FI_DEV_GPU_UTIL",),
           'max by ({by}, exported_namespace, exported_pod) (DCGM_FI_DEV_GPU_UTIL{{exported_pod!=""}}) == 0', "info",
           "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} is held by pod {{ $labels.exported_namespace }}/"
           "{{ $labels.exported_pod }} and has done nothing for an hour",
           "the GPU costs as much idle as busy: ask the pod's owner to release it", for_="1h"),
    Signal("GpuRecoveryActionPending", ("gpuN.recovery_action",), (), "", "critical",
           "the driver asks for a GPU reset, a reboot or a drain", "drain the node and reboot it", repair=REBOOT),
    Signal("GpuFabricNotReady", ("gpuN.fabric",), (), "", "critical",
           "the NVSwitch fabric has not come up: CUDA cannot start",
           "start nvidia-fabricmanager of the driver's version; reboot the node if it does not come up",
           repair=REBOOT, measured=r"^(?!Completed/)"),
    Signal("GpuFabricError", ("gpuN.fabric",), (), "", "critical",
           "the NVSwitch fabric came up with an error, which persists across reboots",
           "drain and replace the node", repair=REPLACE, measured=r"^Completed/(?!Success$)"),
)
"""Every GPU failure gpuready knows: the probe checks that judge it, its alert (where the exporter collects a field
that shows it) and its repair. ``docs/reference/gpu-alerts.md`` is generated from it."""

_XID = re.compile(r"(?:^|, )(\d+)(?= \(|,|$)")
"""An Xid in the measured value of the probe's Xid checks (``79 (GPU has fallen off the bus.), 13``)."""


def signals_of(check: Any) -> list[Signal]:
    """The signals a probe check (anything with ``name`` and ``measured``) stands for: those naming the check
    (``gpuN.`` for any GPU, or a PCI address the probe could not name) whose Xids it saw or whose ``measured`` pattern its value matches."""
    name = re.sub(r"^(?:gpu\d+|pci [0-9a-f:]+)\.", "gpuN.", check.name)
    measured = "" if check.measured is None else str(check.measured)
    seen = {int(x) for x in _XID.findall(measured)}
    return [s for s in SIGNALS if name in s.probe and (not s.xids or seen & set(s.xids))
            and re.search(s.measured, measured)]


def repair_action(checks: Iterable[Any]) -> tuple[str, str]:
    """The repair a node needs from its probe's checks: (:data:`REBOOT`, :data:`REPLACE` or ``""``, why). The
    strongest repair any failed check needs; ``""`` where none cures what failed (slow figures, a stray process, an
    application's Xid: the node is not repaired). ``why`` names the checks and their signals."""
    failed = [c for c in checks if c.verdict == "fail"]
    found = [(c, s) for c in failed for s in signals_of(c)]
    action = max((s.repair for _, s in found), key=STRENGTH.__getitem__, default="")
    if not action:
        names = ", ".join(c.name for c in failed) or "no failed check"
        return "", f"no reboot or replacement cures what failed ({names})"
    return action, "; ".join(f"{c.name} ({s.alert}: {s.action})" for c, s in found if s.repair == action)


def expression(signal: Signal, *, exporter_job: str, replicas: int = 1) -> str:
    """The PromQL of ``signal``'s alert: ``exporter_job`` names the exporter's scrape job, ``replicas`` how many
    ``nvidia.com/gpu`` each GPU is advertised as (time-slicing)."""
    gpus = f"{NODE_GPUS} / {replicas}" if replicas > 1 else NODE_GPUS
    return signal.expr.format(by=", ".join(GPU_LABELS), job=exporter_job, gpus=gpus, reporting=NODE_REPORTING)


def alerting_rules(*, exporter_job: str, replicas: int = 1, mig: bool = False,
                   node_capacity: bool = True) -> list[dict[str, Any]]:
    """The alerting rules, as Prometheus's rule files and the ``PrometheusRule`` write them; ``node_capacity``: the
    Prometheus collects kube-state-metrics' node capacity (else the alerts that read it are left out)."""
    return [{
        "alert": s.alert,
        "expr": expression(s, exporter_job=exporter_job, replicas=replicas),
        **({"for": s.for_} if s.for_ != "0m" else {}),
        "labels": {"severity": s.severity},
        "annotations": {"summary": s.summary, "action": s.action},
    } for s in SIGNALS if s.alerts and not ((mig or not node_capacity) and s.when == NODE_CAPACITY)]


METRICS_CONFIG_MAP = "gpuready-dcgm-metrics"
"""The ConfigMap the GPU Operator chart makes of the metric list (``dcgmExporter.config``)."""
RULE_GROUP = "gpuready-gpu-health"
PROMETHEUS_RULE_NAME = "gpuready-gpu-health"


def counters_csv() -> str:
    """The exporter's metric list: the chart's default and every field an alert reads (dcgm-exporter's CSV)."""
    rows = [*DEFAULT_COUNTERS, *HEALTH_COUNTERS]
    return "# DCGM FIELD, Prometheus metric type, help message (gpuready: the chart's list and the alerts' fields)\n" \
        + "".join(f"{name}, {kind}, {help_}\n" for name, kind, help_ in rows)


def prometheus_rule(namespace: str, *, exporter_job: str, replicas: int = 1, mig: bool = False,
                    labels: Optional[dict[str, str]] = None) -> dict[str, Any]:
    """The ``PrometheusRule`` (monitoring.coreos.com/v1) holding the GPU alerts, in ``namespace``; ``labels`` are the
    ones the Prometheus's ``ruleSelector`` picks rules by."""
    return {
        "apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
        "metadata": {"name": PROMETHEUS_RULE_NAME, "namespace": namespace,
                     "labels": {"app.kubernetes.io/managed-by": "gpuready", **(labels or {})}},
        "spec": {"groups": [{"name": RULE_GROUP,
                             "rules": alerting_rules(exporter_job=exporter_job, replicas=replicas, mig=mig)}]},
    }


DASHBOARD = Path(__file__).with_name("dcgm-exporter-dashboard.json")
"""NVIDIA's Grafana dashboard for the exporter, unchanged: NVIDIA/dcgm-exporter @ 4.5.3-4.8.2 (commit
691c92762eb551313c825f6efe4ceeee20982801, the pinned chart's tag), ``grafana/dcgm-exporter-dashboard.json`` (also
grafana.com dashboard 12239)."""
DASHBOARD_LABEL = MappingProxyType({"grafana_dashboard": "1"})
"""The label Grafana's dashboard sidecar loads ConfigMaps by (kube-prometheus-stack's ``grafana.sidecar.dashboards``
``label`` and ``labelValue``)."""


def dashboard_config_map(namespace: str) -> dict[str, Any]:
    """NVIDIA's dashboard as a ConfigMap Grafana's sidecar loads."""
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "gpuready-dcgm-dashboard", "namespace": namespace,
                         "labels": {"app.kubernetes.io/managed-by": "gpuready", **DASHBOARD_LABEL}},
            "data": {DASHBOARD.name: DASHBOARD.read_text()}}
