"""The fault tier: the functional harness (moto, real handlers) driven with faults."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.faults.chaos import INVARIANTS, KINDS

# Faults injected and invariants broken, over every run of the tier (for the summary).
FAULTS: Counter[str] = Counter()
VIOLATIONS: Counter[str] = Counter()
RUNS: list[int] = []


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
