"""A small local HTTP server answering the few Kubernetes API calls the smoke target makes, shaped as the real API
answers them (objects, lists, watch event streams, pod logs, Status on delete). It runs no pods: each scenario says
which phases the Job's pod goes through, what its logs hold, and what the scheduler, the autoscalers and the nodes
report: one or more ``stages`` (each shaped as the files in tests/data/k8s-events: events, configmaps, nodeclaims,
nodes), the next one served after each listing of the pod's events. Pod events are about the smoke pod.

For the sweep (several Jobs at once): each Job gets its pod, placed on the node its required node affinity names
(``matchFields`` on ``metadata.name``, as the DaemonSet controller pins pods); ``node_phases`` and ``node_logs`` say
what the pod on each node goes through and prints (default: ``phases`` and ``logs``); a watch streams every pod its
label selector matches; nodes are read one by one and patched with a JSON Patch (``test`` and ``add`` of a field,
as the client sends by default), each patch recorded in ``patched``."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


class FakeKube:
    def __init__(self, phases=("Pending", "Running", "Succeeded"), logs="", events=(), nodes=(), stages=(),
                 forbidden=(), node_phases=None, node_logs=None):
        self.phases, self.logs, self.forbidden = list(phases), logs, tuple(forbidden)
        self.node_phases, self.node_logs = dict(node_phases or {}), dict(node_logs or {})
        self.pods: dict[str, dict] = {}
        self.patched: list[tuple[str, list]] = []
        self.watches = 0
        self.stages = list(stages) or [{"events": list(events), "nodes": list(nodes)}]
        self.stage, self.listed = 0, False
        self.objects: dict[tuple[str, str], dict] = {}
        self.created: list[tuple[str, str]] = []
        self.deleted: list[tuple[str, str]] = []
        self.pod: dict | None = None
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send(self, status, body, content_type="application/json"):
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                kind, name = body["kind"], body["metadata"]["name"]
                if (kind, name) in fake.objects:
                    return self._send(409, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                            "reason": "AlreadyExists", "code": 409,
                                            "message": f'{kind.lower()}s "{name}" already exists'})
                body["metadata"].update({"uid": f"uid-{name}", "creationTimestamp": "2026-11-22T10:00:00Z"})
                fake.objects[(kind, name)] = body
                fake.created.append((kind, name))
                if kind == "Job":
                    template = body["spec"]["template"]
                    fake.pod = {"apiVersion": "v1", "kind": "Pod",
                                "metadata": {"name": f"{name}-x7k2p", "namespace": body["metadata"]["namespace"],
                                             "creationTimestamp": body["metadata"]["creationTimestamp"],
                                             "labels": {**template["metadata"]["labels"], "job-name": name}},
                                "spec": {**template["spec"], "nodeName": _pinned(template["spec"])},
                                "status": {"phase": "Pending"}}
                    fake.pods[fake.pod["metadata"]["name"]] = fake.pod
                self._send(201, body)

            def do_DELETE(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))  # DeleteOptions
                path = urlparse(self.path).path.rstrip("/").split("/")
                kind = {"jobs": "Job", "configmaps": "ConfigMap"}[path[-2]]
                fake.deleted.append((kind, path[-1]))
                fake.objects.pop((kind, path[-1]), None)
                self._send(200, {"apiVersion": "v1", "kind": "Status", "status": "Success"})

            def do_PATCH(self):
                patch = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                name = urlparse(self.path).path.rstrip("/").split("/")[-1]
                node = next((n for n in fake.now().get("nodes", ()) if n["metadata"]["name"] == name), None)
                if node is None or not urlparse(self.path).path.startswith("/api/v1/nodes/"):
                    return self._send(404, {"kind": "Status", "status": "Failure", "reason": "NotFound", "code": 404})
                for op in patch:
                    *parents, key = op["path"].strip("/").split("/")
                    target = node
                    for part in parents:
                        target = target.setdefault(part, {})
                    if op["op"] == "test" and target.get(key) != op["value"]:
                        return self._send(422, {"kind": "Status", "status": "Failure", "reason": "Invalid",
                                                "code": 422, "message": f"testing {op['path']} failed"})
                for op in patch:
                    if op["op"] == "add":
                        *parents, key = op["path"].strip("/").split("/")
                        target = node
                        for part in parents:
                            target = target.setdefault(part, {})
                        target[key] = op["value"]
                node["metadata"]["resourceVersion"] = str(int(node["metadata"].get("resourceVersion") or 0) + 1)
                fake.patched.append((name, patch))
                self._send(200, node)

            def do_GET(self):
                url = urlparse(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                path = url.path.rstrip("/")
                if any(f in path for f in fake.forbidden):  # RBAC: the user may not read these
                    return self._send(403, {"kind": "Status", "status": "Failure", "reason": "Forbidden",
                                            "code": 403})
                if path.endswith("/log"):
                    pod = fake.pods.get(path.split("/")[-2]) or {}
                    node = (pod.get("spec") or {}).get("nodeName")
                    return self._send(200, fake.node_logs.get(node, fake.logs).encode(), "text/plain")
                if path.endswith("/pods") and query.get("watch") in ("true", "1"):
                    return self._watch(float(query.get("timeoutSeconds", "1")), query.get("labelSelector", ""))
                if path.startswith("/api/v1/nodes/"):
                    found = [n for n in fake.now().get("nodes", ()) if n["metadata"]["name"] == path.split("/")[-1]]
                    if found:
                        return self._send(200, found[0])
                if path.endswith("/events"):
                    return self._send(200, {"apiVersion": "v1", "kind": "EventList", "metadata": {},
                                            "items": fake.events(path.split("/")[-2], query)})
                if "/configmaps/" in path:
                    ns, name = path.split("/")[-3], path.split("/")[-1]
                    found = [c for c in fake.now().get("configmaps", ())
                             if (c["metadata"]["namespace"], c["metadata"]["name"]) == (ns, name)]
                    if found:
                        return self._send(200, found[0])
                if path.startswith("/apis/karpenter.sh/v1/nodeclaims/"):
                    name = path.split("/")[-1]
                    found = [c for c in fake.now().get("nodeclaims", ()) if c["metadata"]["name"] == name]
                    if found:
                        return self._send(200, found[0])
                if path == "/api/v1/nodes":
                    wanted = dict(p.split("=", 1) for p in filter(None, query.get("labelSelector", "").split(",")))
                    items = [n for n in fake.now().get("nodes", ())
                             if all(n["metadata"]["labels"].get(k) == v for k, v in wanted.items())]
                    return self._send(200, {"apiVersion": "v1", "kind": "NodeList", "metadata": {}, "items": items})
                self._send(404, {"kind": "Status", "status": "Failure", "reason": "NotFound", "code": 404})

            def _watch(self, seconds, selector):
                fake.watches += 1
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()

                def chunk(data: bytes):
                    self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                    self.wfile.flush()

                wanted = dict(p.split("=", 1) for p in filter(None, selector.split(",")))
                pods = [p for p in list(fake.pods.values())
                        if all(p["metadata"]["labels"].get(k) == v for k, v in wanted.items())]
                phases = [fake.node_phases.get(p["spec"].get("nodeName"), fake.phases) for p in pods]
                for i in range(max(map(len, phases), default=0)):
                    for pod, steps in zip(pods, phases):
                        if i < len(steps):
                            pod["status"]["phase"] = steps[i]
                            event = {"type": "ADDED" if i == 0 else "MODIFIED", "object": pod}
                            chunk(json.dumps(event).encode() + b"\n")
                if not pods or any(s and s[-1] not in ("Succeeded", "Failed") for s in phases):
                    time.sleep(min(seconds, 0.3))  # a pod that does not move: the watch times out
                chunk(b"")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def now(self) -> dict:
        """The current stage."""
        return self.stages[min(self.stage, len(self.stages) - 1)]

    def events(self, namespace: str, query: dict) -> list[dict]:
        """The stage's events in ``namespace`` matching ``involvedObject.name=X``; listing the pod's moves on."""
        wanted = dict(p.split("=", 1) for p in filter(None, query.get("fieldSelector", "").split(",")))
        if self.pod and wanted.get("involvedObject.name") == self.pod["metadata"]["name"]:
            self.stage, self.listed = self.stage + self.listed, True
        items = []
        for event in self.now().get("events", ()):
            event = json.loads(json.dumps(event))
            involved = event["involvedObject"]
            if involved.get("kind") == "Pod" and self.pod:
                involved.update(name=self.pod["metadata"]["name"], namespace=self.pod["metadata"]["namespace"])
                event["metadata"]["namespace"] = self.pod["metadata"]["namespace"]
            if event["metadata"].get("namespace", "default") == namespace and \
                    all(involved.get(k.split(".", 1)[1]) == v for k, v in wanted.items()):
                items.append(event)
        return items

    def kubeconfig(self) -> str:
        return json.dumps({"apiVersion": "v1", "kind": "Config", "current-context": "test",
                           "clusters": [{"name": "test", "cluster": {"server": self.url}}],
                           "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}],
                           "users": [{"name": "test", "user": {"token": "test-token"}}]})

    def close(self):
        self.server.shutdown()


def _pinned(spec: dict):
    """The node a pod spec's required node affinity pins it to (``matchFields`` ``metadata.name In [NODE]``)."""
    terms = (((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
    for term in terms:
        for field in term.get("matchFields") or []:
            if field["key"] == "metadata.name" and field["operator"] == "In" and len(field["values"]) == 1:
                return field["values"][0]
    return spec.get("nodeName")
