"""Fixtures every tier may use: a scripted worker on 127.0.0.1, and the functional harness
(the real handlers over moto, delivered step by step)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.functional.harness import Clock, FakeWorker, Harness, serve
from xdb.engine import runtime
from xdb.local import aws

# A table of the user's own, for global attributes.
USER_TABLES = {"users": "user_id"}


@pytest.fixture
def worker() -> Iterator[FakeWorker]:
    """A scripted worker (its URL in ``worker.url``)."""
    fake = FakeWorker()
    server = serve(fake)
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"  # type: ignore[attr-defined]
    yield fake
    server.shutdown()
    server.server_close()


@pytest.fixture
def harness(worker: FakeWorker) -> Iterator[Harness]:
    local = aws.start(max_api_timeout=5, user_tables=USER_TABLES)
    yield Harness(local, Clock(), worker.url)  # type: ignore[attr-defined]
    runtime.reset()
    local.stop()
