"""GPU-hours per team (``components/k8s_gpu/gpu_hours.py``) as Prometheus records them: ``promtool test rules`` on
series shaped as Prometheus stores the exporter's through its chart's ServiceMonitor (``honorLabels: false``: the
workload's namespace and pod are ``exported_namespace`` and ``exported_pod``; ``namespace``, ``pod``, ``container``,
``service``, ``endpoint``, ``job`` and ``instance`` are the scrape's), ``promtool check rules``, and the
``PrometheusRule`` against the Prometheus Operator's CRD."""

from __future__ import annotations

import subprocess

import jsonschema
import pytest
import yaml

from gpuready_components.k8s_gpu import gpu_hours, health
from gpuready_components.teams import TeamArgs
from tests import helm

from .kueue_schemas import _strict
from .test_health import CRD, promtool  # noqa: F401 (the fixture)

H100, L4 = "NVIDIA H100 80GB HBM3", "NVIDIA L4"
TEAMS = (TeamArgs("research", 4), TeamArgs("prod", 2, namespace="ml-prod"))
"""Two teams; ``prod``'s jobs run in a namespace of another name."""
JOB = health.EXPORTER_JOBS["dcgm-exporter"]


def _gpu(node: str, index: int, model: str) -> dict[str, str]:
    """A GPU's labels as dcgm-exporter writes them."""
    return {"DCGM_FI_DRIVER_VERSION": "570.133.20", "Hostname": node, "UUID": f"GPU-{node}-{index}",
            "device": f"nvidia{index}", "gpu": str(index), "modelName": model, "pci_bus_id": f"00000000:{index:02x}:00.0"}


def _scrape(node: str) -> dict[str, str]:
    """The target labels the ServiceMonitor's scrape of the exporter pod on ``node`` adds."""
    return {"job": JOB, "service": JOB, "endpoint": "metrics", "instance": f"10.0.1.{len(node)}:9400",
            "namespace": "nvidia-gpu", "pod": f"dcgm-exporter-{node}", "container": "exporter"}


def _util(node: str, index: int, model: str, values: str, holder: str = "") -> dict[str, str]:
    """``DCGM_FI_DEV_GPU_UTIL`` of a GPU as stored; ``holder``: ``namespace/pod`` holding it (none: no pod)."""
    labels = {**_gpu(node, index, model), **_scrape(node)}
    if holder:
        namespace, pod = holder.split("/")
        labels.update(exported_namespace=namespace, exported_pod=pod, exported_container="main")
    return {"series": "DCGM_FI_DEV_GPU_UTIL{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}",
            "values": values}


SERIES = [
    # research's train-0 holds two GPUs all along: one busy, one half busy
    _util("node-a", 0, H100, "100x120", "research/train-0"),
    _util("node-a", 1, H100, "50x120", "research/train-0"),
    # time-slicing: a second pod of research on the same GPU; the GPU counts once
    _util("node-a", 1, H100, "50x120", "research/train-1"),
    # prod's serve-0 takes a GPU at minute 31 and leaves it idle: allocated, not used
    _util("node-a", 2, H100, "0x30 stale"),
    _util("node-a", 2, H100, "_x31 0x89", "ml-prod/serve-0"),
    # a GPU no pod holds: no team's
    _util("node-a", 3, H100, "0x120"),
    # a namespace that is no team's
    _util("node-b", 0, L4, "80x120", "sandbox/notebook-0"),
    # prod on another model, a quarter busy
    _util("node-b", 1, L4, "25x120", "ml-prod/embed-0"),
    # research's eval-0 moves at minute 30: its series on node-c goes stale (the scrape no longer sees it), the GPU
    # it left reports no pod, and the same pod reports from node-d
    _util("node-c", 0, H100, "50x29 stale", "research/eval-0"),
    _util("node-c", 0, H100, "_x30 0x90"),
    _util("node-d", 0, H100, "_x30 50x90", "research/eval-0"),
]


def _sample(record: str, team: str, model: str, value: float) -> dict:
    return {"labels": f'{record}{{modelName="{model}", team="{team}"}}', "value": value}


def _expect(at: str, record: str, samples: list[tuple[str, str, float]]) -> dict:
    return {"eval_time": at, "expr": record, "exp_samples": [_sample(record, *s) for s in samples]}


CASES = [
    # at minute 20: research holds 3 H100s (train-0's two, eval-0's), busy 1 + 0.5 + 0.5; prod only its L4
    _expect("20m", gpu_hours.ALLOCATED, [("research", H100, 3), ("prod", L4, 1)]),
    _expect("20m", gpu_hours.USED, [("research", H100, 2), ("prod", L4, 0.25)]),
    # the minute eval-0 moves: still 3, not 4 (the stale series no longer counts) nor 2
    _expect("29m", gpu_hours.ALLOCATED, [("research", H100, 3), ("prod", L4, 1)]),
    _expect("31m", gpu_hours.ALLOCATED, [("research", H100, 3), ("prod", H100, 1), ("prod", L4, 1)]),
    _expect("30m", gpu_hours.ALLOCATED, [("research", H100, 3), ("prod", L4, 1)]),
    # at minute 60: prod's idle H100 counts as allocated, not as used
    _expect("60m", gpu_hours.ALLOCATED, [("research", H100, 3), ("prod", H100, 1), ("prod", L4, 1)]),
    _expect("60m", gpu_hours.USED, [("research", H100, 2), ("prod", H100, 0), ("prod", L4, 0.25)]),
    # GPU-hours over the last hour (the 60 samples of minutes 1 to 60): research held 3 GPUs the whole hour, the
    # move included; prod held its H100 for 30 minutes (31 to 60) and its L4 for the hour
    _expect("60m", gpu_hours.HOURS_ALLOCATED, [("research", H100, 3), ("prod", H100, 0.5), ("prod", L4, 1)]),
    _expect("60m", gpu_hours.HOURS_USED, [("research", H100, 2), ("prod", H100, 0), ("prod", L4, 0.25)]),
    # the window slides: at minute 90 prod has held its H100 for the whole last hour
    _expect("90m", gpu_hours.HOURS_ALLOCATED, [("research", H100, 3), ("prod", H100, 1), ("prod", L4, 1)]),
]


def _run(promtool, tmp_path, rules: list[dict], tests: list[dict]) -> subprocess.CompletedProcess:
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": [
        {"name": gpu_hours.RULE_GROUP, "interval": gpu_hours.INTERVAL, "rules": rules}]}))
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump({
        "rule_files": ["rules.yaml"], "evaluation_interval": gpu_hours.INTERVAL, "tests": tests}))
    return subprocess.run([promtool, "test", "rules", "tests.yaml"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)


def _rules(teams=TEAMS) -> list[dict]:
    return gpu_hours.recording_rules(teams, exporter_job=JOB)


def test_each_team_gets_the_gpus_its_namespace_holds_and_the_hours_they_add_up_to(promtool, tmp_path):
    done = _run(promtool, tmp_path, _rules(), [{"interval": "1m", "input_series": SERIES, "promql_expr_test": CASES}])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


@pytest.mark.parametrize("wrong", [
    _expect("60m", gpu_hours.ALLOCATED, [("research", H100, 3), ("prod", H100, 1), ("prod", L4, 1),
                                         ("sandbox", L4, 1)]),
    _expect("60m", gpu_hours.HOURS_ALLOCATED, [("research", H100, 3), ("prod", H100, 31 / 60), ("prod", L4, 1)]),
], ids=["a namespace of no team counted", "a GPU held from minute 31 counted from minute 30"])
def test_a_wrong_expectation_fails(promtool, tmp_path, wrong):
    """The harness itself: promtool fails a case whose expectation is wrong, so the cases above can fail."""
    done = _run(promtool, tmp_path, _rules(), [{"interval": "1m", "input_series": SERIES,
                                                "promql_expr_test": [wrong]}])
    assert done.returncode != 0, done.stdout


def test_another_scrape_of_the_same_metric_is_not_counted(promtool, tmp_path):
    """The rules read the exporter's job only: e.g. GKE's managed DCGM exporter scraped beside gpuready's."""
    other = dict(_util("node-a", 0, H100, "100x120", "research/train-0"))
    other["series"] = other["series"].replace(f'job="{JOB}"', 'job="gke-managed-dcgm"')
    done = _run(promtool, tmp_path, _rules(), [{"interval": "1m", "input_series": [SERIES[0], other],
                                                "promql_expr_test": [_expect("10m", gpu_hours.ALLOCATED,
                                                                             [("research", H100, 1)])]}])
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_rules_pass_promtools_check(promtool, tmp_path):
    rule = gpu_hours.prometheus_rule("nvidia-gpu", TEAMS, exporter_job=health.EXPORTER_JOBS["gpu-operator"])
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    done = subprocess.run([promtool, "check", "rules", "rules.yaml"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "6 rules found" in done.stdout  # one pair per team and the two sums


def test_the_prometheus_rule_is_what_the_operators_crd_accepts():
    validator = jsonschema.Draft202012Validator(_strict(helm.crd_schema(yaml.safe_load(CRD.read_text()))))
    rule = gpu_hours.prometheus_rule("nvidia-gpu", TEAMS, exporter_job=JOB, labels={"release": "monitoring"})
    validator.validate(rule)
    # the object the Prometheus Operator reads (the CRD's schema leaves apiVersion and kind free), where it was asked
    assert (rule["apiVersion"], rule["kind"]) == ("monitoring.coreos.com/v1", "PrometheusRule")
    assert (rule["metadata"]["name"], rule["metadata"]["namespace"]) == ("gpuready-gpu-hours", "nvidia-gpu")
    assert rule["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "gpuready", "release": "monitoring"}
    (group,) = rule["spec"]["groups"]
    assert group["interval"] == "1m"
    assert [r["record"] for r in group["rules"]] == [gpu_hours.ALLOCATED, gpu_hours.USED] * 2 + [
        gpu_hours.HOURS_ALLOCATED, gpu_hours.HOURS_USED]
    assert [r.get("labels") for r in group["rules"][:4]] == [{"team": "research"}] * 2 + [{"team": "prod"}] * 2
    assert all(f'{{job="{JOB}", exported_namespace="' in r["expr"] for r in group["rules"][:4])  # the exporter's scrape


def test_the_metric_the_rules_read_is_one_the_exporter_is_given():
    """``DCGM_FI_DEV_GPU_UTIL`` is in the chart's default list (``test_health`` holds it to the pinned chart's)."""
    given = {line.split(",")[0] for line in health.counters_csv().splitlines() if not line.startswith("#")}
    assert gpu_hours.UTIL in given
    assert gpu_hours.UTIL in {name for name, _, _ in health.DEFAULT_COUNTERS}
