"""Which worker URLs a deployment may call: an allow-list of URL prefixes.

A prefix allows a URL with the same scheme, host and port whose path starts with the
prefix's path at a segment boundary: ``https://w.example.com/app`` allows
``https://w.example.com/app/`` and ``.../app/v2``, but not ``https://w.example.com.evil.io``
or ``https://w.example.com/apple``.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit

from xdb.core.errors import BadRequest


def check_worker_url(url: str, allowed: Sequence[str] | None) -> None:
    """Raise :class:`BadRequest` unless ``url`` is an http(s) URL the allow-list allows.
    ``None`` allows every URL (the local runtime only; deployments always set a list)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadRequest(f"iwfWorkerUrl must be an http:// or https:// URL, got {url!r}")
    if allowed is None:
        return
    if not any(_allows(prefix, url) for prefix in allowed):
        raise BadRequest(
            f"worker URL {url!r} is not in this deployment's allow-list "
            f"({', '.join(allowed) or 'empty'}; see XDB_WORKER_URLS)"
        )


def _allows(prefix: str, url: str) -> bool:
    want, got = urlsplit(prefix), urlsplit(url)
    if (want.scheme, want.hostname, want.port) != (got.scheme, got.hostname, got.port):
        return False
    base = want.path.rstrip("/")
    return got.path == base or got.path.startswith(base + "/") or not base
