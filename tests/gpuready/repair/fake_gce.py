"""A small loopback server answering the Compute Engine v1 calls of the GKE repairer as the real API answers them:
``instances.get`` (an Instance with the ``created-by`` metadata item its managed instance group sets),
``instances.reset`` and ``instanceGroupManagers.recreateInstances`` (a zonal Operation; a ``requestId`` already seen
gives back its first operation and acts no more, as Compute Engine does), ``instanceGroupManagers.get`` (its
``targetSize``) and ``listManagedInstances`` (pages of two, each instance's ``currentAction``). Errors are Google's
``{"error": {"code", "message", "errors": [{"reason"}]}}``. It records every request (``requests``: method, path,
query, body) and answer (``answers``: method id, body) for the tests to check against the discovery document, and
what acted (``resets``, ``recreates``)."""

from __future__ import annotations

import json
import re
import threading
from typing import Any, Optional
from urllib.parse import parse_qs, urlparse

from .loopback import JsonHandler, serve

GOOGLE = "https://www.googleapis.com/compute/v1/"
"""The host of the selfLinks Compute Engine v1 answers with."""
PROJECT, NUMBER, ZONE = "ml-project", "123456789012", "us-central1-a"
GROUP = "gke-ml-gpu-1a2b-grp"
TOKEN = "ya29.test-token"

ROUTES = (
    ("GET", r"projects/(?P<project>[^/]+)/zones/(?P<zone>[^/]+)/instances/(?P<instance>[^/]+)",
     "compute.instances.get"),
    ("POST", r"projects/(?P<project>[^/]+)/zones/(?P<zone>[^/]+)/instances/(?P<instance>[^/]+)/reset",
     "compute.instances.reset"),
    ("GET", r"projects/(?P<project>[^/]+)/zones/(?P<zone>[^/]+)/instanceGroupManagers/(?P<instanceGroupManager>[^/]+)",
     "compute.instanceGroupManagers.get"),
    ("POST", r"projects/(?P<project>[^/]+)/zones/(?P<zone>[^/]+)/instanceGroupManagers/(?P<instanceGroupManager>[^/]+)"
             r"/listManagedInstances", "compute.instanceGroupManagers.listManagedInstances"),
    ("POST", r"projects/(?P<project>[^/]+)/zones/(?P<zone>[^/]+)/instanceGroupManagers/(?P<instanceGroupManager>[^/]+)"
             r"/recreateInstances", "compute.instanceGroupManagers.recreateInstances"),
)
"""(HTTP method, path under /compute/v1/, the discovery document's method id) of every call the fake answers."""


def route(method: str, path: str) -> Optional[tuple[str, dict]]:
    """The method id and path parameters of a request to ``path`` (under /compute/v1/), or None."""
    for verb, pattern, name in ROUTES:
        found = re.fullmatch(pattern, path)
        if verb == method and found:
            return name, found.groupdict()
    return None


def gce_action(method: str, path: str, headers: Any, body: bytes = b"") -> str:
    """The fault proxy's name of a call: its method id without ``compute.`` (``instances.reset``), else the path."""
    found = route(method, urlparse(path).path.removeprefix("/compute/v1/"))
    return found[0].removeprefix("compute.") if found else urlparse(path).path


GCE_ERRORS = {"throttle": (429, "rateLimitExceeded"), "5xx": (503, "backendError"), "client": (403, "forbidden")}


def error_body(status: int, reason: str, message: str) -> dict:
    """Google's error answer."""
    return {"error": {"code": status, "message": message, "errors": [{"message": message, "domain": "global",
                                                                       "reason": reason}]}}


class FakeGce:
    """Instances ``names`` of one zonal managed instance group :data:`GROUP` (target size = their number), all
    RUNNING with nothing scheduled; ``status`` and ``actions`` (by name) say otherwise. ``extra`` instances are in no
    group."""

    def __init__(self, names=("gke-ml-gpu-1a2b-x7k9", "gke-ml-gpu-1a2b-q4w8"), status=None, actions=None,
                 extra=()) -> None:
        self.members = list(names)
        self.status = {n: "RUNNING" for n in (*names, *extra)} | dict(status or {})
        self.actions = {n: "NONE" for n in names} | dict(actions or {})
        self.requests: list[tuple[str, str, dict, Any]] = []
        self.answers: list[tuple[str, Any]] = []
        self.resets: list[str] = []
        self.recreates: list[str] = []
        self.operations: dict[str, dict] = {}
        """Operations by requestId."""
        self.lock = threading.Lock()
        fake = self

        class Handler(JsonHandler):
            def _send(self, status: int, body: dict, name: str = ""):
                if name and status == 200:
                    fake.answers.append((name, body))
                self.send_json(status, body, content_type="application/json; charset=UTF-8")

            def _handle(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                url = urlparse(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                body = json.loads(raw) if raw.strip() else None
                path = url.path.removeprefix("/compute/v1/")
                fake.requests.append((self.command, path, query, body))
                if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    return self._send(401, error_body(401, "authError", "Request had invalid authentication "
                                                      "credentials. Expected OAuth 2 access token."))
                found = route(self.command, path)
                if not found:
                    return self._send(404, error_body(404, "notFound", f"The URL {url.path} was not found"))
                name, params = found
                with fake.lock:
                    status, answer = fake.answer(name, params, query, body)
                self._send(status, answer, name)

            do_GET = do_POST = _handle

        self.server = serve(Handler)
        self.port = self.server.server_address[1]

    def close(self) -> None:
        self.server.shutdown()

    @staticmethod
    def link(path: str) -> str:
        return GOOGLE + path

    def node(self, name: str) -> dict:
        """The Kubernetes Node of instance ``name``, as GKE registers it."""
        return {"metadata": {"name": name, "labels": {"cloud.google.com/gke-nodepool": "gpu"}},
                "spec": {"providerID": f"gce://{PROJECT}/{ZONE}/{name}"}}

    def answer(self, name: str, params: dict, query: dict, body: Any) -> tuple[int, dict]:
        zone_path = f"projects/{PROJECT}/zones/{ZONE}"
        if params["project"] not in (PROJECT, NUMBER) or params["zone"] != ZONE:
            return 404, error_body(404, "notFound", f"The resource '{name}' was not found")
        if "instanceGroupManager" in params and params["instanceGroupManager"] != GROUP:
            return 404, error_body(404, "notFound", f"The resource 'projects/{PROJECT}/zones/{ZONE}/"
                                   f"instanceGroupManagers/{params['instanceGroupManager']}' was not found")
        if "instance" in params and params["instance"] not in self.status:
            return 404, error_body(404, "notFound", f"The resource 'projects/{PROJECT}/zones/{ZONE}/instances/"
                                   f"{params['instance']}' was not found")
        if name == "compute.instances.get":
            return 200, self.instance(params["instance"])
        if name == "compute.instanceGroupManagers.get":
            return 200, self.group()
        if name == "compute.instanceGroupManagers.listManagedInstances":
            start = int(query.get("pageToken") or 0)
            page = self.members[start:start + 2]
            answer: dict = {"managedInstances": [
                {"instance": self.link(f"{zone_path}/instances/{n}"), "id": str(1000 + self.members.index(n)),
                 "instanceStatus": self.status[n], "currentAction": self.actions[n], "name": n} for n in page]}
            if start + 2 < len(self.members):
                answer["nextPageToken"] = str(start + 2)
            return 200, answer
        if query.get("requestId") in self.operations:  # the same request again: its operation, nothing done twice
            return 200, self.operations[query["requestId"]]
        if name == "compute.instances.reset":
            self.resets.append(params["instance"])
            return 200, self.operation("reset", f"{zone_path}/instances/{params['instance']}", query)
        targets = [url.rsplit("/", 1)[-1] for url in (body or {}).get("instances", [])]
        unknown = [t for t in targets if t not in self.members]
        if unknown:
            return 400, error_body(400, "invalid", f"Instance '{unknown[0]}' is not a member of {GROUP}")
        for target in targets:
            self.recreates.append(target)
            self.actions[target] = "RECREATING"
        return 200, self.operation("recreateInstances", f"{zone_path}/instanceGroupManagers/{GROUP}", query)

    def instance(self, name: str) -> dict:
        items = [{"key": "cluster-name", "value": "ml"}]
        if name in self.members:
            items.append({"key": "created-by", "value": f"projects/{NUMBER}/zones/{ZONE}/instanceGroupManagers/"
                                                        f"{GROUP}"})
        return {"kind": "compute#instance", "id": str(1000 + len(name)), "name": name,
                "creationTimestamp": "2026-11-20T09:00:00.000-08:00", "status": self.status[name],
                "zone": self.link(f"projects/{PROJECT}/zones/{ZONE}"),
                "machineType": self.link(f"projects/{PROJECT}/zones/{ZONE}/machineTypes/a3-highgpu-8g"),
                "metadata": {"kind": "compute#metadata", "fingerprint": "abc=", "items": items},
                "selfLink": self.link(f"projects/{PROJECT}/zones/{ZONE}/instances/{name}")}

    def group(self) -> dict:
        recreating = sum(a == "RECREATING" for a in self.actions.values())
        return {"kind": "compute#instanceGroupManager", "id": "4242", "name": GROUP,
                "zone": self.link(f"projects/{PROJECT}/zones/{ZONE}"), "baseInstanceName": "gke-ml-gpu-1a2b",
                "instanceTemplate": self.link(f"projects/{PROJECT}/global/instanceTemplates/gke-ml-gpu-1a2b"),
                "instanceGroup": self.link(f"projects/{PROJECT}/zones/{ZONE}/instanceGroups/{GROUP}"),
                "targetSize": len(self.members),
                "currentActions": {"none": len(self.members) - recreating, "recreating": recreating},
                "status": {"isStable": recreating == 0},
                "selfLink": self.link(f"projects/{PROJECT}/zones/{ZONE}/instanceGroupManagers/{GROUP}")}

    def operation(self, kind: str, target: str, query: dict) -> dict:
        number = len(self.operations) + 1
        operation = {"kind": "compute#operation", "id": str(7000 + number),
                     "name": f"operation-1764000000000-{number:04d}-{kind}", "zone": self.link(
                         f"projects/{PROJECT}/zones/{ZONE}"), "operationType": kind, "targetLink": self.link(target),
                     "targetId": "4242", "status": "RUNNING", "user": "sweeper@ml-project.iam.gserviceaccount.com",
                     "progress": 0, "insertTime": "2026-11-27T04:00:00.000-08:00",
                     "startTime": "2026-11-27T04:00:00.100-08:00",
                     "selfLink": self.link(f"projects/{PROJECT}/zones/{ZONE}/operations/op-{number}")}
        self.operations[query.get("requestId") or f"none-{number}"] = operation
        return operation
