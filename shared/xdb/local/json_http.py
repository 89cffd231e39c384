"""A small JSON-over-HTTP server on 127.0.0.1, for the bench's and the soak's workers."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from xdb.transport import SERVER_TIMING, server_timing

# (method, path, JSON body or None) -> (status, JSON answer)
Answer = Callable[[str, str, Any], tuple[int, Any]]


def serve_json(answer: Answer, port: int = 0, *, background: bool = True) -> ThreadingHTTPServer:
    """Serve ``answer`` on 127.0.0.1:``port`` (0: a free port), in a daemon thread unless
    ``background`` is False (then call ``serve_forever`` yourself)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self._send("GET", None)

        def do_POST(self) -> None:
            self._send("POST", json.loads(self.rfile.read(int(self.headers["Content-Length"]))))

        def _send(self, method: str, body: Any) -> None:
            started = time.perf_counter()
            status, payload = answer(method, self.path, body)
            data = json.dumps(payload).encode()
            elapsed_ms = (time.perf_counter() - started) * 1000
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header(SERVER_TIMING, server_timing(elapsed_ms))
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
