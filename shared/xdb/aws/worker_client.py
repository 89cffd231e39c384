"""HTTP calls from the engine to a worker (the iWF worker protocol)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import urllib3

from xdb.core.errors import BadRequest, WorkerCallFailed
from xdb.core.workers import check_worker_url
from xdb.signing import sign

WAIT_UNTIL_PATH = "/api/v1/workflowState/start"
EXECUTE_PATH = "/api/v1/workflowState/decide"
RPC_PATH = "/api/v1/workflowWorker/rpc"

_DETAIL_LIMIT = 1000


class WorkerClient:
    """Signs every request with ``secret`` (see :mod:`xdb.signing`) and calls only URLs
    the ``allowed`` prefixes allow (``None``: any). With ``secure`` (a deployment), it
    calls nothing unless it has both: a missing setting fails closed, not open."""

    def __init__(
        self,
        *,
        secret: bytes | None = None,
        allowed: Sequence[str] | None = None,
        secure: bool = False,
        max_connections: int = 64,
    ) -> None:
        self._http = urllib3.PoolManager(maxsize=max_connections, retries=False)
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
            response = self._http.request(
                "POST",
                url,
                body=data,
                headers=headers,
                timeout=urllib3.Timeout(connect=min(timeout, 5.0), read=timeout),
            )
        except urllib3.exceptions.HTTPError as error:
            raise WorkerCallFailed(f"calling {url} failed: {error}", url=url) from None
        text = response.data.decode("utf-8", errors="replace")
        if response.status >= 300:
            raise WorkerCallFailed(
                f"worker answered {response.status} at {path}: {text[:_DETAIL_LIMIT]}",
                url=url,
                status=response.status,
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
