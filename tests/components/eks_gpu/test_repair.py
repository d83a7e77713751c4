"""Node repair of the EKS GPU node groups (``components/eks_gpu/repair.py``): the rendered ``nodeRepairConfig``
against EKS's own model (botocore), its reasons against the node monitoring agent's (v1.7.0 ``reasons.yaml``), the
actions against the Xid classes the probe and the alerts use, and the add-on that reports the conditions."""

from __future__ import annotations

import re

import botocore.session
import pytest
import yaml

from gpuready_components.eks_gpu import ExistingClusterArgs, NodeRepairArgs, repair
from gpuready_components.errors import ConfigError
from gpuready_components.k8s_gpu import health
from tests.conftest import ROOT

from .helpers import NODE_GROUP, build

REASONS = ROOT / "tests" / "data" / "eks-node-monitoring-agent-v1.7.0" / "reasons.yaml"
ADDON = "aws:eks/addon:Addon"


@pytest.fixture
def built(render):
    return build(render)


def _agent_reasons() -> dict[str, str]:
    """The agent's GPU reasons as regular expressions (``NvidiaXID%dError`` -> ``NvidiaXID\\d+Error``) -> their
    default severity."""
    gpu = yaml.safe_load(REASONS.read_text())[repair.CONDITION]
    return {re.escape(r["Template"]).replace("%d", r"\d+"): r["DefaultSeverity"] for r in gpu.values()}


def _shape(name: str):
    return botocore.session.get_session().get_service_model("eks").shape_for(name)


def _check_against(shape, value, where="nodeRepairConfig") -> None:
    """``value`` (the API's names) as botocore's ``shape`` allows: known members, types, enums, ranges."""
    if shape.type_name == "structure":
        assert isinstance(value, dict) and set(value) <= set(shape.members), (where, set(value) - set(shape.members))
        for key, item in value.items():
            _check_against(shape.members[key], item, f"{where}.{key}")
    elif shape.type_name == "list":
        for i, item in enumerate(value):
            _check_against(shape.member, item, f"{where}[{i}]")
    elif shape.type_name == "integer":
        # the wire carries every number as a float: a whole one is the integer
        assert isinstance(value, (int, float)) and float(value).is_integer(), where
        assert value >= shape.metadata.get("min", value), where
        assert value <= shape.metadata.get("max", value), where
    elif shape.type_name == "boolean":
        assert isinstance(value, bool), where
    else:
        assert isinstance(value, str) and value in shape.metadata.get("enum", [value]), (where, value)


def test_gpu_node_groups_repair_by_default_within_limits_eks_accepts(built):
    rendering, _ = built
    for name in ("ml-gpu", "ml-gpu-4x"):
        (group,) = [g for g in rendering.of_type(NODE_GROUP) if g.name == name]
        config = group.inputs["nodeRepairConfig"]
        _check_against(_shape("NodeRepairConfig"), config)
        assert (config["enabled"], config["maxParallelNodesRepairedCount"],
                config["maxUnhealthyNodeThresholdPercentage"]) == (True, 1, 20)
        # EKS: a count or a percentage, never both
        assert "maxParallelNodesRepairedPercentage" not in config and "maxUnhealthyNodeThresholdCount" not in config
        # "If you use this, you must specify all the values"
        for override in config["nodeRepairConfigOverrides"]:
            assert set(override) == set(_shape("NodeRepairConfigOverrides").members)
    (system,) = [g for g in rendering.of_type(NODE_GROUP) if g.name == "ml-system"]
    assert "nodeRepairConfig" not in system.inputs  # CPU nodes: EKS's own default


def test_each_reason_is_one_the_agent_reports_as_fatal_on_the_gpu_condition():
    agent = _agent_reasons()
    for reason in repair.REASONS:
        (severity,) = [s for pattern, s in agent.items() if re.fullmatch(pattern, reason)]
        assert severity == "Fatal", reason


def test_hardware_xids_reboot_unless_a_reset_cannot_cure_them_and_application_xids_are_not_repaired():
    xids = {int(m.group(1)): action for reason, action in repair.REASONS.items()
            if (m := re.fullmatch(r"NvidiaXID(\d+)Error", reason))}
    assert set(xids) == set(health.XID_HARDWARE)
    assert {x for x, action in xids.items() if action == "Replace"} == set(health.XID_REPLACE) == {64, 79}
    assert not set(xids) & set(health.XID_APPLICATION)


def test_the_node_monitoring_agent_comes_with_repair_on_a_new_cluster_only(built, render):
    rendering, _ = built
    (addon,) = [a for a in rendering.of_type(ADDON) if a.inputs["addonName"] == repair.MONITORING_ADDON]
    assert addon.name == "ml-node-monitoring-agent" and addon.inputs["clusterName"] == "ml"
    existing, _ = build(render, cluster=None, existing_cluster=ExistingClusterArgs(name="prod", kubeconfig="x"))
    assert [a for a in existing.of_type(ADDON) if a.inputs["addonName"] == repair.MONITORING_ADDON] == []
    off, _ = build(render, {"repair": NodeRepairArgs(enabled=False)})
    assert [a for a in off.of_type(ADDON) if a.inputs["addonName"] == repair.MONITORING_ADDON] == []
    (group,) = [g for g in off.of_type(NODE_GROUP) if g.name == "ml-gpu"]
    assert group.inputs["nodeRepairConfig"] == {"enabled": False}


@pytest.mark.parametrize("given, key, says", [
    ({"max_parallel": 0}, "max_parallel", "EKS takes 1 or more"),
    ({"max_unhealthy_percent": 0}, "max_unhealthy_percent", "EKS takes 1 or more and at most 100"),
    ({"max_unhealthy_percent": 101}, "max_unhealthy_percent", "EKS takes 1 or more and at most 100"),
    ({"wait_minutes": 0}, "wait_minutes", "EKS takes 1 or more"),
])
def test_limits_eks_would_refuse_are_refused_at_preview(render, given, key, says):
    with pytest.raises(ConfigError) as error:
        build(render, {"repair": NodeRepairArgs(**given)})
    assert error.value.field == f"node_group.repair.{key}" and says in str(error.value)


def test_the_repair_config_carries_each_limit_given_and_each_reasons_action_after_the_wait():
    config = repair.node_repair_config(NodeRepairArgs(max_parallel=2, max_unhealthy_percent=35, wait_minutes=7))
    assert {k: v for k, v in config.items() if k != "node_repair_config_overrides"} == {
        "enabled": True, "max_parallel_nodes_repaired_count": 2, "max_unhealthy_node_threshold_percentage": 35}
    overrides = config["node_repair_config_overrides"]
    assert [o["node_unhealthy_reason"] for o in overrides] == list(repair.REASONS)
    assert all(o["node_monitoring_condition"] == "AcceleratedHardwareReady" and o["min_repair_wait_time_mins"] == 7
               for o in overrides)
    actions = {o["node_unhealthy_reason"]: o["repair_action"] for o in overrides}
    assert actions["NvidiaXID79Error"] == "Replace" and actions["NvidiaXID48Error"] == "Reboot"
    assert actions == dict(repair.REASONS)
    assert repair.node_repair_config(NodeRepairArgs(enabled=False, max_parallel=2)) == {"enabled": False}
