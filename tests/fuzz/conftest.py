"""The fuzz tier: the local runtime on a free port, with short long polls and a worker
allow-list no fuzzed URL can match (so nothing calls out of this machine)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from xdb.local import runtime

SETTINGS = {"XDB_LONG_POLL_SECONDS": "1", "XDB_WORKER_URLS": "http://127.0.0.1:9/"}


@pytest.fixture(scope="package")
def engine_url() -> Iterator[str]:
    saved = {key: os.environ.get(key) for key in SETTINGS}
    os.environ.update(SETTINGS)
    engine = runtime.start(port=0, task_threads=2)
    try:
        yield engine.api_url
    finally:
        engine.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    from tests.fuzz.test_engine_api import STATUSES

    if STATUSES:
        total = sum(STATUSES.values())
        errors = sum(n for status, n in STATUSES.items() if status >= 500)
        by_status = ", ".join(f"{status}: {n}" for status, n in sorted(STATUSES.items()))
        terminalreporter.write_line(
            f"fuzz: {total} requests from the OpenAPI document, {errors} server errors "
            f"({by_status})"
        )
