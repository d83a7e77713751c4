"""Node repair of EKS GPU node groups: the EKS node monitoring agent add-on sets ``AcceleratedHardwareReady=False``
with a reason (``NvidiaXID79Error``, ``NvidiaDoubleBitError``...), and a managed node group's ``nodeRepairConfig``
reboots or replaces the node, within limits.

The action for each reason is its GPU signal's, in the one table the probe's checks, the GPU alerts and
``gpuready sweep --repair`` share (:mod:`gpuready_components.k8s_gpu.health`); the reasons are the agent's own (``pkg/reasons/reasons.yaml`` of
aws/eks-node-monitoring-agent v1.7.0, which the tests read)."""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ..k8s_gpu import health

MONITORING_ADDON = "eks-node-monitoring-agent"
"""The EKS add-on that runs the node monitoring agent (managed node group repair acts on its conditions)."""
CONDITION = "AcceleratedHardwareReady"
"""The agent's node condition for GPUs."""

SIGNALS = MappingProxyType({
    **{f"NvidiaXID{xid}Error": next(s.alert for s in health.SIGNALS if xid in s.xids and s.repair)
       for xid in health.XID_HARDWARE},
    "NvidiaDoubleBitError": "GpuDoubleBitEccError",
    "NvidiaNVLinkError": "GpuNvlinkRecoveryError",
    "FabricManagerNotRunning": "GpuFabricNotReady",
    "NvidiaFabricError": "GpuFabricError",  # the agent's own words: it persists across reboots
    "NvidiaDeviceCountMismatch": "GpuMissing",  # a GPU the instance should have is gone
})
"""The agent's GPU reasons -> the GPU signal each stands for (:data:`gpuready_components.k8s_gpu.health.SIGNALS`),
whose repair EKS is told to make."""
REASONS = MappingProxyType({reason: next(s.repair for s in health.SIGNALS if s.alert == alert).capitalize()
                            for reason, alert in SIGNALS.items()})
"""The agent's GPU reasons -> the repair action (EKS's ``Reboot`` or ``Replace``), from their signals."""


@dataclass(frozen=True, kw_only=True)
class NodeRepairArgs:
    """Automatic repair of the GPU nodes (on by default): EKS reboots or replaces a node whose GPUs the node
    monitoring agent finds failing, never more than ``max_parallel`` at once, and stops when more than
    ``max_unhealthy_percent`` of the group is unhealthy (a cause that broad is not one bad GPU)."""

    enabled: bool = True
    """Off: the agent still reports conditions (and the alerts fire), nothing is repaired."""
    max_parallel: int = 1
    """Nodes repaired at once."""
    max_unhealthy_percent: int = 20
    """Repair stops while more than this share of the group's nodes is unhealthy (1-100)."""
    wait_minutes: int = 10
    """How long a node stays failing before it is repaired (the job on it fails first, and the alert fires)."""


def node_repair_config(args: NodeRepairArgs) -> dict[str, Any]:
    """The node group's ``nodeRepairConfig`` (Pulumi's input names)."""
    if not args.enabled:
        return {"enabled": False}
    return {
        "enabled": True,
        "max_parallel_nodes_repaired_count": args.max_parallel,
        "max_unhealthy_node_threshold_percentage": args.max_unhealthy_percent,
        "node_repair_config_overrides": [
            {"node_monitoring_condition": CONDITION, "node_unhealthy_reason": reason,
             "min_repair_wait_time_mins": args.wait_minutes, "repair_action": action}
            for reason, action in REASONS.items()],
    }
