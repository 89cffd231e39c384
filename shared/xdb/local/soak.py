"""``xdb soak``: many processes with timers, messages and RPCs on the local runtime while
the worker fails at random; then the invariants, counted.

Each process: ``A`` publishes three messages to its local queue ``q`` and moves to
``B``; each ``B`` waits for a 1-second timer and one message, records the message in the
data attribute ``seen``, and moves to the next ``B`` until all three are seen, then
completes with them. While they run, the driver calls the RPC ``bump`` once per process
(retrying it while the worker fails): it increments the locked attribute ``bumps``.
The worker answers 500 to a share of all calls (``--failure-rate``).

At the end, for every process: it completed with its three messages in order (none lost
or doubled), each state execution has exactly one committed decision, no timer fired
twice into a state, and ``bumps`` equals the RPC calls that succeeded (one).
"""

from __future__ import annotations

import json
import random
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from http.server import ThreadingHTTPServer
from typing import Any

import urllib3

from xdb.local import runtime
from xdb.local.json_http import serve_json
from xdb.model.execution import EventKind

MESSAGES = 3
RETRY = {"initialIntervalSeconds": 1, "backoffCoefficient": 1, "maximumAttempts": 0}
OPTIONS = {"waitUntilApiRetryPolicy": RETRY, "executeApiRetryPolicy": RETRY}
LOCKED = {
    "persistenceLoadingType": "LOAD_PARTIAL_WITH_EXCLUSIVE_LOCK",
    "partialLoadingKeys": ["bumps"],
    "lockingKeys": ["bumps"],
}


def _value(data: Any) -> dict[str, str]:
    return {"encoding": "json", "data": json.dumps(data)}


def _attributes(body: dict[str, Any], key: str) -> dict[str, Any]:
    return {kv["key"]: json.loads(kv["value"]["data"]) for kv in body.get(key) or []}


class SoakWorker:
    """The soak's worker, on 127.0.0.1, failing ``failure_rate`` of its calls."""

    def __init__(self, failure_rate: float, seed: int) -> None:
        self.failure_rate = failure_rate
        self.rng = random.Random(seed)
        self.failures = 0
        self.calls = 0
        self.completions = 0  # answers that complete a process (committed or not)
        self._lock = threading.Lock()

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.calls += 1
            if self.rng.random() < self.failure_rate:
                self.failures += 1
                return 500, {"detail": "injected failure"}
        if path.endswith("/rpc"):
            bumps = _attributes(body, "dataAttributes").get("bumps", 0)
            return 200, {
                "output": _value(bumps + 1),
                "upsertDataAttributes": [{"key": "bumps", "value": _value(bumps + 1)}],
            }
        state, wf = body["workflowStateId"], body["context"]["workflowId"]
        if state == "A":
            return 200, {
                "publishToInterStateChannel": [
                    {"channelName": "q", "value": _value(f"{wf}-m{i}")} for i in range(MESSAGES)
                ],
                "stateDecision": {"nextStates": [{"stateId": "B", "stateOptions": OPTIONS}]},
            }
        if path.endswith("/start"):
            return 200, {
                "commandRequest": {
                    "commandWaitingType": "ALL_COMPLETED",
                    "timerCommands": [{"commandId": "t", "durationSeconds": 1}],
                    "interStateChannelCommands": [{"commandId": "m", "channelName": "q"}],
                }
            }
        seen = _attributes(body, "DataObjects").get("seen", [])
        received = body["commandResults"]["interStateChannelResults"][0]["value"]
        seen.append(json.loads(received["data"]))
        done = len(seen) == MESSAGES
        if done:
            with self._lock:
                self.completions += 1
        movement = (
            {"stateId": "_SYS_GRACEFUL_COMPLETING_WORKFLOW", "stateInput": _value(seen)}
            if done
            else {"stateId": "B", "stateOptions": OPTIONS}
        )
        return 200, {
            "upsertDataObjects": [{"key": "seen", "value": _value(seen)}],
            "stateDecision": {"nextStates": [movement]},
        }

    def serve(self) -> ThreadingHTTPServer:
        return serve_json(lambda _, path, body: self.answer(path, body))


def main(*, processes: int, failure_rate: float, time_limit: float, seed: int = 1) -> int:
    worker = SoakWorker(failure_rate, seed)
    server = worker.serve()
    worker_url = f"http://127.0.0.1:{server.server_address[1]}"
    engine = runtime.start(port=0, task_threads=16)
    # No silent re-sends: every RPC call the driver makes is one it counts.
    http = urllib3.PoolManager(maxsize=32, retries=False, timeout=60)
    started = time.monotonic()
    try:
        ids = [f"soak-{i}-{uuid.uuid4().hex[:6]}" for i in range(processes)]
        print(
            f"xdb soak: {processes} processes (3 timers, 3 messages, 1 locked RPC each), "
            f"worker failing {failure_rate:.0%} of calls, at most {time_limit:.0f}s"
        )

        def start_and_bump(wf: str) -> tuple[int, int]:
            # The RPC right after the start: the process is still running (its timers).
            _start(http, engine.api_url, wf, worker_url)
            return _bump(http, engine.api_url, wf, started, time_limit)

        pool = ThreadPoolExecutor(max_workers=16)
        calls = [pool.submit(start_and_bump, wf) for wf in ids]
        last = time.monotonic()
        # Progress from the worker's side (cheap); the table is checked once at the end.
        while worker.completions < processes and time.monotonic() - started < time_limit:
            time.sleep(1)
            if time.monotonic() - last > 10:
                last = time.monotonic()
                begun = sum(call.done() for call in calls)
                print(
                    f"  ... {begun}/{processes} started and called, "
                    f"{worker.completions} completing after {last - started:.0f}s",
                    flush=True,
                )
        pending = set(ids)
        while pending and time.monotonic() - started < time_limit + 30:
            pending = {wf for wf in pending if not _closed(engine, wf)}
            time.sleep(1)
        pool.shutdown(wait=True)
        rpcs = [call.result() for call in calls]
        elapsed = time.monotonic() - started
        # The last versions' history pages are written by the stream function just after.
        deadline = time.monotonic() + 30
        while engine.stream.backlog() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)  # the batch in flight
        found = _violations(engine, ids, rpcs)
        print(f"  {processes - len(pending)}/{processes} completed in {elapsed:.0f}s")
        print(f"  worker calls {worker.calls}, failed on purpose {worker.failures}")
        print(
            f"  RPC calls {sum(r[0] for r in rpcs)}, succeeded {sum(r[1] for r in rpcs)} "
            "(one per process unless it completed first)"
        )
        for wf in sorted(pending)[:5]:
            print(f"  still running: {wf}: {_describe(engine, wf)}")
        for name, count in found.items():
            print(f"  {name:<48} {count:>6}")
        return 0 if not pending and not sum(found.values()) else 1
    finally:
        engine.stop()
        server.shutdown()


def _start(http: urllib3.PoolManager, api: str, wf: str, worker_url: str) -> None:
    body = {
        "workflowId": wf,
        "iwfWorkflowType": "Soak",
        "workflowTimeoutSeconds": 0,
        "iwfWorkerUrl": worker_url,
        "startStateId": "A",
        "stateOptions": {"skipWaitUntil": True, **OPTIONS},
        # A start sent again (a timeout, say) answers the run it already made.
        "workflowStartOptions": {
            "workflowAlreadyStartedOptions": {"ignoreAlreadyStartedError": True, "requestId": wf}
        },
    }
    answer = http.request("POST", f"{api}/api/v1/workflow/start", json=body)
    assert answer.status == 200, answer.data


def _bump(
    http: urllib3.PoolManager, api: str, wf: str, started: float, time_limit: float
) -> tuple[int, int]:
    """Call the RPC until it succeeds (a worker failure is a 420: call again); (calls made,
    successes). A process that completed first takes no more writes: no success."""
    body = {"workflowId": wf, "rpcName": "bump", "dataAttributesLoadingPolicy": LOCKED}
    calls = 0
    while time.monotonic() - started < time_limit:
        calls += 1
        answer = http.request("POST", f"{api}/api/v1/workflow/rpc", json=body)
        if answer.status == 200:
            return calls, 1
        if answer.status == 400:
            return calls, 0
    return calls, 0


def _closed(engine: runtime.LocalRuntime, wf: str) -> bool:
    execution = engine.engine.store.current(wf)
    return execution is not None and execution.status.closed


def _violations(
    engine: runtime.LocalRuntime, ids: list[str], rpcs: list[tuple[int, int]]
) -> Counter[str]:
    store = engine.engine.store
    histories = store.all_history()
    found: Counter[str] = Counter(
        {
            "did not complete as defined": 0,
            "a message lost or consumed twice": 0,
            "a decision committed more or less than once": 0,
            "a timer fired twice into a state": 0,
            "RPC effects != successful RPC calls": 0,
        }
    )
    for wf, (_, succeeded) in zip(ids, rpcs, strict=True):
        execution = store.current(wf)
        if execution is None or execution.status.value != "COMPLETED":
            found["did not complete as defined"] += 1
            continue
        result = execution.results[0].output if execution.results else None
        output = json.loads(result.data or "null") if result else None
        if output != [f"{wf}-m{i}" for i in range(MESSAGES)]:
            found["a message lost or consumed twice"] += 1
        history = histories.get((wf, execution.run_id), [])
        decisions = Counter(
            e.state_execution_id for e in history if e.kind is EventKind.EXECUTE_COMPLETED
        )
        if decisions != {"A-1": 1} | {f"B-{i}": 1 for i in range(1, MESSAGES + 1)}:
            found["a decision committed more or less than once"] += 1
        timers = Counter(e.state_execution_id for e in history if e.kind is EventKind.TIMER_FIRED)
        if any(n > 1 for n in timers.values()):
            found["a timer fired twice into a state"] += 1
        bumps = execution.data_attributes.get("bumps")
        if (json.loads(bumps.data or "0") if bumps else 0) != succeeded:
            found["RPC effects != successful RPC calls"] += 1
    return found


def _describe(engine: runtime.LocalRuntime, wf: str) -> str:
    execution = engine.engine.store.current(wf)
    if execution is None:
        return "not found"
    return (
        "; ".join(
            f"{s.id} {s.phase} attempt {s.attempt} next {s.next_call_at} error {s.last_error}"
            for s in execution.states.values()
        )
        or f"{execution.status}, no live states"
    )
