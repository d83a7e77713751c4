"""A small loopback server answering the Azure Resource Manager calls of the AKS repairer as the real API answers
them: a VM scale set (``virtualMachineScaleSets.get``: its ``sku.capacity``), an instance of it
(``virtualMachineScaleSetVMs.get``, with its instance view on ``$expand=instanceView``), and ``restart`` /
``redeploy`` / ``reimage`` of an instance: 202 with ``Azure-AsyncOperation``, ``Location`` and ``Retry-After``
headers and no body, the instance then ``Updating`` (as Azure shows an instance with an operation under way) until
:meth:`FakeAzure.finish`. Errors are ARM's ``{"error": {"code", "message"}}``; an ``api-version`` is required. It
records every request (``requests``: method, path, query) and answer (``answers``: operation, body) for the tests to
check against azure-mgmt-compute, and what acted (``actions``: (action, instance))."""

from __future__ import annotations

import re
import threading
import uuid
from typing import Any, Optional
from urllib.parse import parse_qs, urlparse

from .loopback import JsonHandler, serve

SUBSCRIPTION = "8f3c1a2b-4d5e-4f60-8a71-b2c3d4e5f607"
GROUP = "MC_ml-rg_ml-aks_eastus"
SCALE_SET = "aks-gpu-12345678-vmss"
LOCATION = "eastus"
TOKEN = "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.test"
SCALE_SET_ID = (f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{GROUP}/providers/Microsoft.Compute/"
                f"virtualMachineScaleSets/{SCALE_SET}")

ROUTES = (
    ("GET", r"(?P<vmss>/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Compute/"
            r"virtualMachineScaleSets/[^/]+)", "virtual_machine_scale_sets_get"),
    ("GET", r"(?P<vmss>/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Compute/"
            r"virtualMachineScaleSets/[^/]+)/virtualMachines/(?P<instance>[^/]+)", "virtual_machine_scale_set_vms_get"),
    *(("POST", r"(?P<vmss>/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Compute/"
               r"virtualMachineScaleSets/[^/]+)/virtualMachines/(?P<instance>[^/]+)/" + action,
       f"virtual_machine_scale_set_vms_{action}") for action in ("restart", "redeploy", "reimage")),
)
"""(HTTP method, path, the name of azure-mgmt-compute's request builder ``build_<name>_request``) of every call."""


def route(method: str, path: str) -> Optional[tuple[str, dict]]:
    for verb, pattern, name in ROUTES:
        found = re.fullmatch(pattern, path, re.IGNORECASE)
        if verb == method and found:
            return name, found.groupdict()
    return None


def azure_action(method: str, path: str, headers: Any, body: bytes = b"") -> str:
    """The fault proxy's name of a call: the SDK operation (``virtual_machine_scale_set_vms_restart``)."""
    found = route(method, urlparse(path).path)
    return found[0] if found else urlparse(path).path


AZURE_ERRORS = {"throttle": (429, "TooManyRequests"), "5xx": (500, "InternalServerError"),
                "client": (403, "AuthorizationFailed")}


def error_body(status: int, code: str, message: str) -> dict:
    """ARM's error answer."""
    return {"error": {"code": code, "message": message}}


class FakeAzure:
    """Instances ``instances`` (ids) of the scale set :data:`SCALE_SET`, capacity their number, all Succeeded and
    running; ``states`` (provisioningState) and ``powers`` (PowerState/... code) by instance id say otherwise."""

    def __init__(self, instances=("0", "1", "2"), states=None, powers=None) -> None:
        self.instances = list(instances)
        self.states = {i: "Succeeded" for i in instances} | dict(states or {})
        self.powers = {i: "PowerState/running" for i in instances} | dict(powers or {})
        self.requests: list[tuple[str, str, dict]] = []
        self.answers: list[tuple[str, Any]] = []
        self.actions: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        fake = self

        class Handler(JsonHandler):
            def _send(self, status: int, body: Optional[dict], headers: Optional[dict] = None, name: str = ""):
                if name:
                    fake.answers.append((name, body))
                self.send_json(status, body, headers)

            def _handle(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                url = urlparse(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                fake.requests.append((self.command, url.path, query))
                if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    return self._send(401, error_body(401, "AuthenticationFailed", "Authentication failed. The "
                                                      "'Authorization' header is missing."))
                if "api-version" not in query:
                    return self._send(400, error_body(400, "MissingApiVersionParameter", "The api-version query "
                                                      "parameter (?api-version=) is required for all requests."))
                found = route(self.command, url.path)
                if not found:
                    return self._send(404, error_body(404, "InvalidResourceType", f"The resource type could not be "
                                                      f"found for {url.path}."))
                name, params = found
                with fake.lock:
                    status, body, headers = fake.answer(name, params, query, self.headers.get("Host", ""))
                self._send(status, body, headers, name if status < 300 else "")

            do_GET = do_POST = _handle

        self.server = serve(Handler)
        self.port = self.server.server_address[1]

    def close(self) -> None:
        self.server.shutdown()

    def node(self, instance: str) -> dict:
        """The Kubernetes Node of ``instance``, as AKS registers it (the provider ID's resource group lower-cased, as
        the Azure cloud provider writes it)."""
        return {"metadata": {"name": f"aks-gpu-12345678-vmss{int(instance):06x}",
                             "labels": {"kubernetes.azure.com/agentpool": "gpu"}},
                "spec": {"providerID": f"azure://{SCALE_SET_ID.replace(GROUP, GROUP.lower())}/virtualMachines/"
                                       f"{instance}"}}

    def finish(self) -> None:
        """Every operation under way done: each instance Succeeded and running again."""
        for instance in self.instances:
            self.states[instance], self.powers[instance] = "Succeeded", "PowerState/running"

    def answer(self, name: str, params: dict, query: dict, host: str) -> tuple[int, Optional[dict], dict]:
        if params["vmss"].lower() != SCALE_SET_ID.lower():
            return 404, error_body(404, "ResourceNotFound", f"The Resource 'Microsoft.Compute/"
                                   f"virtualMachineScaleSets/{params['vmss'].rsplit('/', 1)[-1]}' under resource "
                                   f"group '{GROUP}' was not found."), {}
        instance = params.get("instance")
        if instance is not None and instance not in self.instances:
            return 404, error_body(404, "NotFound", f"The entity was not found in this Azure location."), {}
        if name == "virtual_machine_scale_sets_get":
            return 200, self.scale_set(), {}
        if name == "virtual_machine_scale_set_vms_get":
            return 200, self.vm(instance, query.get("$expand") == "instanceView"), {}
        action = name.rsplit("_", 1)[-1]
        if self.states[instance] != "Succeeded":
            return 409, error_body(409, "OperationNotAllowed", f"Operation '{action}' is not allowed on VM "
                                   f"'{SCALE_SET}_{instance}' since the VM is marked for an operation in progress."), {}
        self.actions.append((action, instance))
        self.states[instance] = "Updating"
        self.powers[instance] = "PowerState/starting" if action == "restart" else "PowerState/stopped"
        operation = str(uuid.uuid4())
        base = f"https://management.azure.com/subscriptions/{SUBSCRIPTION}/providers/Microsoft.Compute/locations/" \
               f"{LOCATION}/operations/{operation}"
        return 202, None, {"Azure-AsyncOperation": f"{base}?p=571046f6&api-version={query['api-version']}",
                           "Location": f"{base}?p=571046f6&monitor=true&api-version={query['api-version']}",
                           "Retry-After": "10"}

    def scale_set(self) -> dict:
        return {"id": SCALE_SET_ID, "name": SCALE_SET, "type": "Microsoft.Compute/virtualMachineScaleSets",
                "location": LOCATION, "tags": {"aks-managed-poolName": "gpu"},
                "sku": {"name": "Standard_NC40ads_H100_v5", "tier": "Standard", "capacity": len(self.instances)},
                "properties": {"provisioningState": "Succeeded", "overprovision": False,
                               "uniqueId": "0c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f",
                               "upgradePolicy": {"mode": "Manual"}, "singlePlacementGroup": False}}

    def vm(self, instance: str, view: bool) -> dict:
        state = self.states[instance]
        properties: dict = {"latestModelApplied": True, "vmId": f"5b6c7d8e-0000-4000-8000-00000000000{instance}",
                            "provisioningState": state,
                            "hardwareProfile": {"vmSize": "Standard_NC40ads_H100_v5"},
                            "osProfile": {"computerName": f"aks-gpu-12345678-vmss{int(instance):06x}",
                                          "adminUsername": "azureuser"}}
        if view:
            power = self.powers[instance]
            properties["instanceView"] = {"platformUpdateDomain": 0, "platformFaultDomain": 0,
                                          "computerName": properties["osProfile"]["computerName"],
                                          "statuses": [
                                              {"code": f"ProvisioningState/{state.lower()}", "level": "Info",
                                               "displayStatus": f"Provisioning {state.lower()}"},
                                              {"code": power, "level": "Info",
                                               "displayStatus": f"VM {power.split('/')[-1]}"}]}
        return {"id": f"{SCALE_SET_ID}/virtualMachines/{instance}", "name": f"{SCALE_SET}_{instance}",
                "type": "Microsoft.Compute/virtualMachineScaleSets/virtualMachines", "location": LOCATION,
                "instanceId": instance, "sku": {"name": "Standard_NC40ads_H100_v5", "tier": "Standard"},
                "properties": properties}
