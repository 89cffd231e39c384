"""Processes with timers and messages run to their end under injected faults, and every
invariant holds, counted (see chaos.py for the faults and the invariants)."""

from __future__ import annotations

import os

import pytest

from tests.faults import conftest
from tests.faults.chaos import OPTIONS, Chaos, violations
from tests.functional.harness import FakeWorker, Harness

PROCESSES = 115
# Runs of PROCESSES each: 2 in ./run check (about 5,500 faults, to keep CI short);
# ./run faults runs 4 (over 10,000).
RUNS = int(os.environ.get("XDB_FAULT_RUNS", "2"))


@pytest.mark.parametrize("seed", range(RUNS))
def test_invariants_hold_under_faults(harness: Harness, worker: FakeWorker, seed: int) -> None:
    chaos = Chaos(harness, worker, seed=seed, rate=0.6)
    ids = [f"p{seed}-{i}" for i in range(PROCESSES)]
    for wf in ids:
        harness.start(wf, "A", stateOptions={"skipWaitUntil": True, **OPTIONS})
    chaos.run(time_limit=240)
    found = violations(harness, ids)
    conftest.FAULTS.update(chaos.faults)
    conftest.VIOLATIONS.update(found)
    conftest.RUNS.append(len(ids))
    assert sum(found.values()) == 0, found
    assert sum(chaos.faults.values()) > 0
