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
and ``add`` of a field, as the client sends by default), each patch recorded in ``patched``. DRA: a stage's
``resourceslices`` are listed by ``fieldSelector=spec.driver=...``; ResourceClaimTemplates are created and deleted
like the other objects.

Draining and repair (``gpuready sweep --repair``): ``running`` pods (plain Pod objects with ``spec.nodeName``) are on
the nodes, listed across namespaces by ``fieldSelector=spec.nodeName=NODE`` with the sweep's own; an Eviction
(policy/v1) removes a pod unless a ``pdbs`` PodDisruptionBudget (policy/v1) selects it with
``status.disruptionsAllowed`` 0: then the API server's 429 (``evicted`` records those removed). Karpenter's
NodeClaims of the stage are listed by label selector, and a delete gives one a ``deletionTimestamp`` (Karpenter's
termination finalizer keeps it while it drains the node), recorded in ``deleted``."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

from tests.kueue_sim import Kueue


class FakeKube:
    def __init__(self, phases=("Pending", "Running", "Succeeded"), logs="", events=(), nodes=(), stages=(),
                 forbidden=(), pod_phases=None, hosts=(), jobset=False, node_phases=None, node_logs=None,
                 kueue=None, running=(), pdbs=()):
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
        self.kueue = FakeKueue(self, **(kueue or {})) if kueue is not None else None
        self.running = [json.loads(json.dumps(p)) for p in running]
        self.pdbs = [json.loads(json.dumps(p)) for p in pdbs]
        self.evicted: list[tuple[str, str]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body are two writes: no delayed-ACK stall between

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
                if urlparse(self.path).path.endswith("/eviction"):
                    return self._send(*fake.evict(body))
                kind, name = body["kind"], body["metadata"]["name"]
                if (kind, name) in fake.objects:
                    return self._send(409, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                            "reason": "AlreadyExists", "code": 409,
                                            "message": f'{kind.lower()}s "{name}" already exists'})
                body["metadata"].update({"uid": f"uid-{name}", "creationTimestamp": "2026-11-22T10:00:00Z"})
                fake.objects[(kind, name)] = body
                fake.created.append((kind, name))
                fake.bodies[(kind, name)] = json.loads(json.dumps(body))
                if fake.kueue and fake.kueue.takes(body):  # Kueue starts it on admission
                    fake.kueue.created(body)
                    return self._send(201, body)
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
                if path[-2] == "nodeclaims":
                    return self._send(*fake.delete_claim(path[-1]))
                kind = {"jobs": "Job", "configmaps": "ConfigMap", "services": "Service", "jobsets": "JobSet",
                        "workloads": "Workload", "resourceclaimtemplates": "ResourceClaimTemplate",
                        "computedomains": "ComputeDomain"}[path[-2]]
                fake.deleted.append((kind, path[-1]))
                gone = fake.objects.pop((kind, path[-1]), None)
                if fake.kueue and gone:
                    fake.kueue.gone(gone)
                if kind == "Workload" and not gone:
                    return self._send(404, {"kind": "Status", "status": "Failure", "reason": "NotFound", "code": 404})
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
                if "/pods/" in path:  # a pod read by name, as the last watch event left it
                    found = [pod for pod in fake.pods if pod["metadata"]["name"] == path.split("/")[-1]]
                    if found:
                        return self._send(200, found[0])
                if path.endswith("/pods") and query.get("watch") in ("true", "1"):
                    return self._watch(float(query.get("timeoutSeconds", "1")), query.get("labelSelector", ""))
                if path == "/apis/jobset.x-k8s.io/v1alpha2" and fake.jobset:  # API discovery
                    return self._send(200, {"kind": "APIResourceList", "apiVersion": "v1",
                                            "groupVersion": "jobset.x-k8s.io/v1alpha2", "resources": [
                                                {"name": "jobsets", "singularName": "jobset", "namespaced": True,
                                                 "kind": "JobSet", "verbs": ["create", "delete", "get", "list",
                                                                             "patch", "update", "watch"]}]})
                if fake.kueue and path.startswith("/apis/kueue.x-k8s.io/v1beta2/"):
                    found = fake.kueue.get(path)
                    if found is not None:
                        return self._send(200, found)
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
                if path == "/apis/resource.k8s.io/v1/resourceslices":  # DRA: the stage's, by spec.driver
                    wanted = dict(p.split("=", 1) for p in filter(None, query.get("fieldSelector", "").split(",")))
                    items = [s for s in fake.now().get("resourceslices", ())
                             if all(s["spec"].get(k.split(".", 1)[1]) == v for k, v in wanted.items())]
                    return self._send(200, {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSliceList",
                                            "metadata": {}, "items": items})
                if path == "/api/v1/pods":
                    wanted = dict(p.split("=", 1) for p in filter(None, query.get("fieldSelector", "").split(",")))
                    items = [p for p in fake.running + fake.pods
                             if all(p["spec"].get(k.split(".", 1)[1]) == v for k, v in wanted.items())]
                    return self._send(200, {"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": items})
                if path == "/apis/karpenter.sh/v1/nodeclaims":
                    wanted = dict(p.split("=", 1) for p in filter(None, query.get("labelSelector", "").split(",")))
                    items = [c for c in fake.now().get("nodeclaims", ())
                             if all((c["metadata"].get("labels") or {}).get(k) == v for k, v in wanted.items())]
                    return self._send(200, {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaimList",
                                            "metadata": {}, "items": items})
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

    def evict(self, eviction: dict) -> tuple[int, dict]:
        """An Eviction of a ``running`` pod, as the API server answers it (``pkg/registry/core/pod/storage/
        eviction.go``: 429 when a PodDisruptionBudget allows no disruption)."""
        meta = eviction["metadata"]
        pod = next((p for p in self.running if (p["metadata"]["namespace"], p["metadata"]["name"]) ==
                    (meta["namespace"], meta["name"])), None)
        if pod is None:
            return 404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404,
                         "message": f'pods "{meta["name"]}" not found'}
        labels = pod["metadata"].get("labels") or {}
        for pdb in self.pdbs:
            selects = pdb["spec"]["selector"].get("matchLabels") or {}
            if pdb["metadata"]["namespace"] == meta["namespace"] and selects and \
                    all(labels.get(k) == v for k, v in selects.items()) and \
                    (pdb.get("status") or {}).get("disruptionsAllowed", 0) < 1:
                return 429, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "TooManyRequests",
                             "code": 429, "message": "Cannot evict pod as it would violate the pod's disruption "
                                                     "budget.",
                             "details": {"causes": [{"reason": "DisruptionBudget", "message": f"The disruption "
                                                     f"budget {pdb['metadata']['name']} needs 1 healthy pods and "
                                                     "has 1 currently"}]}}
        self.running.remove(pod)
        self.evicted.append((meta["namespace"], meta["name"]))
        return 201, {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201}

    def delete_claim(self, name: str) -> tuple[int, dict]:
        """A NodeClaim's delete: Karpenter's finalizer keeps it, with a ``deletionTimestamp``, while it drains."""
        claim = next((c for c in self.now().get("nodeclaims", ()) if c["metadata"]["name"] == name), None)
        self.deleted.append(("NodeClaim", name))
        if claim is None:
            return 404, {"kind": "Status", "status": "Failure", "reason": "NotFound", "code": 404}
        claim["metadata"].setdefault("deletionTimestamp", _now())
        return 200, claim

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


KUEUE = "kueue.x-k8s.io/v1beta2"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
GPU = "nvidia.com/gpu"


class FakeKueue:
    """Kueue (v0.19.2, ``kueue.x-k8s.io/v1beta2``) as far as the smoke tests need it, inside :class:`FakeKube`.

    A Job or JobSet created with the label ``kueue.x-k8s.io/queue-name`` in its own labels is not started: a
    Workload is made for it (owned by it, labelled ``kueue.x-k8s.io/job-uid``; one pod set ``main`` of
    ``parallelism`` pods for a Job, one per replicated job of a JobSet) and the queues are scheduled by Kueue's own
    arithmetic (tests/kueue_sim.py: nominal quota, borrowing and lending limits, the Cohort's quota, flavors in
    order, preemption within the ClusterQueue and reclaim within the cohort, fair sharing when ``config`` has it): a
    Workload whose LocalQueue or ClusterQueue is missing or inactive gets Kueue's ``QuotaReserved=False`` message; one
    whose ``nvidia.com/gpu`` fits is admitted whole (``QuotaReserved``/``Admitted`` True, ``podSetAssignments`` with
    the flavor, usage on the ClusterQueue's ``flavorsUsage``) and its Job started (the fake's pods); otherwise it
    stays pending with Kueue's ``couldn't assign flavors to pod set ...: insufficient unused quota ...`` message. A
    preempted Workload gets Kueue's ``Evicted``/``Preempted`` conditions and ``requeueState``, its pods gone.

    ``cluster_queues`` and ``local_queues``: the objects (as a stack renders them; status is filled here);
    ``objects``: the other Kueue objects admission reads (ResourceFlavors, Cohorts, WorkloadPriorityClasses);
    ``config``: the controller's Configuration;
    ``admitted``: other teams' running work, ``{"name", "namespace", "queue", "gpus", "priority"}`` each, admitted
    at start; ``arrivals``: ``{"after": N, ...same keys}``, each submitted when the namespace's Workloads have been
    listed N times; ``gc``: the garbage collector deletes a Workload with its Job (False: it lags, the Workload
    stays). Every Kueue object served is recorded in ``served`` (to validate against the CRDs)."""

    def __init__(self, kube, cluster_queues=(), local_queues=(), admitted=(), arrivals=(), gc=True, objects=(),
                 config=None):
        self.kube, self.gc = kube, gc
        self.cluster_queues = {q["metadata"]["name"]: json.loads(json.dumps(q)) for q in cluster_queues}
        self.local_queues = {(q["metadata"]["namespace"], q["metadata"]["name"]): json.loads(json.dumps(q))
                             for q in local_queues}
        self.workloads: dict[tuple[str, str], dict] = {}
        self.sim = Kueue([*objects, *self.cluster_queues.values(), *self.local_queues.values()], config, now=_now)
        """Kueue's admission decisions (tests/kueue_sim.py); the Workloads above are what the API serves."""
        self.arrivals, self.lists, self.served = [dict(a) for a in arrivals], 0, []
        self.sequence = 0
        for other in admitted:
            self.submit_other(other)
        self.schedule()

    def takes(self, body: dict) -> bool:
        return body["kind"] in ("Job", "JobSet") and QUEUE_LABEL in (body["metadata"].get("labels") or {})

    def created(self, body: dict) -> None:
        """A Job or JobSet handed to Kueue: its Workload, then a scheduling round."""
        meta, spec = body["metadata"], body["spec"]
        if body["kind"] == "Job":
            pod_sets = [{"name": "main", "count": spec.get("parallelism", 1), "template": spec["template"]}]
        else:
            pod_sets = [{"name": r["name"], "count": r.get("replicas", 1) * r["template"]["spec"].get("parallelism", 1),
                         "template": r["template"]["spec"]["template"]} for r in spec["replicatedJobs"]]
        self.add_workload(f"{body['kind'].lower()}-{meta['name']}-{self.next()}", meta["namespace"],
                          meta["labels"][QUEUE_LABEL], pod_sets, 100, owner=body)
        self.schedule()

    def next(self) -> str:
        self.sequence += 1
        return f"{self.sequence:05d}"[-5:]

    def submit_other(self, other: dict) -> None:
        template = {"spec": {"containers": [{"name": "main", "image": "trainer",
                                             "resources": {"limits": {GPU: str(other["gpus"])}}}]}}
        self.add_workload(other["name"], other["namespace"], other["queue"],
                          [{"name": "main", "count": 1, "template": template}], other.get("priority", 100))

    def add_workload(self, name, namespace, queue, pod_sets, priority, owner=None) -> None:
        meta = {"name": name, "namespace": namespace, "uid": f"uid-{name}", "creationTimestamp": _now(),
                "labels": {}}
        if owner is not None:
            meta["labels"]["kueue.x-k8s.io/job-uid"] = owner["metadata"]["uid"]
            meta["ownerReferences"] = [{"apiVersion": owner["apiVersion"], "kind": owner["kind"],
                                        "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
                                        "controller": True, "blockOwnerDeletion": True}]
        workload = {"apiVersion": KUEUE, "kind": "Workload", "metadata": meta,
                    "spec": {"queueName": queue, "priority": priority, "active": True,
                             "podSets": json.loads(json.dumps(pod_sets))},
                    "status": {}}
        self.workloads[(namespace, name)] = workload
        selector = {k: v for p in pod_sets for k, v in (p["template"]["spec"].get("nodeSelector") or {}).items()}
        self.sim.add(name, namespace, queue, {GPU: self.gpus(workload)}, priority, workload["spec"]["podSets"],
                     selector, job_uid=meta["labels"].get("kueue.x-k8s.io/job-uid", "UNKNOWN"))
        self.kube.objects[("Workload", name)] = workload
        self.kube.created.append(("Workload", name))

    @staticmethod
    def gpus(workload: dict) -> int:
        total = 0
        for pod_set in workload["spec"]["podSets"]:
            for container in pod_set["template"]["spec"]["containers"]:
                total += pod_set.get("count", 1) * int((container.get("resources") or {}).get("limits", {}).get(GPU, 0))
        return total

    def flavor(self, cq: dict) -> tuple[str, dict]:
        for group in cq["spec"]["resourceGroups"]:
            for flavor in group["flavors"]:
                for resource in flavor["resources"]:
                    if resource["name"] == GPU:
                        return flavor["name"], resource
        raise AssertionError("a GPU ClusterQueue covers nvidia.com/gpu")

    def schedule(self) -> None:
        """A scheduling round of the simulator; what it decided written on each Workload: admitted ones started,
        preempted ones' pods gone."""
        self.sim.schedule()
        for key, workload in self.workloads.items():
            decided = self.sim.workloads[key]
            was = workload["status"].get("admission")
            workload["status"]["conditions"] = [dict(c) for c in decided.conditions]
            if decided.evictions:
                workload["status"]["requeueState"] = {"count": decided.evictions}
            if decided.admitted:
                workload["status"]["admission"] = {
                    "clusterQueue": decided.cluster_queue, "podSetAssignments": [
                        {"name": p["name"], "count": p.get("count", 1), "flavors": dict(decided.flavors),
                         "resourceUsage": {GPU: str(self.gpus({"spec": {"podSets": [p]}}))}}
                        for p in workload["spec"]["podSets"]]}
                if not was:
                    self.started(workload)
            elif was:
                workload["status"].pop("admission")
                for owner in workload["metadata"].get("ownerReferences") or ():  # suspended again: its pods go
                    self.kube.pods = [p for p in self.kube.pods
                                      if p["metadata"]["labels"].get("job-name") != owner["name"]]
        self.status()

    def started(self, workload: dict) -> None:
        """An admitted Workload's Job (or JobSet) unsuspended: its pods made."""
        for owner in workload["metadata"].get("ownerReferences") or ():
            job = self.kube.objects.get((owner["kind"], owner["name"]))
            if job is None:
                continue
            job["spec"]["suspend"] = False
            if owner["kind"] == "Job":
                self.kube.start(owner["name"], job["spec"], job["metadata"])
            else:
                (replicated,) = job["spec"]["replicatedJobs"]
                self.kube.start(f"{owner['name']}-{replicated['name']}-0", replicated["template"]["spec"],
                                job["metadata"], {"jobset.sigs.k8s.io/jobset-name": owner["name"]})

    def status(self) -> None:
        """Each ClusterQueue's status as Kueue writes it: usage per flavor, pending and admitted counts, Active."""
        for name, cq in self.cluster_queues.items():
            flavor, quota = self.flavor(cq)
            used = int(self.sim.admitted_in(name, flavor))
            mine = [w for w in self.workloads.values() if self.local_queues.get(
                (w["metadata"]["namespace"], w["spec"]["queueName"]), {}).get("spec", {}).get("clusterQueue") == name]
            admitted = sum(1 for w in mine if w["status"].get("admission"))
            stopped = cq["spec"].get("stopPolicy", "None") != "None"
            usage = [{"name": flavor, "resources": [{"name": GPU, "total": str(used),
                                                     "borrowed": str(max(0, used - int(quota["nominalQuota"])))}]}]
            cq["status"] = {"flavorsUsage": usage, "flavorsReservation": usage, "admittedWorkloads": admitted,
                            "reservingWorkloads": admitted, "pendingWorkloads": len(mine) - admitted,
                            "conditions": [{"type": "Active", "status": "False" if stopped else "True",
                                            "reason": "Stopped" if stopped else "Ready",
                                            "message": "Can't admit new workloads: is stopped" if stopped
                                            else "Can admit new workloads", "lastTransitionTime": _now(),
                                            "observedGeneration": 1}]}

    def gone(self, obj: dict) -> None:
        """An object deleted: a Workload's quota freed; a Job's Workload deleted with it (``gc``)."""
        if obj["kind"] == "Workload":
            self.forget((obj["metadata"]["namespace"], obj["metadata"]["name"]))
        elif self.gc:
            for key, workload in list(self.workloads.items()):
                if any(o["name"] == obj["metadata"]["name"] and o["kind"] == obj["kind"]
                       for o in workload["metadata"].get("ownerReferences") or ()):
                    self.forget(key)
                    self.kube.objects.pop(("Workload", key[1]), None)
        self.schedule()

    def forget(self, key: tuple[str, str]) -> None:
        if self.workloads.pop(key, None) is not None:
            self.sim.remove(self.sim.workloads[key])

    def get(self, path: str):
        """The Kueue object or list at ``path`` (None: not found)."""
        parts = path[len("/apis/kueue.x-k8s.io/v1beta2/"):].split("/")
        if parts[0] == "namespaces" and parts[2] == "workloads" and len(parts) == 3:
            self.lists += 1
            self.schedule()
            for arrival in [a for a in self.arrivals if a["after"] <= self.lists]:
                self.arrivals.remove(arrival)
                self.submit_other(arrival)
                self.schedule()
            items = [w for (ns, _), w in self.workloads.items() if ns == parts[1]]
            self.served.extend(items)
            return {"apiVersion": KUEUE, "kind": "WorkloadList", "metadata": {}, "items": items}
        if parts[0] == "namespaces" and parts[2] == "localqueues" and len(parts) == 4:
            found = self.local_queues.get((parts[1], parts[3]))
        elif parts[0] == "clusterqueues" and len(parts) == 1:
            self.served.extend(self.cluster_queues.values())
            return {"apiVersion": KUEUE, "kind": "ClusterQueueList", "metadata": {},
                    "items": list(self.cluster_queues.values())}
        elif parts[0] == "clusterqueues":
            found = self.cluster_queues.get(parts[1])
        else:
            found = None
        if found is not None:
            self.served.append(found)
        return found


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
