"""A small JSON-over-HTTP server on 127.0.0.1, for the bench's and the soak's workers."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# (method, path, JSON body or None) -> (status, JSON answer)
Answer = Callable[[str, str, Any], tuple[int, Any]]


def serve_json(answer: Answer, port: int = 0, *, background: bool = True) -> ThreadingHTTPServer:
    """Serve ``answer`` on 127.0.0.1:``port`` (0: a free port), in a daemon thread unless
    ``background`` is False (then call ``serve_forever`` yourself)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self._send(*answer("GET", self.path, None))

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            self._send(*answer("POST", self.path, body))

        def _send(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    if background:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
