"""``gpuready plan`` on a Kubernetes stack with the Prometheus Operator: the GPU alerts it would create, how many of
each severity, and whether the Prometheus's selector would pick them, and the teams' GPU-hours rules beside them; on GKE with managed alerts, who evaluates them."""

from __future__ import annotations

import json

import yaml

from gpuready.cli import main
from tests.conftest import ROOT


def _teams(stack: str) -> str:
    """The teams the reference stack declares, as the plan lists them."""
    config = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())["config"]
    return ", ".join(t["name"] for t in config["gpuready:teams"])


def _plan(tmp_path, capsys, labels: dict | None) -> tuple[str, dict]:
    text = (ROOT / "stacks" / "Pulumi.eks.yaml").read_text().replace(
        "config:\n", "config:\n  gpuready:prometheusOperator: true\n" + (
            "  gpuready:prometheusLabels:\n" + "".join(f"    {k}: {v}\n" for k, v in labels.items())
            if labels else ""), 1)
    stack = tmp_path / "Pulumi.eks.yaml"
    stack.write_text(text)
    assert main(["plan", "--stack-file", str(stack), "--no-policies"]) == 0
    out = capsys.readouterr().out
    assert main(["plan", "--stack-file", str(stack), "--no-policies", "--json"]) == 0
    return out, json.loads(capsys.readouterr().out)


def test_the_alerts_are_shown_with_their_severities_and_the_label_the_prometheus_picks(tmp_path, capsys):
    text, result = _plan(tmp_path, capsys, {"release": "monitoring"})
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if "monitoring.coreos.com/v1:PrometheusRule" in line)
    assert lines[at].split() == ["kubernetes:monitoring.coreos.com/v1:PrometheusRule", "eks-gpu-software-gpu-alerts"]
    assert [line.strip() for line in lines[at + 1:at + 3]] == [
        "alerts: 13 (6 critical, 4 warning, 3 info)", "selected by: release=monitoring"]
    rules = {r["name"]: r["facts"] for r in result["resources"] if r["type"].endswith(":PrometheusRule")}
    assert rules["eks-gpu-software-gpu-alerts"] == {"alerts": "13 (6 critical, 4 warning, 3 info)",
                                                    "selected by": "release=monitoring"}


def test_the_teams_gpu_hours_rules_are_shown_beside_the_alerts_with_their_teams(tmp_path, capsys):
    _, result = _plan(tmp_path, capsys, {"release": "monitoring"})
    rules = {r["name"]: r["facts"] for r in result["resources"] if r["type"].endswith(":PrometheusRule")}
    assert rules["eks-gpu-hours"] == {
        "records": "team_model:gpuready_gpus_allocated:count, team_model:gpuready_gpus_used:sum, "
                   "team_model:gpuready_gpu_hours_allocated:sum1h, team_model:gpuready_gpu_hours_used:sum1h",
        "per team": _teams("eks"), "selected by": "release=monitoring"}


def test_a_rule_with_no_label_is_told_a_selecting_prometheus_ignores_it(tmp_path, capsys):
    _, result = _plan(tmp_path, capsys, None)
    rules = [r for r in result["resources"] if r["type"].endswith(":PrometheusRule")]
    assert len(rules) == 2  # the alerts and the teams' GPU-hours
    for rule in rules:
        assert rule["facts"]["selected by"].startswith("no label: a Prometheus that selects rules by label does not")


def test_each_eks_gpu_node_group_shows_its_repair_and_its_limits(capsys):
    assert main(["plan", "--stack", "eks", "--no-policies", "--json"]) == 0
    groups = {r["name"]: r["facts"] for r in json.loads(capsys.readouterr().out)["resources"]
              if r["type"] == "aws:eks/nodeGroup:NodeGroup"}
    for name in ("eks-gpu", "eks-gpu-4x"):
        assert groups[name]["repair"] == ("reboot on 14 GPU reasons, replace on 4 GPU reasons; 1 at a time; stops "
                                          "above 20% unhealthy")
    assert "repair" not in groups["eks-system"]


def test_gke_managed_alerts_are_shown_with_who_evaluates_them(tmp_path, capsys):
    stack = tmp_path / "Pulumi.gke.yaml"
    text = (ROOT / "stacks" / "Pulumi.gke.yaml").read_text()
    assert "  gpuready:managedDcgm: true\n" in text
    stack.write_text(text.replace("  gpuready:managedDcgm: true\n",
                                  "  gpuready:managedDcgm: false\n  gpuready:managedAlerts: true\n"))
    assert main(["plan", "--stack-file", str(stack), "--no-policies", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    rules = {r["name"]: r["facts"] for r in result["resources"] if r["type"].endswith(":ClusterRules")}
    evaluator = "Managed Service for Prometheus (its rule evaluator, over this cluster's metrics)"
    assert rules["gke-gpu-alerts"] == {"alerts": "12 (5 critical, 4 warning, 3 info)", "evaluated by": evaluator}
    assert rules["gke-gpu-hours"]["per team"] == _teams("gke")
    assert rules["gke-gpu-hours"]["evaluated by"] == evaluator
    assert [r for r in result["resources"] if r["type"].endswith(":PodMonitoring")]


def _pool_facts(capsys, stack: str, kind: str) -> dict[str, dict]:
    assert main(["plan", "--stack", stack, "--no-policies", "--json"]) == 0
    return {r["name"]: r["facts"] for r in json.loads(capsys.readouterr().out)["resources"] if r["type"] == kind}


def test_every_platforms_gpu_pool_says_how_its_failing_nodes_are_repaired(capsys):
    gke = _pool_facts(capsys, "gke", "gcp:container/nodePool:NodePool")
    assert gke["gke-gpu"]["repair"].startswith("GKE auto-repair: recreates a node that stays not ready")
    flex = _pool_facts(capsys, "gke-flex-start", "gcp:container/nodePool:NodePool")
    assert flex["gke-gpu"]["repair"] == "none: a queued-provisioning node lives for one request"
    aks = _pool_facts(capsys, "aks", "azure-native:containerservice:AgentPool")
    assert all(f["repair"].startswith("AKS auto-repair (always on)") for f in aks.values()) and aks
    karpenter = _pool_facts(capsys, "eks-karpenter-reserved", "kubernetes:karpenter.sh/v1:NodePool")
    assert [f["repair"] for f in karpenter.values()] == [
        "Karpenter replaces a node whose GPU condition stays false (nodeRepair gate on)"]


def test_an_auto_mode_gpu_node_pool_is_repaired_by_auto_mode(tmp_path, capsys):
    stack = tmp_path / "Pulumi.eks.yaml"
    stack.write_text((ROOT / "stacks" / "Pulumi.eks.yaml").read_text().replace(
        "config:\n", "config:\n  gpuready:autoscaler: auto-mode\n", 1))
    assert main(["plan", "--stack-file", str(stack), "--no-policies", "--json"]) == 0
    pools = [r["facts"] for r in json.loads(capsys.readouterr().out)["resources"]
             if r["type"] == "kubernetes:karpenter.sh/v1:NodePool"]
    assert pools and all(f["repair"] == "EKS Auto Mode repairs its nodes itself, GPU conditions included"
                         for f in pools)
