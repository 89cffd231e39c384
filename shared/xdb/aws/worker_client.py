"""HTTP calls from the engine to a worker (the iWF worker protocol)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from xdb.core.errors import BadRequest, WorkerCallFailed
from xdb.core.workers import check_worker_url
from xdb.signing import sign
from xdb.transport import HttpTransport, Transport, TransportError

_DETAIL_LIMIT = 1000


class WorkerClient:
    """Signs every request with ``secret`` (see :mod:`xdb.signing`) and calls only URLs
    the ``allowed`` prefixes allow (``None``: any). With ``secure`` (a deployment), it
    calls nothing unless it has both: a missing setting fails closed, not open. The
    ``transport`` carries the request (HTTP unless a test plugs in another)."""

    def __init__(
        self,
        *,
        secret: bytes | None = None,
        allowed: Sequence[str] | None = None,
        secure: bool = False,
        transport: Transport | None = None,
    ) -> None:
        self._transport = transport or HttpTransport()
        self._secret = secret
        self._allowed = allowed
        self._misconfigured = secure and (secret is None or allowed is None)

    def post(
        self, worker_url: str, path: str, body: dict[str, Any], *, timeout: float
    ) -> dict[str, Any]:
        """POST a JSON body; return the JSON answer or raise :class:`WorkerCallFailed`."""
        url = worker_url.rstrip("/") + path
        if self._misconfigured:
            raise WorkerCallFailed(
                "this deployment calls no worker without a signing secret and a worker URL "
                "allow-list (XDB_SIGNING_SECRET_ARN, XDB_WORKER_URLS)",
                url=url,
            )
        try:
            check_worker_url(worker_url, self._allowed)
        except BadRequest as error:
            raise WorkerCallFailed(error.message, url=url) from None
        data = json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        if self._secret is not None:
            headers.update(sign(self._secret, data))
        try:
            reply = self._transport(url, data, headers, timeout)
        except TransportError as error:
            raise WorkerCallFailed(f"calling {url} failed: {error}", url=url) from None
        text = reply.body.decode("utf-8", errors="replace")
        if reply.status >= 300:
            detail, error_type = _worker_error(text)
            raise WorkerCallFailed(
                f"worker answered {reply.status} at {path}: {text[:_DETAIL_LIMIT]}",
                url=url,
                status=reply.status,
                worker_detail=detail,
                worker_error_type=error_type,
            )
        try:
            answer = json.loads(text)
        except ValueError:
            raise WorkerCallFailed(
                f"worker answered malformed JSON at {path}: {text[:200]!r}", url=url
            ) from None
        if not isinstance(answer, dict):
            raise WorkerCallFailed(
                f"worker answered a JSON {type(answer).__name__}, not an object, at {path}", url=url
            )
        return answer


def _worker_error(text: str) -> tuple[str, str | None]:
    """The worker's own detail and error type: from its error body (``detail``,
    ``errorType``) when it sent one, else the body's start."""
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("detail"), str):
        error_type = body.get("errorType")
        return body["detail"][:_DETAIL_LIMIT], error_type if isinstance(error_type, str) else None
    return text[:_DETAIL_LIMIT], None
