"""GKE: the Compute Engine instance behind a node, rebooted (``instances.reset``) or replaced by its managed instance
group (``instanceGroupManagers.recreateInstances``), through the Compute Engine v1 REST API.

The instance comes from the node's ``spec.providerID`` (``gce://PROJECT/ZONE/INSTANCE``); its managed instance group
(a GKE node pool has one per zone) from the instance's metadata item ``created-by`` (``instances.get``); the pool's
size is the group's ``targetSize`` (``instanceGroupManagers.get``). Something is under way on the instance when the
group's ``currentAction`` for it (``instanceGroupManagers.listManagedInstances``) is not ``NONE``, or its ``status``
is not ``RUNNING``. Both changes are sent with a ``requestId`` (one per instance and change, for the repairer's
life), which Compute Engine keeps so that the same request sent again is not acted on twice (the discovery document's
``requestId`` parameter); a recreate left in doubt
is also checked first (the group then says ``RECREATING``). The answer, in words, is the zonal operation's name.

GKE's own node auto-repair (https://cloud.google.com/kubernetes-engine/docs/how-to/node-auto-repair) drains and
re-creates a node that reports ``NotReady`` or no status for about 10 minutes, or whose boot disk is out of space for
about 30; it repairs several at once on a large cluster, fewer as more are broken. A GPU that fails while its node
stays ``Ready`` (an Xid, a failed row remap, uncorrected ECC, a slow or missing NVLink: what the sweep's probe finds)
is none of those, so GKE leaves that node as it is: ``--repair`` is for those.

Live: a token from ``GOOGLE_OAUTH_ACCESS_TOKEN`` or ``gcloud auth print-access-token`` (scope cloud-platform or
compute), with ``compute.instances.get``/``reset`` and ``compute.instanceGroupManagers.get``/``update`` on the
project (roles/compute.instanceAdmin.v1 holds them).
"""

from __future__ import annotations

import re
import uuid
from typing import Any, Mapping, Optional

from ..refresh import token_from
from . import Machine
from .rest import BACKOFF, TIMEOUT, Api, Backoff, CloudError, NodeRepairer

COMPUTE = "https://compute.googleapis.com/compute/v1/"
"""Compute Engine v1's root (the discovery document's ``rootUrl`` + ``servicePath``)."""
PROVIDER_ID = re.compile(r"^gce://(?P<project>[^/]+)/(?P<zone>[^/]+)/(?P<instance>[^/]+)$")
"""A GKE node's ``spec.providerID`` (the GCE cloud provider's form)."""
CREATED_BY = "created-by"
"""The metadata item a managed instance group sets on its instances: the group's partial URL."""
ZONAL_GROUP = re.compile(
    r"(?:^|/)(?P<path>projects/[^/]+/zones/(?P<zone>[^/]+)/instanceGroupManagers/(?P<name>[^/]+))$")
"""A zonal managed instance group's URL, full or partial (``created-by`` holds ``projects/NUMBER/zones/...``)."""
INSTANCE = re.compile(r"(?:^|/)(?P<path>projects/[^/]+/zones/[^/]+/instances/(?P<name>[^/]+))$")
"""An instance's URL, full or partial."""
NO_ACTION, RUNNING = "NONE", "RUNNING"
"""``ManagedInstance.currentAction`` with nothing scheduled; ``Instance.status`` of a running instance."""


def message(body: Any) -> str:
    """What a Compute Engine error answer says (``{"error": {"code", "message", "errors": [...]}}``)."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return "no error message"
    reasons = ", ".join(e.get("reason", "") for e in error.get("errors") or [] if e.get("reason"))
    return f"{error.get('message', '')}{f' ({reasons})' if reasons else ''}"


def _path(url: str, pattern: re.Pattern) -> re.Match:
    found = pattern.search(url.split("?")[0])
    if not found:
        raise ValueError(f"{url} is not a Compute Engine URL of the form {pattern.pattern}")
    return found


class GkeRepairer(NodeRepairer):
    """:class:`~gpuready.repair.Repairer` of GKE nodes (see the module)."""

    def __init__(self, api: Api) -> None:
        super().__init__(api)
        self.request_ids: dict[tuple[str, str], str] = {}
        """The ``requestId`` of each (instance, change) this repairer sent: the same change of the same instance
        asked again (the core's own retry) is the same request, which Compute Engine does not act on twice."""

    def machine(self, node: dict) -> Optional[Machine]:
        name, found = self.provider_id(node, PROVIDER_ID, "a Compute Engine instance (gce://...)")
        if not found:
            return None
        project, zone, instance = found.group("project", "zone", "instance")
        body = self.api.read("GET", f"projects/{project}/zones/{zone}/instances/{instance}").body
        items = (body.get("metadata") or {}).get("items") or []
        created_by = next((i.get("value", "") for i in items if i.get("key") == CREATED_BY), "")
        group = ZONAL_GROUP.search(created_by)
        if not group:
            return self.skip(name, f"instance {instance} is in no zonal managed instance group (its metadata "
                                   f"{CREATED_BY} is {created_by or 'absent'})")
        return Machine(node=name, pool=self.api.base + group.group("path"), id=body["selfLink"],
                       where=f"instance {instance} of managed instance group {group.group('name')} ({zone})")

    def pool_size(self, machine: Machine) -> int:
        return int(self.api.read("GET", _path(machine.pool, ZONAL_GROUP).group("path")).body.get("targetSize", 0))

    def under_way(self, machine: Machine) -> Optional[str]:
        instance = _path(machine.id, INSTANCE)
        group = _path(machine.pool, ZONAL_GROUP)
        action = self._action(group.group("path"), instance.group("path"))
        if action is None:
            return f"instance {instance.group('name')} is no longer in managed instance group {group.group('name')}"
        if action != NO_ACTION:
            return f"managed instance group {group.group('name')} is {action} instance {instance.group('name')}"
        status = self.api.read("GET", instance.group("path")).body.get("status", "")
        if status != RUNNING:
            return f"instance {instance.group('name')} is {status}"
        return None

    def _action(self, group: str, instance: str) -> Optional[str]:
        """The group's ``currentAction`` for ``instance`` (a partial URL); None if the group does not list it."""
        page = ""
        while True:
            query = f"?maxResults=500{f'&pageToken={page}' if page else ''}"
            body = self.api.read("POST", f"{group}/listManagedInstances{query}").body or {}
            for managed in body.get("managedInstances") or []:
                if managed.get("instance", "").endswith("/" + instance):
                    return managed.get("currentAction", NO_ACTION)
            page = body.get("nextPageToken", "")
            if not page:
                return None

    def reboot(self, machine: Machine) -> str:
        instance = _path(machine.id, INSTANCE)
        return self._operation("reset", "POST", f"{instance.group('path')}/reset", None, machine, check=False)

    def replace(self, machine: Machine) -> str:
        group = _path(machine.pool, ZONAL_GROUP)
        return self._operation("recreate", "POST", f"{group.group('path')}/recreateInstances",
                               {"instances": [machine.id]}, machine, check=True)

    def _operation(self, what: str, method: str, path: str, body: Any, machine: Machine, check: bool) -> str:
        """Send one change with its ``requestId`` (:attr:`request_ids`); where ``check``, a try left in doubt is
        followed by :meth:`under_way` before the next. The operation's name, in words."""
        request = f"{path}?requestId={self.request_ids.setdefault((machine.id, what), str(uuid.uuid4()))}"
        answer = self.api.act(method, request, body,
                              took_effect=(lambda: self.under_way(machine)) if check else (lambda: None))
        if isinstance(answer, str):
            return f"{what} already under way after an unanswered request: {answer}"
        operation = answer.body or {}
        error = operation.get("error")
        if error:
            raise CloudError(f"{method} {path}", answer.status, message({"error": error}))
        return f"{what} requested: operation {operation.get('name', '?')} ({operation.get('status', '?')})"


def credentials() -> dict[str, str]:
    """``{"token": ...}``: the Google Cloud access token :func:`repairer` calls with (the sweep asks before it runs);
    without one, a one-line :class:`~gpuready.errors.UserError`."""
    return {"token": token_from("GOOGLE_OAUTH_ACCESS_TOKEN", ["gcloud", "auth", "print-access-token"],
                                "Google Cloud access token for --repair", otherwise="")}


def repairer(outputs: Mapping[str, Any], api_client: Any = None, *, compute: str = COMPUTE,
             timeout: float = TIMEOUT, backoff: Backoff = BACKOFF, token: str = "") -> GkeRepairer:
    """The repairer of a ``gke`` stack's nodes (``outputs`` and ``api_client`` are not needed: each node's
    providerID names its project and zone). ``compute``: the API's root (tests point it at a fake); ``token``: from
    :func:`credentials`, which it asks itself where none is given."""
    token = token or credentials()["token"]
    return GkeRepairer(Api(compute.rstrip("/") + "/", token, message, timeout=timeout, backoff=backoff))
