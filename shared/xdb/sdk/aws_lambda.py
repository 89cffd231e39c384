"""The worker as an AWS Lambda function behind a function URL (or an HTTP API)::

    lambda_handler = xdb.sdk.aws_lambda.handler(WorkerService(registry))

The signing secret comes from ``XDB_SIGNING_SECRET`` (or pass it to ``WorkerService``).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from typing import Any

from xdb.sdk.worker import WorkerService

LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]


def handler(worker: WorkerService) -> LambdaHandler:
    """A Lambda handler for function URL events (payload format 2.0)."""

    def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        http = event.get("requestContext", {}).get("http", {})
        if http.get("method", "POST") != "POST":
            return _answer(405, b'{"detail": "the worker protocol is POST only"}')
        body = event.get("body") or ""
        data = base64.b64decode(body) if event.get("isBase64Encoded") else body.encode()
        reply = worker.handle(event.get("rawPath", "/"), data, event.get("headers") or {})
        return _answer(reply.status, reply.body, reply.headers)

    return lambda_handler


def _answer(status: int, body: bytes, headers: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {
        "statusCode": status,
        "headers": {"Content-Type": "application/json", **(headers or {})},
        "body": body.decode(),
        "isBase64Encoded": False,
    }
