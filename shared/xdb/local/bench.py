"""``xdb bench``: state transitions per second on the local runtime.

200 concurrent processes of 10 states each run against the local runtime (the same
handlers, moto and pumps as ``xdb dev``), with a real HTTP worker in its own process.
Then 500 processes each wait a 2-second timer (lateness = fired - due, from the history).
Then 50,000 completed processes are stored in the table and the first load runs again.
A transition is one committed step: a worker's answer (wait_until, execute or RPC)
applied to the table.

The cost phase prices two workloads: 100 processes of 10 states with 1 KB of attributes,
and 100 runs of the user-signup example (examples/user_signup.py, with its xdb.sdk worker
and client in a process of their own): submit, wait, verify by RPC, complete.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import urllib3

from xdb.core import commands, transitions
from xdb.engine.runtime import Engine
from xdb.local import runtime
from xdb.local.bench_worker import TIMER_SECONDS
from xdb.local.meter import Meter, metering
from xdb.model.execution import EventKind, Execution, StateOptions, Status
from xdb.model.wire import (
    EncodedObject,
    KeyValue,
    StateDecision,
    StateMovement,
    WorkflowStateExecuteResponse,
)
from xdb.store.dynamodb_store import encode

TIME_LIMIT = 300.0
TIMERS = 500


def main(*, processes: int, states: int, stored: int) -> None:
    with metering() as meter:
        _main(meter, processes=processes, states=states, stored=stored)
    _cold_start()


def _main(meter: Meter, *, processes: int, states: int, stored: int) -> None:
    port = _free_port()
    # The worker's output goes nowhere: it must not hold the caller's pipes open.
    command = [
        sys.executable,
        "-m",
        "xdb.local.bench_worker",
        "--port",
        str(port),
        "--states",
        str(states),
    ]
    worker = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    http = urllib3.PoolManager(maxsize=32)
    engine = None
    try:
        engine = runtime.start(port=0, task_threads=8, meter=meter, user_tables={"user": "user_id"})
        _wait_for(http, f"http://127.0.0.1:{port}/")
        print(
            f"xdb bench: {processes} concurrent processes x {states} states, local runtime, worker on 127.0.0.1:{port}"
        )
        empty = _run(http, engine, f"http://127.0.0.1:{port}", processes, states, "empty")
        print(f"  empty table:                 {empty:8.1f} transitions/s")
        _cost(http, engine, meter, f"http://127.0.0.1:{port}", states)
        _signup_cost(engine, meter)
        p50, p99 = _timer_lateness(http, engine, f"http://127.0.0.1:{port}", TIMERS)
        print(
            f"  timer lateness, {TIMERS} processes x {TIMER_SECONDS}s timer: "
            f"p50 {p50:.3f}s  p99 {p99:.3f}s   (goal: p99 < 1s)"
        )
        started = time.time()
        _store_completed(engine.engine, stored, states)
        # The stored items went through the stream too; let the pump catch up first.
        while engine.stream.backlog():
            time.sleep(0.2)
        print(f"  stored {stored} completed processes in {time.time() - started:.0f}s")
        full = _run(http, engine, f"http://127.0.0.1:{port}", processes, states, "full")
        print(f"  after {stored} stored:      {full:8.1f} transitions/s")
        print(
            f"  ratio full/empty:            {full / empty:8.2f}   (goals: >= 100/s, ratio >= 0.67)"
        )
    finally:
        if engine is not None:
            engine.stop()
        worker.terminate()
        worker.wait()


def _run(
    http: urllib3.PoolManager,
    engine: runtime.LocalRuntime,
    worker_url: str,
    processes: int,
    states: int,
    label: str,
    first: str = "S",
) -> float:
    before = _completed(http, worker_url)
    ids = [f"bench-{label}-{i}-{uuid.uuid4().hex[:6]}" for i in range(processes)]
    started = time.perf_counter()
    for workflow_id in ids:
        _start(http, engine, workflow_id, worker_url, f"{first[0]}1", skip_wait_until=True)
    last_report = started
    while (done := _completed(http, worker_url) - before) < processes:
        if time.perf_counter() - last_report > 10:
            last_report = time.perf_counter()
            print(
                f"    ... {done}/{processes} processes done after {last_report - started:.0f}s",
                flush=True,
            )
        if time.perf_counter() - started > TIME_LIMIT:
            raise TimeoutError(f"bench did not finish in {TIME_LIMIT:.0f}s")
        time.sleep(0.05)
    # The worker answered the last state of every process; wait for those commits too.
    store = engine.engine.store
    pending = list(ids)
    while pending:
        with engine.meter.paused() if engine.meter else contextlib.nullcontext():
            pending = [i for i in pending if not (e := store.current(i)) or not e.status.closed]
        if pending:
            time.sleep(0.05)
    elapsed = time.perf_counter() - started
    return processes * states / elapsed


def _timer_lateness(
    http: urllib3.PoolManager, engine: runtime.LocalRuntime, worker_url: str, count: int
) -> tuple[float, float]:
    """Start ``count`` processes that each wait a 2-second timer; (p50, p99) of fired - due."""
    before = _completed(http, worker_url)
    ids = [f"bench-timer-{i}-{uuid.uuid4().hex[:6]}" for i in range(count)]
    for workflow_id in ids:
        _start(http, engine, workflow_id, worker_url, "Wait", skip_wait_until=False)
    started = time.perf_counter()
    while _completed(http, worker_url) - before < count:
        if time.perf_counter() - started > TIME_LIMIT:
            raise TimeoutError(f"timers did not fire in {TIME_LIMIT:.0f}s")
        time.sleep(0.1)
    store = engine.engine.store
    lateness = []
    for workflow_id in ids:
        execution = store.current(workflow_id)
        assert execution is not None
        events = {e.kind: e.at for e in store.history(execution)}
        # The timer was due TIMER_SECONDS after wait_until's answer was committed.
        lateness.append(
            events[EventKind.TIMER_FIRED] - (events[EventKind.WAIT_UNTIL_COMPLETED] + TIMER_SECONDS)
        )
    return statistics.median(lateness), statistics.quantiles(lateness, n=100)[98]


def _start(
    http: urllib3.PoolManager,
    engine: runtime.LocalRuntime,
    workflow_id: str,
    worker_url: str,
    state: str,
    *,
    skip_wait_until: bool,
) -> None:
    body = {
        "workflowId": workflow_id,
        "iwfWorkflowType": "BenchProcess",
        "workflowTimeoutSeconds": 0,
        "iwfWorkerUrl": worker_url,
        "startStateId": state,
        "stateOptions": {"skipWaitUntil": skip_wait_until},
    }
    response = http.request(
        "POST",
        engine.api_url + "/api/v1/workflow/start",
        body=json.dumps(body),
        headers={"Content-Type": "application/json"},
    )
    assert response.status == 200, response.data


def _store_completed(engine: Engine, count: int, states: int) -> None:
    """Write ``count`` completed executions, shaped as the benchmark's own, in batches."""
    ddb, table = engine.store._ddb, engine.store._table  # the bench seeds the table directly
    template = _completed_execution(states)
    batch: list[dict[str, Any]] = []
    for i in range(count):
        execution = template.model_copy(
            update={
                "workflow_id": f"stored-{i}",
                "run_id": str(uuid.uuid4()),
                "events": [],
                "earlier_events": [],
            }
        )
        batch.append({"PutRequest": {"Item": encode(execution, sk="RUN")}})
        if len(batch) == 25 or i == count - 1:
            pending: dict[str, Any] = {table: batch}
            while pending:
                pending = ddb.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}
            batch = []


def _completed_execution(states: int) -> Execution:
    spec = commands.StartSpec(
        workflow_id="template",
        workflow_type="BenchProcess",
        worker_url="http://127.0.0.1:9",
        timeout_seconds=0,
        start_state_id="S1",
        input=None,
        options=StateOptions(skip_wait_until=True),
    )
    now = time.time()
    execution = commands.start(spec, current=None, run_id="template", now=now).execution
    for number in range(1, states + 1):
        following = f"S{number + 1}" if number < states else transitions.GRACEFUL_COMPLETE
        answer = WorkflowStateExecuteResponse(
            state_decision=StateDecision(
                next_states=[
                    StateMovement.model_validate(
                        {"stateId": following, "stateOptions": {"skipWaitUntil": True}}
                    )
                ]
            ),
            upsert_data_objects=[
                KeyValue(key="step", value=EncodedObject(encoding="json", data=str(number)))
            ],
        )
        nxt = transitions.on_execute(
            execution, f"S{number}-1", 1, answer, now=now, max_api_timeout=60
        )
        assert nxt is not None
        execution = nxt
    return execution


def _completed(http: urllib3.PoolManager, worker_url: str) -> int:
    return int(json.loads(http.request("GET", worker_url + "/").data)["completed"])


def _wait_for(http: urllib3.PoolManager, url: str) -> None:
    for _ in range(100):
        try:
            http.request("GET", url, retries=False)
            return
        except urllib3.exceptions.HTTPError:
            time.sleep(0.1)
    raise RuntimeError(f"the bench worker did not come up at {url}")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


COST_PROCESSES = 100


def _cost(
    http: urllib3.PoolManager,
    engine: runtime.LocalRuntime,
    meter: Meter,
    worker_url: str,
    states: int,
) -> None:
    """Price the reference workload: processes of ``states`` states with 1 KB of attributes."""
    meter.reset()
    _run(http, engine, worker_url, COST_PROCESSES, states, "cost", first="C")
    time.sleep(1.0)  # the last stream records and their history writes
    _print_cost(
        meter,
        COST_PROCESSES * states,
        f"{COST_PROCESSES} processes x {states} states with 1 KB of attributes",
    )


SIGNUPS = 100
# Submit's execute, Verify's wait_until, the verify RPC, Verify's execute.
SIGNUP_TRANSITIONS = 4
# The example's worker and client, in a process of their own: each user signs up and
# verifies by RPC; with "wait", the client then waits for the result (a long poll).
# Without, it prints the process ids and serves the worker until its input closes.
_SIGNUP_DRIVER = """
import logging, sys
from concurrent.futures import ThreadPoolExecutor
from examples import user_signup as signup
from xdb.sdk import Client
logging.disable(logging.WARNING)
server, worker_url = signup.serve_worker(0)
client = Client(sys.argv[1], worker_url)
wait = sys.argv[4] == "wait"
def one(n):
    process_id = signup.sign_up(client, f"bench-{sys.argv[3]}-{n}", f"User{n}")
    assert client.invoke_rpc(process_id, signup.UserSignup.verify, "email") == "done"
    if wait:
        assert client.wait_for_process_completion(process_id, str) == "done"
    return process_id
with ThreadPoolExecutor(16) as pool:
    ids = list(pool.map(one, range(int(sys.argv[2]))))
if not wait:
    print(" ".join(ids), flush=True)
    sys.stdin.read()
"""


def _signup_cost(engine: runtime.LocalRuntime, meter: Meter) -> None:
    """Price the user-signup example: its process (each user starts, then verifies by
    RPC), then the same with a client that waits for each result."""
    for wait, label in ((False, "start + verify RPC"), (True, "the client also waits")):
        meter.reset()
        _drive_signups(engine, wait=wait)
        time.sleep(1.0)  # the last stream records and their history pages
        _print_cost(meter, SIGNUPS * SIGNUP_TRANSITIONS, f"user signup x {SIGNUPS} ({label})")


def _drive_signups(engine: runtime.LocalRuntime, *, wait: bool) -> None:
    args = [engine.api_url, str(SIGNUPS), uuid.uuid4().hex[:6], "wait" if wait else "no"]
    with subprocess.Popen(
        [sys.executable, "-c", _SIGNUP_DRIVER, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=_env(),
    ) as driver:
        assert driver.stdin is not None and driver.stdout is not None
        if not wait:
            # The bench's own reads, left out of the cost as in the reference workload.
            pending = driver.stdout.readline().split()
            started = time.perf_counter()
            while pending:
                if time.perf_counter() - started > TIME_LIMIT:
                    raise TimeoutError(f"signups did not complete in {TIME_LIMIT:.0f}s")
                with engine.meter.paused() if engine.meter else contextlib.nullcontext():
                    pending = [i for i in pending if not _completed_run(engine, i)]
                time.sleep(0.05)
        driver.stdin.close()
        if driver.wait() != 0:
            raise RuntimeError("the signup driver failed (its errors are above)")


def _completed_run(engine: runtime.LocalRuntime, process_id: str) -> bool:
    execution = engine.engine.store.current(process_id)
    if execution is not None and execution.status.closed:
        assert execution.status is Status.COMPLETED, f"{process_id} {execution.status}"
        return True
    return False


def _print_cost(meter: Meter, transitions: int, workload: str) -> None:
    dollars = meter.dollars()
    per_million = sum(dollars.values()) / transitions * 1e6
    print(f"  cost, {workload} (us-east-1 list prices, docs/cost.md):")
    for name, amount in dollars.items():
        print(f"    {name:<18} ${amount / transitions * 1e6:7.3f} per million transitions")
    print(f"    {'total':<18} ${per_million:7.3f} per million transitions   (goal: <= $2.00)")
    print(
        f"    AWS requests per transition: {meter.aws_requests() / transitions:.2f}  "
        f"(DynamoDB write units {meter.write_units / transitions:.2f}, "
        f"read units {meter.read_units / transitions:.2f}, "
        f"Lambda invocations {sum(meter.invocations.values()) / transitions:.2f})"
    )


HANDLERS = ("api_http", "stream_ddb", "task_sqs")
_IMPORT_TIME = """
import importlib, sys, time
started = time.perf_counter()
for name in sys.argv[1:]:
    importlib.import_module(name)
print(time.perf_counter() - started)
"""
_THIRD_PARTY = """
import sys
before = set(sys.modules)
__import__(sys.argv[1])
std = sys.stdlib_module_names
print(" ".join(sorted(
    name for name in set(sys.modules) - before
    if name.split(".")[0] not in std | {"xdb", "functions"}
    and not name.startswith("_") and name != "six.moves"
)))
"""


def _cold_start(runs: int = 11) -> None:
    """Import time of each handler module, as a ratio to importing its third-party
    dependencies alone (each in a fresh interpreter; medians of ``runs``, the two kinds
    taken in turn so that a busy moment of the machine weighs on both alike)."""
    print(f"  cold start (import in a fresh interpreter, median of {runs}):")
    for handler in HANDLERS:
        module = f"functions.{handler}"
        deps = _python(_THIRD_PARTY, module).split()
        own: list[float] = []
        alone: list[float] = []
        for _ in range(runs):
            own.append(float(_python(_IMPORT_TIME, module)))
            alone.append(float(_python(_IMPORT_TIME, *deps)))
        own_ms, alone_ms = statistics.median(own) * 1000, statistics.median(alone) * 1000
        print(
            f"    {handler:<11} {own_ms:6.0f} ms, dependencies alone {alone_ms:6.0f} ms, "
            f"ratio {own_ms / alone_ms:.2f}   (goal: <= 1.3)"
        )


def _python(code: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=_env(), check=True
    )
    return done.stdout.strip()


def _env() -> dict[str, str]:
    """This environment, with the project's code importable (for the bench's subprocesses)."""
    root = Path(__file__).resolve().parents[3]
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(root / "shared")])}
