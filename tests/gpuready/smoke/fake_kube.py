"""A small local HTTP server answering the few Kubernetes API calls the smoke target makes, shaped as the real API
answers them (objects, lists, watch event streams, pod logs, Status on delete). It runs no pods: each scenario says
which phases the Job's pod goes through, what its logs hold, and what the scheduler, the autoscalers and the nodes
report: one or more ``stages`` (each shaped as the files in tests/data/k8s-events: events, configmaps, nodeclaims,
nodes), the next one served after each listing of the pod's events. Pod events are about the smoke pod (the first
pod of a gang).

Gangs (the multi-node smoke): an Indexed Job (``completionMode: Indexed``) gets ``completions`` pods, each carrying
its index as Kubernetes sets it (annotation and label ``batch.kubernetes.io/job-completion-index``, hostname
``<job>-<index>``); a JobSet (``jobset.x-k8s.io/v1alpha2``, served by API discovery only with ``jobset=True``) gets
the pods of its one replicated job's child Job ``<jobset>-<replicatedJob>-0``. ``logs`` is one text for every pod or
one per index; ``pod_phases`` overrides ``phases`` per index; a pod is bound to ``hosts[index]`` (default
``node-<index>``) once it leaves Pending. Services are created and deleted like the other objects. Nothing here
enforces scheduling (anti-affinity, resources): a scenario says where pods land.

The sweep (several Jobs at once): each Job's pod is placed on the node its required node affinity names
(``matchFields`` on ``metadata.name``, as the DaemonSet controller pins pods); ``node_phases`` and ``node_logs`` say
what the pod on each node goes through and prints (default: ``phases`` and ``logs``); a watch streams every pod its
label selector matches (``watches`` counts them); nodes are read one by one and patched with a JSON Patch (``test``
and ``add`` of a field, as the client sends by default), each patch recorded in ``patched``."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


class FakeKube:
    def __init__(self, phases=("Pending", "Running", "Succeeded"), logs="", events=(), nodes=(), stages=(),
                 forbidden=(), pod_phases=None, hosts=(), jobset=False, node_phases=None, node_logs=None):
        self.phases, self.logs, self.forbidden = list(phases), logs, tuple(forbidden)
        self.pod_phases, self.hosts, self.jobset = dict(pod_phases or {}), list(hosts), jobset
        self.node_phases, self.node_logs = dict(node_phases or {}), dict(node_logs or {})
        self.pods: list[dict] = []
        self.patched: list[tuple[str, list]] = []
        self.watches = 0
        self.stages = list(stages) or [{"events": list(events), "nodes": list(nodes)}]
        self.stage, self.listed = 0, False
        self.objects: dict[tuple[str, str], dict] = {}
        self.created: list[tuple[str, str]] = []
        self.bodies: dict[tuple[str, str], dict] = {}
        """Every object created, as received (kept after its delete)."""
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
                fake.bodies[(kind, name)] = json.loads(json.dumps(body))
                if kind == "Job":
                    fake.start(name, body["spec"], body["metadata"])
                if kind == "JobSet":
                    (replicated,) = body["spec"]["replicatedJobs"]
                    fake.start(f"{name}-{replicated['name']}-0", replicated["template"]["spec"], body["metadata"],
                               {"jobset.sigs.k8s.io/jobset-name": name})
                self._send(201, body)

            def do_DELETE(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))  # DeleteOptions
                path = urlparse(self.path).path.rstrip("/").split("/")
                kind = {"jobs": "Job", "configmaps": "ConfigMap", "services": "Service", "jobsets": "JobSet"}[path[-2]]
                fake.deleted.append((kind, path[-1]))
                gone = fake.objects.pop((kind, path[-1]), None)
                if kind == "Service" and gone:  # the API server answers a Service's delete with the Service
                    return self._send(200, gone)
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
                    text = fake.logs_of(path.split("/")[-2])
                    if isinstance(text, int):  # what the API server answers for a pod not started (400) or gone (404)
                        return self._send(text, {"kind": "Status", "status": "Failure", "code": text,
                                                 "reason": "BadRequest" if text == 400 else "NotFound"})
                    return self._send(200, text.encode(), "text/plain")
                if path.endswith("/pods") and query.get("watch") in ("true", "1"):
                    return self._watch(float(query.get("timeoutSeconds", "1")), query.get("labelSelector", ""))
                if path == "/apis/jobset.x-k8s.io/v1alpha2" and fake.jobset:  # API discovery
                    return self._send(200, {"kind": "APIResourceList", "apiVersion": "v1",
                                            "groupVersion": "jobset.x-k8s.io/v1alpha2", "resources": [
                                                {"name": "jobsets", "singularName": "jobset", "namespaced": True,
                                                 "kind": "JobSet", "verbs": ["create", "delete", "get", "list",
                                                                             "patch", "update", "watch"]}]})
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
                pods = [(i, pod) for i, pod in enumerate(fake.pods)
                        if all(pod["metadata"]["labels"].get(k) == v for k, v in wanted.items())]
                for step in range(max((len(fake.phases_of(i)) for i, _ in pods), default=0)):
                    for i, pod in pods:
                        if step < len(fake.phases_of(i)):
                            pod["status"]["phase"] = fake.phases_of(i)[step]
                            if pod["status"]["phase"] != "Pending" and not pod["spec"].get("nodeName"):
                                pod["spec"]["nodeName"] = fake.hosts[i] if fake.hosts else f"node-{i}"
                            event = {"type": "ADDED" if step == 0 else "MODIFIED", "object": pod}
                            chunk(json.dumps(event).encode() + b"\n")
                if not pods or any(fake.phases_of(i)[-1:] not in (["Succeeded"], ["Failed"]) for i, _ in pods):
                    time.sleep(min(seconds, 0.3))  # a pod that does not move: the watch times out
                chunk(b"")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def start(self, job: str, spec: dict, owner: dict, extra_labels: dict | None = None) -> None:
        """The pods of Job ``job`` (``spec``; created with ``owner``'s metadata), as the Job controller makes them."""
        template, indexed = spec["template"], spec.get("completionMode") == "Indexed"
        for i in range(spec.get("completions", 1) if indexed else 1):
            index = {"batch.kubernetes.io/job-completion-index": str(i)} if indexed else {}
            spec_ = json.loads(json.dumps(template["spec"]))
            if indexed:
                spec_["hostname"] = f"{job}-{i}"
            if _pinned(spec_):  # a pinned pod is placed at once: its node says its phases and logs
                spec_["nodeName"] = _pinned(spec_)
            self.pods.append({"apiVersion": "v1", "kind": "Pod",
                              "metadata": {"name": f"{job}-{i if indexed else ''}{'-' if indexed else ''}x7k2p",
                                           "namespace": owner["namespace"],
                                           "creationTimestamp": owner["creationTimestamp"],
                                           "labels": {**template["metadata"]["labels"], "job-name": job, **index,
                                                      **(extra_labels or {})},
                                           "annotations": dict(index)},
                              "spec": spec_, "status": {"phase": "Pending"}})
        self.pod = self.pod or self.pods[0]

    def phases_of(self, index: int) -> list[str]:
        """The phases pod ``index`` goes through: ``pod_phases``, else its node's ``node_phases``, else ``phases``."""
        node = self.pods[index]["spec"].get("nodeName")
        return list(self.pod_phases.get(index, self.node_phases.get(node, self.phases)))

    def logs_of(self, pod_name: str) -> str:
        """What pod ``pod_name`` prints: its node's ``node_logs``, else ``logs`` (or its index's); an int is the HTTP
        status its log read gets instead."""
        found = [i for i, pod in enumerate(self.pods) if pod["metadata"]["name"] == pod_name]
        node = self.pods[found[0]]["spec"].get("nodeName") if found else None
        if node in self.node_logs:
            return self.node_logs[node]
        if isinstance(self.logs, str):
            return self.logs
        (index,) = found
        return self.logs[index]

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
