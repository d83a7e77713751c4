"""A loopback HTTP proxy that injects faults into chosen API calls: in front of moto's server (AWS) or of the fake
Kubernetes API server (tests/gpuready/smoke/fake_kube.py).

Calls are named by ``classify(method, path, headers, body)`` (``aws_action`` or ``kube_action``) and faulted by plan:
``plan[name] = [fault, ...]``, one entry consumed per call, in order (``pass`` lets one call through; ``always:F``
is never consumed; ``plan["*"]`` applies to the calls the plan does not name). Faults:

- ``throttle``, ``5xx``, ``client``: the API's own error answer (AWS: 429 ThrottlingException, 500 ServerException,
  400 ClientException; Kubernetes: 429 TooManyRequests, 500 InternalError, 403 Forbidden Status objects);
- ``reset``: the connection closed before the call is forwarded (it never took effect);
- ``reset-after``: the call forwarded, so it took effect, then the connection closed without an answer;
- ``hang``: the connection accepted and never answered;
- ``late``: the call forwarded 2 s late (after the caller gave up waiting), so it lands after that, unanswered;
- ``interrupt`` / ``sigterm``: the call forwarded, then SIGINT (Ctrl-C) or SIGTERM delivered to the main thread
  while the caller still waits for the answer, which never comes (none to a caller that gave up: a signal then would
  land in whatever the process does next, another test or the interpreter's exit).
"""

from __future__ import annotations

import _thread
import http.client
import json
import signal
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Mapping, Optional
from urllib.parse import parse_qs, urlparse

FAULTS = ("throttle", "5xx", "client", "reset", "reset-after", "hang", "late", "interrupt", "sigterm")

AWS_ERRORS = {"throttle": (429, "ThrottlingException"), "5xx": (500, "ServerException"),
              "client": (400, "ClientException")}
KUBE_ERRORS = {"throttle": (429, "TooManyRequests"), "5xx": (500, "InternalError"), "client": (403, "Forbidden")}


def aws_action(method: str, path: str, headers: Mapping[str, str], body: bytes = b"") -> str:
    """REST-JSON APIs (Batch) by path, ``/v1/describejobs``; JSON-1.1 APIs (CloudWatch Logs, ECR) by target,
    ``GetLogEvents``; query APIs (EC2, Auto Scaling) by the form's ``Action``,
    ``TerminateInstanceInAutoScalingGroup``."""
    target = headers.get("X-Amz-Target")
    if target:
        return target.split(".")[-1]
    action = _query_action(headers, body)
    return action or path.split("?")[0].rstrip("/")


def _query_action(headers: Mapping[str, str], body: bytes) -> str:
    """The ``Action`` of a query-protocol call (a form body), else ''."""
    if "x-www-form-urlencoded" not in (headers.get("Content-Type") or ""):
        return ""
    return (parse_qs(body.decode("utf-8", "replace")).get("Action") or [""])[0]


def kube_action(method: str, path: str, headers: Mapping[str, str], body: bytes = b"") -> str:
    """``create-job``, ``watch-pods``, ``read-log``, ``list-events``, ``read-configmap``, ``delete-job``..."""
    url = urlparse(path)
    parts = url.path.rstrip("/").split("/")
    if parts[-1] == "log":
        return "read-log"
    if "watch=true" in url.query or "watch=1" in url.query:
        return f"watch-{parts[-1]}"
    if method == "POST":
        return f"create-{parts[-1][:-1]}"
    if method == "GET" and parts[-1] in KUBE_RESOURCES:
        return f"list-{parts[-1]}"
    return f"{'read' if method == 'GET' else method.lower()}-{parts[-2][:-1]}"


KUBE_RESOURCES = ("pods", "jobs", "configmaps", "events", "nodes", "nodeclaims", "workloads", "clusterqueues")


class FaultProxy:
    """Forwards every call to ``127.0.0.1:upstream_port``, faulting those the plan names (see the module); an API
    that is neither AWS's nor Kubernetes' gives ``error_body(status, kind, fault)``: its error answer's body."""

    def __init__(self, upstream_port: int, classify: Callable[[str, str, Mapping[str, str], bytes], str] = aws_action,
                 errors: Mapping[str, tuple[int, str]] = AWS_ERRORS,
                 error_body: Optional[Callable[[int, str, str], dict]] = None) -> None:
        self.plan: dict[str, list[str]] = {}
        self.closed = threading.Event()
        self.seen: list[tuple[str, Optional[str]]] = []
        """(call name, fault) for every call, in order."""
        self.when: list[float] = []
        """When each call of ``seen`` arrived (:func:`time.monotonic`)."""
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body are two writes: no delayed-ACK stall between

            def log_message(self, *args):  # quiet
                pass

            def _handle(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                name = classify(self.command, self.path, self.headers, body)
                faults = proxy.plan.get(name) or (proxy.plan.get("*") if name not in proxy.plan else None) or []
                fault = (faults[0] if faults[0].startswith("always:") else faults.pop(0)) if faults else None
                fault = fault.split(":", 1)[-1] if fault and fault != "pass" else None
                proxy.when.append(time.monotonic())
                proxy.seen.append((name, fault))
                if fault == "hang":
                    proxy.closed.wait()
                    return
                if fault == "reset":
                    self._close()
                    return
                if fault in errors:
                    self._error(*errors[fault], fault, query=bool(_query_action(self.headers, body)))
                    return
                if fault == "late":
                    time.sleep(2.0)
                upstream = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                upstream.request(self.command, self.path, body=body, headers=headers)
                answer = upstream.getresponse()  # the call took effect (a watch: it is open)
                if fault in ("interrupt", "sigterm"):
                    if self._caller_waits():  # never a signal to a caller that gave up: it would land elsewhere
                        _thread.interrupt_main(signal.SIGINT if fault == "interrupt" else signal.SIGTERM)
                        time.sleep(0.5)
                    self._close()
                    answer.read()  # the upstream's answer drained (a watch: to its end), so it sees no reset
                    upstream.close()
                    return
                data = answer.read()
                if fault in ("reset-after", "late"):
                    self._close()
                    return
                self.send_response(answer.status)
                for key, value in answer.getheaders():
                    if key.lower() not in ("content-length", "transfer-encoding", "connection", "server", "date"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _caller_waits(self) -> bool:
                """Whether the caller still waits for the answer (its connection open, nothing more sent)."""
                try:
                    self.connection.setblocking(False)
                    return self.connection.recv(1, socket.MSG_PEEK) != b""  # b"": it hung up (gave up waiting)
                except BlockingIOError:
                    return True
                except OSError:
                    return False
                finally:
                    self.connection.setblocking(True)

            def _close(self):
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)

            def _error(self, status: int, kind: str, fault: str, query: bool = False):
                if query:  # EC2's error document, which botocore's query parsers both read
                    data = (f"<Response><Errors><Error><Code>{kind}</Code><Message>injected {fault}</Message>"
                            f"</Error></Errors><RequestID>injected-{fault}</RequestID></Response>").encode()
                    self.send_response(status)
                    self.send_header("Content-Type", "text/xml")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                if error_body is not None:
                    payload = error_body(status, kind, fault)
                elif errors is KUBE_ERRORS:
                    payload = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": kind,
                               "message": f"injected {fault}", "code": status}
                else:
                    payload = {"__type": kind, "message": f"injected {fault}"}
                data = json.dumps(payload).encode()
                self.send_response(status)
                if errors is AWS_ERRORS:
                    self.send_header("x-amzn-ErrorType", kind)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

        class Server(ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                """A client that hung up before its answer (a timeout or retry of its own) is the client's business:
                the proxy prints nothing, so that only the CLI's own tracebacks reach the matrix's stderr."""
                if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
                    super().handle_error(request, client_address)

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self.closed.set()
        self.server.shutdown()
