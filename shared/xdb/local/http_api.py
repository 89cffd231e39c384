"""The engine API on 127.0.0.1: HTTP requests become API Gateway HTTP API (v2) events
for the API function, and its answers become HTTP responses."""

from __future__ import annotations

import base64
import logging
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from xdb.local.pumps import Handler, context_for


def to_event(method: str, target: str, headers: dict[str, str], body: bytes) -> dict[str, Any]:
    """An API Gateway HTTP API payload-2.0 event for one request."""
    url = urlsplit(target)
    now = time.time()
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": url.path,
        "rawQueryString": url.query,
        "headers": {k.lower(): v for k, v in headers.items()},
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "local",
            "domainName": "127.0.0.1",
            "http": {
                "method": method,
                "path": url.path,
                "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1",
                "userAgent": headers.get("User-Agent", ""),
            },
            "requestId": str(now),
            "routeKey": "$default",
            "stage": "$default",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
            "timeEpoch": int(now * 1000),
        },
        "body": body.decode("utf-8", errors="replace") if body else None,
        "isBase64Encoded": False,
    }


logger = logging.getLogger(__name__)


class ApiServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: Handler) -> None:
        self.function = handler
        super().__init__(address, _RequestHandler)

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.serve_forever, name="api-server", daemon=True)
        thread.start()
        return thread


class _RequestHandler(BaseHTTPRequestHandler):
    server: ApiServer
    protocol_version = "HTTP/1.1"

    def __getattr__(self, name: str) -> Any:
        # Like API Gateway's $default route, every method goes to the API function
        # (which answers 405 for a method a path does not take).
        if name.startswith("do_"):
            return lambda: self._invoke(name[3:])
        raise AttributeError(name)

    def _invoke(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        event = to_event(method, self.path, dict(self.headers.items()), body)
        try:
            answer = self.server.function(event, context_for("api"))
        except Exception:
            # A function error: API Gateway answers 500 with this body (and Lambda logs it).
            logger.exception("the API function failed")
            answer = {"statusCode": 500, "body": '{"message":"Internal Server Error"}'}
        payload = answer.get("body") or ""
        data = base64.b64decode(payload) if answer.get("isBase64Encoded") else payload.encode()
        self.send_response(answer.get("statusCode", 200))
        for name, value in (answer.get("headers") or {}).items():
            self.send_header(name, value)
        for name, values in (answer.get("multiValueHeaders") or {}).items():
            for value in values:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if method != "HEAD":
            self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the transitions log is the useful one
