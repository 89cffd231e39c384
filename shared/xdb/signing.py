"""Signed worker requests: the engine signs every call to a worker; workers verify.

A worker should accept a call only if it verifies: then it came from this deployment's
engine (who holds the secret), its body is the one signed, and it is recent. Headers::

    X-Xdb-Timestamp: 1767225600                    (Unix seconds when it was signed)
    X-Xdb-Signature: v1=<hex HMAC-SHA256(secret, "<timestamp>." + body)>

The secret lives in AWS Secrets Manager (the stack outputs its ARN). This module has no
dependencies beyond the standard library, so a worker can use it as it is::

    from xdb.signing import SignatureError, verify

    try:
        verify(secret, request_body_bytes, request_headers)
    except SignatureError as error:
        return 401, str(error)
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Mapping

TIMESTAMP_HEADER = "X-Xdb-Timestamp"
SIGNATURE_HEADER = "X-Xdb-Signature"
VERSION = "v1"
# How old (or how far in the future, for clock skew) a signed request may be.
MAX_AGE_SECONDS = 300


class SignatureError(Exception):
    """The request is not signed by this deployment's engine, or not recently."""


def sign(secret: bytes, body: bytes, *, now: float | None = None) -> dict[str, str]:
    """The headers that sign ``body``."""
    timestamp = str(int(time.time() if now is None else now))
    return {
        TIMESTAMP_HEADER: timestamp,
        SIGNATURE_HEADER: f"{VERSION}={_mac(secret, timestamp, body)}",
    }


def verify(
    secret: bytes,
    body: bytes,
    headers: Mapping[str, str],
    *,
    now: float | None = None,
    max_age: float = MAX_AGE_SECONDS,
) -> None:
    """Raise :class:`SignatureError` unless ``headers`` sign ``body`` with ``secret``,
    within ``max_age`` seconds of ``now``. Header names are matched case-insensitively."""
    lower = {name.lower(): value for name, value in headers.items()}
    timestamp = lower.get(TIMESTAMP_HEADER.lower())
    signature = lower.get(SIGNATURE_HEADER.lower())
    if not timestamp or not signature:
        raise SignatureError(f"missing {TIMESTAMP_HEADER} or {SIGNATURE_HEADER}")
    try:
        signed_at = int(timestamp)
    except ValueError:
        raise SignatureError(f"{TIMESTAMP_HEADER} is not a Unix time: {timestamp!r}") from None
    age = (time.time() if now is None else now) - signed_at
    if abs(age) > max_age:
        raise SignatureError(f"signed {age:.0f} s ago; accepted within {max_age:.0f} s")
    expected = f"{VERSION}={_mac(secret, timestamp, body)}"
    if not hmac.compare_digest(expected.encode(), signature.encode("utf-8", "replace")):
        raise SignatureError("signature does not match the body")


def _mac(secret: bytes, timestamp: str, body: bytes) -> str:
    return hmac.new(secret, timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
