"""AKS: the VM scale set instance behind a node, restarted (``virtualMachineScaleSetVMs/restart``) or moved to other
hardware (``virtualMachineScaleSetVMs/redeploy``), through Azure Resource Manager's REST API (Microsoft.Compute).

The instance comes from the node's ``spec.providerID`` (``azure://`` and the instance's resource id,
``/subscriptions/S/resourceGroups/RG/providers/Microsoft.Compute/virtualMachineScaleSets/VMSS/virtualMachines/N``; a
node of a ``VirtualMachines`` or availability-set pool has no scale set and is skipped); the pool is its scale set,
whose size is its ``sku.capacity``. Something is under way on the instance when its ``provisioningState`` is not
``Succeeded`` or its instance view has no ``PowerState/running`` status (one GET with ``$expand=instanceView``).

Replace is ``redeploy``, not ``reimage``: the SDK (azure-mgmt-compute) describes redeploy as "Shuts down the virtual
machine in the virtual machine scale set, moves it to a new node, and powers it back on", and reimage as "Reimages
(upgrade the operating system) a specific virtual machine": only redeploy gives the VM other hardware, which is what a
GPU a reset does not cure needs. Both changes are long-running operations: Azure answers 202 with the operation's URL
(``Azure-AsyncOperation``, else ``Location``), which is the answer in words; nothing waits for it to finish. A change
left in doubt (a 5xx, no answer) is checked before it is sent again: the instance is then ``Updating``.

AKS's own node auto-repair (https://learn.microsoft.com/en-us/azure/aks/node-auto-repair) acts on a node that reports
``NotReady``, or no status, for minutes: it reboots it, then reimages it, then (Linux) redeploys it, one node at a
time, on clusters of two nodes or more. A GPU that fails while its node stays ``Ready`` (an Xid, a failed row remap,
uncorrected ECC, a slow or missing NVLink: what the sweep's probe finds) is none of those, so AKS leaves that node as
it is: ``--repair`` is for those.

Live: a token from ``AZURE_ACCESS_TOKEN`` or ``az account get-access-token`` (Azure Resource Manager), with
``Microsoft.Compute/virtualMachineScaleSets/read`` and ``.../virtualMachines/read``, ``/restart/action`` and
``/redeploy/action`` on the node resource group (Virtual Machine Contributor holds them).
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Optional

from ..refresh import token_from
from . import Machine
from .rest import BACKOFF, TIMEOUT, Api, Backoff, CloudError, NodeRepairer

MANAGEMENT = "https://management.azure.com/"
"""Azure Resource Manager's endpoint (the public cloud's)."""
API_VERSION = "2026-04-01"
"""The Microsoft.Compute API version of every call: azure-mgmt-compute 39.0.0's default (its request builders')."""
PROVIDER_ID = re.compile(
    r"^azure://(?P<vm>(?P<vmss>/subscriptions/[^/]+/resourceGroups/(?P<group>[^/]+)/providers/Microsoft\.Compute/"
    r"virtualMachineScaleSets/(?P<name>[^/]+))/virtualMachines/(?P<instance>[^/]+))$", re.IGNORECASE)
"""An AKS scale set node's ``spec.providerID`` (the Azure cloud provider's form); ARM's names are case-insensitive."""
SUCCEEDED, RUNNING = "Succeeded", "PowerState/running"
"""``provisioningState`` with no operation under way; the instance view status code of a running VM."""


def message(body: Any) -> str:
    """What an Azure Resource Manager error answer says (``{"error": {"code", "message"}}``)."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return "no error message"
    return f"{error.get('code', '')}: {error.get('message', '')}"


def _vm(machine: Machine) -> re.Match:
    found = PROVIDER_ID.match(f"azure://{machine.id}")
    if not found:
        raise ValueError(f"{machine.id} is not a VM scale set instance's resource id")
    return found


class AksRepairer(NodeRepairer):
    """:class:`~gpuready.repair.Repairer` of AKS nodes (see the module)."""

    def machine(self, node: dict) -> Optional[Machine]:
        name, found = self.provider_id(node, PROVIDER_ID, "a VM scale set instance (azure:///subscriptions/.../"
                                                          "virtualMachineScaleSets/NAME/virtualMachines/N)")
        if not found:
            return None
        return Machine(node=name, pool=found.group("vmss"), id=found.group("vm"),
                       where=f"instance {found.group('instance')} of VM scale set {found.group('name')} "
                             f"(resource group {found.group('group')})")

    def pool_size(self, machine: Machine) -> int:
        body = self.api.read("GET", f"{machine.pool}?api-version={API_VERSION}").body or {}
        return int((body.get("sku") or {}).get("capacity") or 0)

    def under_way(self, machine: Machine) -> Optional[str]:
        found = _vm(machine)
        body = self.api.read("GET", f"{machine.id}?$expand=instanceView&api-version={API_VERSION}").body or {}
        properties = body.get("properties") or {}
        what = f"VM scale set {found.group('name')} instance {found.group('instance')}"
        state = properties.get("provisioningState", "")
        if state != SUCCEEDED:
            return f"{what} is {state or 'in no provisioning state'}"
        statuses = (properties.get("instanceView") or {}).get("statuses") or []
        power = next((s for s in statuses if s.get("code", "").startswith("PowerState/")), {})
        if power.get("code") != RUNNING:
            return f"{what} is {power.get('displayStatus') or power.get('code') or 'in no power state'}"
        return None

    def reboot(self, machine: Machine) -> str:
        return self._operation("restart", machine)

    def replace(self, machine: Machine) -> str:
        return self._operation("redeploy", machine)

    def _operation(self, action: str, machine: Machine) -> str:
        """POST ``action`` on the instance; a try left in doubt is followed by :meth:`under_way` before the next. The
        long-running operation's URL, in words (its result is not waited for)."""
        path = f"{machine.id}/{action}?api-version={API_VERSION}"
        answer = self.api.act("POST", path, took_effect=lambda: self.under_way(machine))
        if isinstance(answer, str):
            return f"{action} already under way after an unanswered request: {answer}"
        if answer.status not in (200, 202):
            raise CloudError(f"POST {path.split('?')[0]}", answer.status, message(answer.body))
        headers = {k.lower(): v for k, v in answer.headers.items()}
        operation = headers.get("azure-asyncoperation") or headers.get("location")
        return f"{action} accepted: operation {operation}" if operation else f"{action} done (HTTP {answer.status})"


def credentials() -> dict[str, str]:
    """``{"token": ...}``: the Azure Resource Manager access token :func:`repairer` calls with (the sweep asks before
    it runs); without one, a one-line :class:`~gpuready.errors.UserError`."""
    return {"token": token_from("AZURE_ACCESS_TOKEN", ["az", "account", "get-access-token", "--query", "accessToken",
                                                       "-o", "tsv"], "Azure access token for --repair", otherwise="")}


def repairer(outputs: Mapping[str, Any], api_client: Any = None, *, management: str = MANAGEMENT,
             timeout: float = TIMEOUT, backoff: Backoff = BACKOFF, token: str = "") -> AksRepairer:
    """The repairer of an ``aks`` stack's nodes (``outputs`` and ``api_client`` are not needed: each node's
    providerID names its subscription, resource group and scale set). ``management``: ARM's endpoint (tests point it
    at a fake); ``token``: from :func:`credentials`, which it asks itself where none is given."""
    token = token or credentials()["token"]
    return AksRepairer(Api(management.rstrip("/") + "/", token, message, timeout=timeout, backoff=backoff))
