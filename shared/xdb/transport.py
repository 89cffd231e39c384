"""How JSON requests travel between the engine, workers and clients: a pluggable transport.

The engine's calls to workers and the SDK client's calls to the engine both go through a
:class:`Transport`, a callable ``(url, body, headers, timeout) -> Reply``. The default,
:class:`HttpTransport`, sends real HTTP with urllib3; tests and :mod:`xdb.testing` plug in
one that calls the other side in the same process (as httpx's mock transport does), so
everything around the call (signing, allow-lists, error mapping) still runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

import urllib3


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)


class TransportError(Exception):
    """The request got no answer: no connection, a timeout, a broken response."""


class Transport(Protocol):
    def __call__(
        self, url: str, body: bytes, headers: Mapping[str, str], timeout: float
    ) -> Reply: ...


class HttpTransport:
    """POSTs over HTTP with a pooled urllib3 client; no retries (callers decide)."""

    def __init__(self, max_connections: int = 64) -> None:
        self._http = urllib3.PoolManager(maxsize=max_connections, retries=False)

    def __call__(self, url: str, body: bytes, headers: Mapping[str, str], timeout: float) -> Reply:
        try:
            response = self._http.request(
                "POST",
                url,
                body=body,
                headers=dict(headers),
                timeout=urllib3.Timeout(connect=min(timeout, 5.0), read=timeout),
            )
        except urllib3.exceptions.HTTPError as error:
            raise TransportError(str(error)) from None
        return Reply(response.status, response.data, response.headers)

    def close(self) -> None:
        """Close the pooled connections."""
        self._http.clear()


# A worker says how long it took in a Server-Timing header (W3C Server Timing), so callers
# can tell its time from the network's: ``worker;dur=<milliseconds>``.
SERVER_TIMING = "Server-Timing"


def server_timing(milliseconds: float) -> str:
    return f"worker;dur={milliseconds:.2f}"


def server_time_ms(headers: Mapping[str, str]) -> float | None:
    """The total duration a Server-Timing header reports, in milliseconds (None without one)."""
    value = next((v for k, v in headers.items() if k.lower() == SERVER_TIMING.lower()), None)
    if value is None:
        return None
    durations = [
        param.split("=", 1)[1].strip('" ')
        for metric in value.split(",")
        for param in metric.split(";")[1:]
        if param.strip().startswith("dur=")
    ]
    try:
        return sum(float(d) for d in durations)
    except ValueError:
        return None
