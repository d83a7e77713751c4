"""``gpuready sweep --repair``: the machine behind a failing node, rebooted or replaced by its cloud.

This file holds the interface every cloud's repairer implements (:class:`Machine`, :class:`Repairer`); the core that
decides and acts is written beside it (helper "repair-core")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Protocol


@dataclass(frozen=True)
class Machine:
    """The cloud machine behind one Kubernetes node."""
    node: str   # the Kubernetes Node's name
    pool: str   # what the cloud repairs within and the limits count in: Auto Scaling group name, Karpenter NodePool
                # name, managed instance group URL, VM scale set resource id
    id: str     # the cloud's id of the machine: EC2 instance id, NodeClaim name, GCE instance self-link URL,
                # VMSS VM resource id (.../virtualMachineScaleSets/NAME/virtualMachines/N)
    where: str  # the machine in words for the audit line, e.g. "instance i-0abc of Auto Scaling group eks-gpu-1a2b",
                # "instance gke-ml-gpu-1a2b-x7k9 of managed instance group gke-ml-gpu-1a2b-grp (us-central1-a)"


class Repairer(Protocol):
    """One platform's way to reboot or replace the machine behind a node. Every call may raise; errors of the cloud
    are raised as gpuready.errors.UserError-free exceptions that carry the cloud's status, and the core turns them
    into a line of the audit (it never crashes the sweep)."""
    def machine(self, node: dict) -> Optional[Machine]:
        """The machine behind a Node object (a plain dict as the Kubernetes API returns it: spec.providerID,
        metadata.labels); None where this repairer does not handle that node (it says why in `skipped(node)`)."""
    def pool_size(self, machine: Machine) -> int:
        """How many machines the pool has now (its target size); the limits count from it."""
    def under_way(self, machine: Machine) -> Optional[str]:
        """A repair or other change already under way on that machine, in words (EC2 state not running / ASG
        lifecycle not InService; a MIG's currentAction for the instance not NONE; a VMSS VM not Succeeded or not
        running); None when there is none. The core never repairs a machine with something under way."""
    def reboot(self, machine: Machine) -> str:
        """Ask the cloud to reboot the machine; the cloud's answer in words for the audit (operation name, request id)."""
    def replace(self, machine: Machine) -> str:
        """Ask the cloud to replace the machine by new hardware (the pool keeps its size); the answer in words."""
