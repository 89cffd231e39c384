"""Which worker URLs a deployment may call: an allow-list of URL prefixes.

A prefix allows a URL with the same scheme, host and port whose path starts with the
prefix's path at a segment boundary: ``https://w.example.com/app`` allows
``https://w.example.com/app/`` and ``.../app/v2``, but not ``https://w.example.com.evil.io``
or ``https://w.example.com/apple``.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import SplitResult, urlsplit

from xdb.core.errors import BadRequest


def check_worker_url(url: str, allowed: Sequence[str] | None) -> None:
    """Raise :class:`BadRequest` unless ``url`` is an http(s) URL the allow-list allows.
    ``None`` allows every URL (the local runtime only; deployments always set a list)."""
    parts = _parts(url)
    if allowed is None:
        return
    if not any(_allows(prefix, parts) for prefix in allowed):
        raise BadRequest(
            f"worker URL {url!r} is not in this deployment's allow-list "
            f"({', '.join(allowed) or 'empty'}; see XDB_WORKER_URLS)"
        )


def _parts(url: str) -> SplitResult:
    """``url`` split, if it is a plain http(s) URL that every HTTP client reads the same way:
    no user info, backslashes, whitespace or dot segments (urllib3 reads
    ``http://a\\@b/`` as host ``a`` where ``urlsplit`` sees ``b``), and a valid port."""
    bad = f"iwfWorkerUrl must be a plain http:// or https:// URL, got {url!r}"
    if any(c in url for c in "\\ \t\r\n"):
        raise BadRequest(bad)
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises ValueError for a bad port)
    except ValueError:
        raise BadRequest(bad) from None
    segments = parts.path.split("/")
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.username is not None
        or "." in segments
        or ".." in segments
    ):
        raise BadRequest(bad)
    return parts


def _allows(prefix: str, got: SplitResult) -> bool:
    want = urlsplit(prefix)
    if (want.scheme, want.hostname, want.port) != (got.scheme, got.hostname, got.port):
        return False
    base = want.path.rstrip("/")
    return got.path == base or got.path.startswith(base + "/") or not base
