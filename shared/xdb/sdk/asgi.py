"""The worker as an ASGI application: run it under uvicorn, or mount it in Starlette/FastAPI.

::

    app = asgi_app(WorkerService(registry))        # uvicorn mymodule:app --port 8802

User code is synchronous; each request runs on a worker thread so the event loop stays free.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

from xdb.sdk.worker import WorkerService

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def asgi_app(worker: WorkerService) -> ASGIApp:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        if scope["method"] != "POST":
            await _answer(send, 405, b'{"detail": "the worker protocol is POST only"}', allow=True)
            return
        body = bytearray()
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        # Inside a mount, Starlette passes the mount point as root_path and the full path.
        path, root = scope["path"], scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root) :]
        reply = await asyncio.get_running_loop().run_in_executor(
            None, worker.handle, path, bytes(body), headers
        )
        await _answer(send, reply.status, reply.body, reply.headers)

    return app


async def _answer(
    send: Send,
    status: int,
    body: bytes,
    extra: Mapping[str, str] | None = None,
    *,
    allow: bool = False,
) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    headers += [
        (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (extra or {}).items()
    ]
    if allow:
        headers.append((b"allow", b"POST"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
