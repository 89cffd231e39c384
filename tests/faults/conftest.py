"""The fault tier: the functional harness (moto, real handlers) driven with faults."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest

from tests.faults.chaos import INVARIANTS, KINDS
from tests.functional.harness import Clock, FakeWorker, Harness, serve
from xdb.engine import runtime
from xdb.local import aws

# Faults injected and invariants broken, over every run of the tier (for the summary).
FAULTS: Counter[str] = Counter()
VIOLATIONS: Counter[str] = Counter()
RUNS: list[int] = []


@pytest.fixture
def worker() -> Iterator[FakeWorker]:
    fake = FakeWorker()
    server = serve(fake)
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"  # type: ignore[attr-defined]
    yield fake
    server.shutdown()
    server.server_close()


@pytest.fixture
def harness(worker: FakeWorker) -> Iterator[Harness]:
    local = aws.start(max_api_timeout=5)
    yield Harness(local, Clock(), worker.url)  # type: ignore[attr-defined]
    runtime.reset()
    local.stop()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not RUNS:
        return
    write = terminalreporter.write_line
    write(f"fault injection: {len(RUNS)} runs, {sum(RUNS)} processes")
    write(f"  {'fault injected':<56} {'count':>7}")
    for kind in KINDS:
        write(f"  {kind:<56} {FAULTS[kind]:>7}")
    write(f"  {'total':<56} {sum(FAULTS.values()):>7}")
    write(f"  {'invariant':<56} {'violations':>10}")
    for name in INVARIANTS:
        write(f"  {name:<56} {VIOLATIONS[name]:>10}")
