"""The GPU health alerts (``components/k8s_gpu/health.py``) as Prometheus runs them: ``promtool test rules`` on
series that must fire each alert and series that must not, ``promtool check rules``, the ``PrometheusRule`` against
the Prometheus Operator's CRD, and every metric an alert reads in the list the exporter is given."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import jsonschema
import pytest
import yaml

from gpuready.probe import Check, core
from gpuready_components.k8s_gpu import health
from tests import helm
from tests.conftest import ROOT

from .kueue_schemas import _strict

INSTALL = "apt-get install prometheus (Debian's package brings promtool)"
NODE = {"Hostname": "gpu-node-a", "gpu": "0", "UUID": "GPU-1d0c3f5e", "modelName": "NVIDIA H100 80GB HBM3"}
SCRAPE = {"DCGM_FI_DRIVER_VERSION": "570.133.20", "job": "dcgm-exporter", "instance": "10.0.1.5:9400",
          "namespace": "nvidia-gpu", "pod": "dcgm-exporter-x2k9q"}
"""A GPU's labels as dcgm-exporter writes them, and those the scrape adds."""


@pytest.fixture(scope="module")
def promtool():
    found = shutil.which("promtool")
    if found is None:
        message = f"promtool not found: {INSTALL}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found


def _series(metric: str, values: str, **labels: str) -> dict[str, str]:
    every = {**NODE, **SCRAPE, **labels}
    return {"series": metric + "{" + ",".join(f'{k}="{v}"' for k, v in every.items()) + "}", "values": values}


def _alert(name: str, value: float, labels: dict[str, str]) -> dict:
    """The alert promtool must see: its labels, and its annotations rendered as Prometheus renders them."""
    (signal,) = [s for s in health.SIGNALS if s.alert == name]

    def render(template: str) -> str:
        text = template.replace("{{ $value }}", f"{value:g}")
        return re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels.get(m.group(1), ""), text)
    return {"exp_labels": {**labels, "severity": signal.severity},
            "exp_annotations": {"summary": render(signal.summary), "action": render(signal.action)}}


GPU = dict(NODE)
"""The labels of an alert that aggregates by GPU."""
WHOLE = {**NODE, **SCRAPE}
"""The labels of an alert that keeps the series' own."""

CASES = [
    # (what, series, eval time, alert, the alerts expected)
    ("a hardware Xid fires", [_series("DCGM_FI_DEV_XID_ERRORS", "0 0 48x10")], "5m", "GpuXidHardwareError",
     [_alert("GpuXidHardwareError", 48, WHOLE)]),
    ("a GPU fallen off the bus is no Xid a reset cures", [_series("DCGM_FI_DEV_XID_ERRORS", "0 0 79x10")], "5m",
     "GpuXidHardwareError", []),
    ("a GPU fallen off the bus is told to replace the node", [_series("DCGM_FI_DEV_XID_ERRORS", "0 0 79x10")], "5m",
     "GpuXidUnrecoverable", [_alert("GpuXidUnrecoverable", 79, WHOLE)]),
    ("a double-bit Xid is not told to replace", [_series("DCGM_FI_DEV_XID_ERRORS", "0 0 48x10")], "5m",
     "GpuXidUnrecoverable", []),
    ("an application's Xid is no hardware error", [_series("DCGM_FI_DEV_XID_ERRORS", "0 0 13x10")], "5m",
     "GpuXidHardwareError", []),
    ("an application's Xid is told as the job's", [_series("DCGM_FI_DEV_XID_ERRORS", "0 0 13x10")], "5m",
     "GpuXidApplicationError", [_alert("GpuXidApplicationError", 13, WHOLE)]),
    ("no Xid, no alert", [_series("DCGM_FI_DEV_XID_ERRORS", "0x10")], "5m", "GpuXidHardwareError", []),
    ("a double-bit ECC error fires", [_series("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "0 0 2x10")], "5m",
     "GpuDoubleBitEccError", [_alert("GpuDoubleBitEccError", 2, GPU)]),
    ("no double-bit error, no alert", [_series("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "0x10")], "5m",
     "GpuDoubleBitEccError", []),
    ("a failed row remap fires", [_series("DCGM_FI_DEV_ROW_REMAP_FAILURE", "0 1x10")], "3m", "GpuRowRemapFailure",
     [_alert("GpuRowRemapFailure", 1, GPU)]),
    ("a pending remap waits 5 minutes", [_series("DCGM_FI_DEV_ROW_REMAP_PENDING", "0 1x10")], "4m",
     "GpuRowRemapPending", []),
    ("a pending remap then fires", [_series("DCGM_FI_DEV_ROW_REMAP_PENDING", "0 1x10")], "8m", "GpuRowRemapPending",
     [_alert("GpuRowRemapPending", 1, GPU)]),
    ("thermal throttling for 10 minutes fires",
     [_series("DCGM_FI_DEV_THERMAL_VIOLATION", "0+1000000x30")], "20m", "GpuThermalThrottling",
     [_alert("GpuThermalThrottling", 16666.666666666668, GPU)]),
    ("thermal throttling that stopped does not", [_series("DCGM_FI_DEV_THERMAL_VIOLATION", "5000000x30")], "20m",
     "GpuThermalThrottling", []),
    ("power capping for 20 minutes is not yet told", [_series("DCGM_FI_DEV_POWER_VIOLATION", "0+1000x60")], "20m",
     "GpuPowerThrottling", []),
    ("power capping for 30 minutes is", [_series("DCGM_FI_DEV_POWER_VIOLATION", "0+1000x60")], "40m",
     "GpuPowerThrottling", [_alert("GpuPowerThrottling", 16.666666666666668, GPU)]),
    ("an NVLink recovery fires at once",
     [_series("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "0 0 0 1x20")], "5m", "GpuNvlinkRecoveryError",
     [_alert("GpuNvlinkRecoveryError", 1, GPU)]),
    ("NVLink CRC errors rising for 10 minutes fire",
     [_series("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "0+1x30"),
      _series("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "0x30")], "20m", "GpuNvlinkErrors",
     [_alert("GpuNvlinkErrors", 10, GPU)]),
    ("NVLink counters that stay still do not", [_series("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "40x30")],
     "20m", "GpuNvlinkErrors", []),
    ("the exporter unreachable for 5 minutes", [{"series": 'up{job="dcgm-exporter",instance="10.0.1.5:9400"}',
                                                 "values": "1 1 0x10"}], "8m", "DcgmExporterDown",
     [_alert("DcgmExporterDown", 0, {"job": "dcgm-exporter", "instance": "10.0.1.5:9400"})]),
    ("another job down is not the exporter", [{"series": 'up{job="node-exporter",instance="10.0.1.5:9100"}',
                                               "values": "0x10"}], "8m", "DcgmExporterDown", []),
    ("a GPU a pod holds idle for an hour",
     [_series("DCGM_FI_DEV_GPU_UTIL", "0x90", exported_pod="train-0", exported_namespace="team-a")], "70m",
     "GpuAllocatedIdle", [_alert("GpuAllocatedIdle", 0, {**GPU, "exported_pod": "train-0",
                                                         "exported_namespace": "team-a"})]),
    ("a GPU a pod used 40 minutes ago is not idle",
     [_series("DCGM_FI_DEV_GPU_UTIL", "0x30 50 0x60", exported_pod="train-0", exported_namespace="team-a")], "70m",
     "GpuAllocatedIdle", []),
    ("an idle GPU no pod holds costs nothing more", [_series("DCGM_FI_DEV_GPU_UTIL", "0x90")], "70m",
     "GpuAllocatedIdle", []),
]


def _capacity(node: str, gpus: int) -> dict[str, str]:
    return {"series": f'kube_node_status_capacity{{node="{node}",resource="nvidia_com_gpu",unit="integer"}}',
            "values": f"{gpus}x20"}


def _reporting(count: int, node: str = "gpu-node-a") -> list[dict[str, str]]:
    return [_series("DCGM_FI_DEV_GPU_TEMP", "40x20", Hostname=node, gpu=str(i), UUID=f"GPU-{i}") for i in range(count)]


MISSING = [
    ("a node reporting 7 of its 8 GPUs", [_capacity("gpu-node-a", 8), *_reporting(7)], 1, [
        _alert("GpuMissing", 1, {"node": "gpu-node-a"})]),
    ("a node reporting all 8", [_capacity("gpu-node-a", 8), *_reporting(8)], 1, []),
    ("a GPU node whose exporter reports nothing", [_capacity("gpu-node-b", 8), *_reporting(8)], 1, [
        _alert("GpuMissing", 8, {"node": "gpu-node-b"})]),
    ("time-sliced 4 ways, 8 GPUs advertise 32", [_capacity("gpu-node-a", 32), *_reporting(8)], 4, []),
    ("time-sliced 4 ways, a GPU lost", [_capacity("gpu-node-a", 28), *_reporting(8)], 4, []),
    ("time-sliced 4 ways, a GPU missing from the exporter", [_capacity("gpu-node-a", 32), *_reporting(7)], 4, [
        _alert("GpuMissing", 1, {"node": "gpu-node-a"})]),
]


def _promtool_test(promtool, tmp_path, rules: list[dict], tests: list[dict]) -> subprocess.CompletedProcess:
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": [{"name": health.RULE_GROUP, "rules": rules}]}))
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump({
        "rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": tests}))
    return subprocess.run([promtool, "test", "rules", "tests.yaml"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)


def _test(series, at, alert, expected) -> dict:
    return {"interval": "1m", "input_series": series,
            "alert_rule_test": [{"eval_time": at, "alertname": alert, "exp_alerts": expected}]}


def test_each_alert_fires_on_its_failure_and_not_on_a_healthy_gpu(promtool, tmp_path):
    rules = health.alerting_rules(exporter_job="dcgm-exporter")
    done = _promtool_test(promtool, tmp_path, rules, [_test(*case[1:]) for case in CASES])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout
    covered = {case[3] for case in CASES} | {"GpuMissing"}
    assert covered == {s.alert for s in health.SIGNALS if s.alerts}  # every alert has its cases


@pytest.mark.parametrize("what, series, replicas, expected", MISSING, ids=[case[0] for case in MISSING])
def test_a_gpu_missing_from_the_exporter_is_counted_against_what_the_kubelet_advertises(
        promtool, tmp_path, what, series, replicas, expected):
    rules = health.alerting_rules(exporter_job="dcgm-exporter", replicas=replicas)
    done = _promtool_test(promtool, tmp_path, rules, [_test(series, "15m", "GpuMissing", expected)])
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_test_that_expects_the_wrong_alert_fails(promtool, tmp_path):
    """The harness itself: promtool fails a case whose expectation is wrong, so the cases above can fail."""
    rules = health.alerting_rules(exporter_job="dcgm-exporter")
    done = _promtool_test(promtool, tmp_path, rules, [_test(
        [_series("DCGM_FI_DEV_XID_ERRORS", "0 0 48x10")], "5m", "GpuXidHardwareError", [])])
    assert done.returncode != 0 and "GpuXidHardwareError" in done.stdout + done.stderr


def test_the_rules_pass_promtools_check(promtool, tmp_path):
    for replicas, mig in ((1, False), (4, False), (1, True)):
        rule = health.prometheus_rule("nvidia-gpu", exporter_job="nvidia-dcgm-exporter", replicas=replicas, mig=mig)
        (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
        done = subprocess.run([promtool, "check", "rules", "rules.yaml"], cwd=tmp_path, capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr


def test_with_mig_the_gpu_count_alert_is_left_out():
    """The kubelet then advertises MIG instances, not GPUs: the count would not compare."""
    names = [r["alert"] for r in health.alerting_rules(exporter_job="dcgm-exporter", mig=True)]
    assert "GpuMissing" not in names and len(names) == len([s for s in health.SIGNALS if s.alerts]) - 1


CRD = ROOT / "tests" / "data" / "prometheus-operator-crds" / "monitoring.coreos.com_prometheusrules.yaml"


def test_the_prometheus_rule_is_what_the_operators_crd_accepts():
    # the schema as is: its Go regex for a Thanos-only field (``(?i)`` mid-pattern) is not one Python compiles
    validator = jsonschema.Draft202012Validator(_strict(helm.crd_schema(yaml.safe_load(CRD.read_text()))))
    rule = health.prometheus_rule("nvidia-gpu", exporter_job="dcgm-exporter", labels={"release": "monitoring"})
    validator.validate(rule)
    assert rule["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "gpuready", "release": "monitoring"}
    for broken in ({"groups": [{"rules": []}]}, {"groups": [{"name": "g", "rules": [{"alert": "A", "for": "1 hour",
                                                                                        "expr": "up"}]}]}):
        with pytest.raises(jsonschema.ValidationError):  # a group without its name; a duration Prometheus refuses
            validator.validate({**rule, "spec": broken})


def _csv_fields(text: str) -> list[str]:
    return [line.split(",")[0].strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def test_every_field_an_alert_reads_is_in_the_list_the_exporter_is_given():
    given = set(_csv_fields(health.counters_csv()))
    for signal in health.SIGNALS:
        assert set(signal.fields) <= given, signal.alert
        for field in re.findall(r"DCGM_FI_\w+", health.expression(signal, exporter_job="j")):
            assert field in given and field in signal.fields, (signal.alert, field)


def test_the_chart_default_list_is_the_pinned_charts_own():
    """``customMetrics`` replaces the chart's list whole: what it collects by default is kept, read from the chart as
    Helm renders it."""
    objects = helm.render("dcgm-exporter", "4.8.2", {}, name="dcgm-exporter", namespace="nvidia-gpu")
    (config,) = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] ==
                 "exporter-metrics-config-map"]
    chart = [f for f in _csv_fields(config["data"]["metrics"]) if f != "DCGM_FI_DRIVER_VERSION"]
    assert [name for name, _, _ in health.DEFAULT_COUNTERS] == chart


def test_the_alerts_hardware_xids_are_the_probes():
    assert set(health.XID_HARDWARE) == core.XID_DRAIN
    assert not set(health.XID_APPLICATION) & core.XID_DRAIN


def _plan(install: str, **options):
    from gpuready_components.k8s_gpu.args import GpuSoftwareOptions, K8sGpuSoftwareArgs
    from gpuready_components.k8s_gpu.install import plan

    return plan(K8sGpuSoftwareArgs(platform="eks", node_image="eks/AL2023_x86_64_NVIDIA",
                                   options=GpuSoftwareOptions(install=install, **options)))


def _rendered(install: str, **options) -> list[dict]:
    (release,) = [r for r in _plan(install, **options).releases if "dcgm-exporter" in r.installs]
    return helm.render(release.chart.name, release.chart.version, release.values, name=release.chart.name,
                       namespace="nvidia-gpu")


def test_the_exporter_chart_is_given_the_list_and_reads_it_where_its_arguments_say():
    objects = _rendered("device-plugin")
    (config,) = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] ==
                 "exporter-metrics-config-map"]
    assert config["data"]["metrics"].strip() == health.counters_csv().strip()
    (daemonset,) = [o for o in objects if o["kind"] == "DaemonSet"]
    pod = daemonset["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    path = container["args"][container["args"].index("-f") + 1]
    (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == path]
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    assert volume["configMap"]["name"] == "exporter-metrics-config-map"
    assert {item["key"] for item in volume["configMap"]["items"]} == {"metrics"}
    # the Prometheus Operator names the scrape job after the Service (the chart's ServiceMonitor sets no jobLabel)
    (service,) = [o for o in objects if o["kind"] == "Service"]
    assert service["metadata"]["name"] == health.EXPORTER_JOBS["dcgm-exporter"]


def test_the_gpu_operator_is_given_the_list_as_its_exporter_config():
    objects = _rendered("gpu-operator")
    (config,) = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] ==
                 health.METRICS_CONFIG_MAP]
    assert config["data"]["dcgm-metrics.csv"].strip() == health.counters_csv().strip()
    (policy,) = [o for o in objects if o["kind"] == "ClusterPolicy"]
    assert policy["spec"]["dcgmExporter"]["config"] == {"name": health.METRICS_CONFIG_MAP}


def test_the_alerts_come_with_the_prometheus_operator_and_an_exporter_of_ours():
    assert _plan("device-plugin").prometheus_rule is None
    assert _plan("device-plugin", prometheus_operator=True, dcgm_exporter=True).prometheus_rule is not None
    for install, job in (("device-plugin", "dcgm-exporter"), ("gpu-operator", "nvidia-dcgm-exporter")):
        rule = _plan(install, prometheus_operator=True, time_slicing_replicas=4).prometheus_rule
        rules = {r["alert"]: r for r in rule["spec"]["groups"][0]["rules"]}
        assert rules["DcgmExporterDown"]["expr"] == f'up{{job="{job}"}} == 0'
        assert "/ 4" in rules["GpuMissing"]["expr"]


def test_each_alert_names_probe_checks_that_exist():
    from gpuready.probe.checks import CHECKS

    names = {name for row in CHECKS for name in row.names}
    for signal in health.SIGNALS:
        assert set(signal.probe) <= names, (signal.alert, set(signal.probe) - names)


def test_nvidias_dashboard_ships_for_grafanas_sidecar_and_reads_only_collected_metrics():
    config = health.dashboard_config_map("nvidia-gpu")
    assert config["metadata"]["labels"]["grafana_dashboard"] == "1"
    (text,) = config["data"].values()
    dashboard = json.loads(text)
    assert dashboard["title"] == "NVIDIA DCGM Exporter Dashboard"
    queried = set(re.findall(r"DCGM_FI_\w+", text))
    assert queried and queried <= set(_csv_fields(health.counters_csv())), queried - set(_csv_fields(
        health.counters_csv()))


def test_each_xid_the_probe_drains_for_has_one_signal_with_a_repair():
    for xid in health.XID_HARDWARE:
        (signal,) = [s for s in health.SIGNALS if xid in s.xids]
        assert signal.repair == (health.REPLACE if xid in health.XID_REPLACE else health.REBOOT), xid
    assert all(s.repair == "" for s in health.SIGNALS if set(s.xids) & set(health.XID_APPLICATION))


@pytest.mark.parametrize("checks, action, names", [
    ([Check("gpu3.xid", core.FAIL, "79 (GPU has fallen off the bus.), 13", "none")], health.REPLACE,
     ["GpuXidUnrecoverable"]),
    ([Check("gpu3.xid", core.FAIL, "48 (DBE (Double Bit Error) ECC Error (0x1a2b).)", "none")], health.REBOOT,
     ["GpuXidHardwareError"]),
    ([Check("pci 0:3b:00.xid", core.FAIL, "64", "none")], health.REPLACE, ["GpuXidUnrecoverable"]),
    ([Check("gpu0.xid_under_load", core.FAIL, "13 (Graphics Exception)", "none")], "", []),
    ([Check("gpu2.row_remap_pending", core.FAIL, "Yes", "No"),
      Check("gpu5.row_remap_failure", core.FAIL, "Yes", "No")], health.REPLACE, ["GpuRowRemapFailure"]),
    ([Check("gpu1.ecc_uncorrected", core.FAIL, 2, 0)], health.REBOOT, ["GpuDoubleBitEccError"]),
    ([Check("gpu_count", core.FAIL, 7, 8)], health.REPLACE, ["GpuMissing"]),
    ([Check("gpu0.fabric", core.FAIL, "In Progress/N/A", "Completed/Success")], health.REBOOT,
     ["GpuFabricNotReady"]),
    ([Check("gpu0.fabric", core.FAIL, "Completed/Failure", "Completed/Success")], health.REPLACE,
     ["GpuFabricError"]),
    ([Check("gpu4.recovery_action", core.FAIL, "Reboot", "None")], health.REBOOT, ["GpuRecoveryActionPending"]),
    ([Check("gpu0.bf16_matmul_tflops", core.FAIL, 310.0, 650.0),
      Check("gpu0.memory_in_use", core.FAIL, "70000 of 81559 MiB (86%)", "<= 5%")], "", []),
    ([Check("gpu3.xid", core.WARN, "79 (GPU has fallen off the bus.)", "none")], "", []),
])
def test_a_failed_node_gets_the_strongest_repair_its_failures_need(checks, action, names):
    """What ``gpuready sweep --repair`` does of a probe's report: the probe's own check names and values."""
    got, why = health.repair_action(checks)
    assert got == action
    for name in names:
        assert name in why
    if not action:
        assert why.startswith("no reboot or replacement cures what failed")


def test_each_repair_signal_names_a_check_the_probe_fails_on():
    """A signal no failed check can reach would never be repaired."""
    assert {s.repair for s in health.SIGNALS} == {"", health.REBOOT, health.REPLACE}
    for signal in health.SIGNALS:
        if signal.repair:
            assert signal.probe, signal.alert


FOR = [
    # (series, alert, the minute its condition first holds, its for: in minutes, the alert once it fires): it must
    # fire exactly its ``for:`` later, and not a minute sooner
    ([_series("DCGM_FI_DEV_ROW_REMAP_PENDING", "0 1x20")], "GpuRowRemapPending", 1, 5,
     _alert("GpuRowRemapPending", 1, GPU)),
    ([_series("DCGM_FI_DEV_THERMAL_VIOLATION", "0+1000000x30")], "GpuThermalThrottling", 1, 10,
     _alert("GpuThermalThrottling", 16666.666666666668, GPU)),
    ([_series("DCGM_FI_DEV_POWER_VIOLATION", "0+1000x60")], "GpuPowerThrottling", 1, 30,
     _alert("GpuPowerThrottling", 16.666666666666668, GPU)),
    ([_series("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "0+1x30"),
      _series("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "0x30")], "GpuNvlinkErrors", 1, 10,
     _alert("GpuNvlinkErrors", 10, GPU)),
    ([{"series": 'up{job="dcgm-exporter",instance="10.0.1.5:9400"}', "values": "1 1 0x10"}], "DcgmExporterDown", 2, 5,
     _alert("DcgmExporterDown", 0, {"job": "dcgm-exporter", "instance": "10.0.1.5:9400"})),
    ([_series("DCGM_FI_DEV_GPU_UTIL", "0x90", exported_pod="train-0", exported_namespace="team-a")],
     "GpuAllocatedIdle", 0, 60, _alert("GpuAllocatedIdle", 0, {**GPU, "exported_pod": "train-0",
                                                          "exported_namespace": "team-a"})),
    ([_capacity("gpu-node-a", 8), *_reporting(7)], "GpuMissing", 0, 10, _alert("GpuMissing", 1, {"node": "gpu-node-a"})),
]


def _minutes(duration: str) -> int:
    return int(duration[:-1]) * {"m": 1, "h": 60}[duration[-1]]


def test_each_alert_waits_its_for_duration_and_not_a_minute_less(promtool, tmp_path):
    """Each alert with a ``for:``, a minute before it may fire (silent) and at the minute it does: halving or
    doubling a duration fails one side."""
    rules = health.alerting_rules(exporter_job="dcgm-exporter")
    waits = {s.alert: _minutes(s.for_) for s in health.SIGNALS if s.alerts and s.for_ != "0m"}
    assert {case[1]: case[3] for case in FOR} == waits  # every alert that waits has its two sides, at its for:
    tests = [_test(series, f"{start + wait + shift}m", alert, [fired] if shift == 0 else [])
             for series, alert, start, wait, fired in FOR for shift in (-1, 0)]
    done = _promtool_test(promtool, tmp_path, rules, tests)
    assert done.returncode == 0, done.stdout + done.stderr


def test_an_alert_without_a_wait_has_no_for_and_every_other_keeps_its_own():
    """Prometheus reads a missing ``for`` as 0: the rule file says it only where the alert waits."""
    rules = {r["alert"]: r for r in health.alerting_rules(exporter_job="dcgm-exporter")}
    for signal in (s for s in health.SIGNALS if s.alerts):
        if signal.for_ == "0m":
            assert "for" not in rules[signal.alert], signal.alert
        else:
            assert rules[signal.alert]["for"] == signal.for_, signal.alert
    assert "for" not in rules["GpuXidHardwareError"] and rules["GpuRowRemapPending"]["for"] == "5m"


def test_the_gpu_count_is_divided_only_by_a_time_slicing_replica_count_above_one():
    (missing,) = [s for s in health.SIGNALS if s.alert == "GpuMissing"]
    plain = health.expression(missing, exporter_job="dcgm-exporter")
    assert plain == health.expression(missing, exporter_job="dcgm-exporter", replicas=1)
    assert f"({health.NODE_GPUS}) - (" in plain and " / " not in plain
    assert f"({health.NODE_GPUS} / 2) - (" in health.expression(missing, exporter_job="dcgm-exporter", replicas=2)
    assert f"({health.NODE_GPUS} / 4) unless" in health.expression(missing, exporter_job="x", replicas=4)


def test_the_prometheus_rule_is_named_placed_and_holds_the_alerts_it_was_asked_for():
    rule = health.prometheus_rule("monitoring", exporter_job="dcgm-exporter")
    assert (rule["apiVersion"], rule["kind"]) == ("monitoring.coreos.com/v1", "PrometheusRule")
    assert rule["metadata"] == {"name": "gpuready-gpu-health", "namespace": "monitoring",
                                "labels": {"app.kubernetes.io/managed-by": "gpuready"}}
    (group,) = rule["spec"]["groups"]
    assert group["name"] == "gpuready-gpu-health"
    assert group["rules"] == health.alerting_rules(exporter_job="dcgm-exporter", replicas=1, mig=False)
    assert "GpuMissing" in [r["alert"] for r in group["rules"]]
    with_mig = health.prometheus_rule("monitoring", exporter_job="dcgm-exporter", mig=True)["spec"]["groups"][0]
    assert "GpuMissing" not in [r["alert"] for r in with_mig["rules"]]
    sliced = health.prometheus_rule("monitoring", exporter_job="dcgm-exporter", replicas=4)["spec"]["groups"][0]
    assert sliced["rules"] == health.alerting_rules(exporter_job="dcgm-exporter", replicas=4)


def test_the_dashboard_is_a_config_map_the_api_server_accepts_under_its_own_name():
    import kubernetes_validate

    config = health.dashboard_config_map("monitoring")
    kubernetes_validate.validate(config, "1.34.0", strict=True)
    assert (config["apiVersion"], config["kind"]) == ("v1", "ConfigMap")
    assert config["metadata"] == {"name": "gpuready-dcgm-dashboard", "namespace": "monitoring",
                                  "labels": {"app.kubernetes.io/managed-by": "gpuready", "grafana_dashboard": "1"}}
    assert list(config["data"]) == ["dcgm-exporter-dashboard.json"]


def test_why_a_node_is_not_repaired_names_every_failed_check_or_says_none_failed():
    slow = Check("gpu0.bf16_matmul_tflops", core.FAIL, 310.0, 650.0)
    busy = Check("gpu1.memory_in_use", core.FAIL, "70000 of 81559 MiB (86%)", "<= 5%")
    assert health.repair_action([slow, busy]) == (
        "", "no reboot or replacement cures what failed (gpu0.bf16_matmul_tflops, gpu1.memory_in_use)")
    assert health.repair_action([Check("gpu0.xid", core.PASS, "none", "none")]) == (
        "", "no reboot or replacement cures what failed (no failed check)")
    assert health.repair_action([]) == ("", "no reboot or replacement cures what failed (no failed check)")


def test_why_a_node_is_repaired_lists_each_check_that_needs_that_repair_and_no_weaker_one():
    ecc = Check("gpu1.ecc_uncorrected", core.FAIL, 2, 0)
    pending = Check("gpu2.row_remap_pending", core.FAIL, "Yes", "No")
    failure = Check("gpu5.row_remap_failure", core.FAIL, "Yes", "No")
    (dbe,) = [s for s in health.SIGNALS if s.alert == "GpuDoubleBitEccError"]
    (remap,) = [s for s in health.SIGNALS if s.alert == "GpuRowRemapPending"]
    assert health.repair_action([ecc, pending]) == (
        health.REBOOT, f"gpu1.ecc_uncorrected (GpuDoubleBitEccError: {dbe.action}); "
                       f"gpu2.row_remap_pending (GpuRowRemapPending: {remap.action})")
    action, why = health.repair_action([ecc, failure, pending])
    assert action == health.REPLACE and why.startswith("gpu5.row_remap_failure (GpuRowRemapFailure: ")
    assert ";" not in why
