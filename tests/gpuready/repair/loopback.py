"""What the fake cloud APIs (fake_gce.py, fake_azure.py) share: a quiet HTTP/1.1 handler answering JSON, served on a
loopback port from a thread of its own."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Optional


class JsonHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are two writes: no delayed-ACK stall between them

    def log_message(self, *args):  # quiet
        pass

    def send_json(self, status: int, body: Optional[dict], headers: Optional[dict] = None,
                  content_type: str = "application/json; charset=utf-8") -> None:
        """Answer ``status`` with ``body`` as JSON (None: no body) and ``headers``."""
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if body is not None:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def serve(handler: type[JsonHandler]) -> ThreadingHTTPServer:
    """``handler`` served on 127.0.0.1 (a free port: ``server.server_address[1]``) until ``server.shutdown()``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return server
