"""Fault injection: crash points in every handler, bad deliveries, throttling, bad workers.

:class:`Chaos` drives a :class:`~tests.functional.harness.Harness` the way Lambda and SQS
would, except that at random (seeded) it injects one of :data:`KINDS` instead:

* crash points: the task handler dies before its worker call, after it and before the
  commit, or after the commit and before the message is acknowledged; the stream handler
  dies after enqueueing and before its checkpoint. The message or batch comes back.
* deliveries: a task delivered twice, a batch's tasks reordered, a task held back and
  delivered late (after later ones), a stream batch delivered twice.
* DynamoDB: a call throttled past the SDK's own retries (the handler sees the error).
* workers: a 5xx, malformed JSON, an answer slower than the API timeout, a slow answer.

Then :func:`violations` checks the invariants of every process with counts.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError
from botocore.client import BaseClient
from botocore.exceptions import ClientError

from tests.functional.harness import Crash, FakeWorker, Harness
from xdb.model.execution import EventKind

KINDS = [
    "task: crash before the worker call",
    "task: crash after the worker call, before the commit",
    "task: crash after the commit, before the ack",
    "stream: crash after enqueueing, before the checkpoint",
    "task delivered twice",
    "tasks reordered",
    "task delivered late",
    "stream batch delivered twice",
    "DynamoDB call throttled",
    "worker: 5xx",
    "worker: malformed JSON",
    "worker: timed out",
    "worker: slow answer",
]
INVARIANTS = [
    "process did not end as defined",
    "a decision committed more or less than once",
    "a message lost or consumed twice",
    "a timer fired twice into a state",
]

MESSAGES = 3  # each process publishes this many and consumes them one per B state
TIMER_SECONDS = 1
API_TIMEOUT_SECONDS = 1
RETRY = {"initialIntervalSeconds": 1, "backoffCoefficient": 1, "maximumAttempts": 0}
OPTIONS = {
    "waitUntilApiRetryPolicy": RETRY,
    "executeApiRetryPolicy": RETRY,
    "waitUntilApiTimeoutSeconds": API_TIMEOUT_SECONDS,
    "executeApiTimeoutSeconds": API_TIMEOUT_SECONDS,
}


def value(data: Any) -> dict[str, str]:
    return {"encoding": "json", "data": json.dumps(data)}


class Chaos:
    def __init__(self, harness: Harness, worker: FakeWorker, *, seed: int, rate: float) -> None:
        self.harness = harness
        self.worker = worker
        self.rng = random.Random(seed)
        self.rate = rate
        self.faults: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._armed = False
        self._late: list[dict[str, Any]] = []
        self._script_worker()

    # -- the process under test (a worker that itself misbehaves)

    def _script_worker(self) -> None:
        def a_execute(body: dict[str, Any]) -> tuple[int, Any]:
            wf = body["context"]["workflowId"]
            return 200, {
                "publishToInterStateChannel": [
                    {"channelName": "q", "value": value(f"{wf}-m{i}")} for i in range(MESSAGES)
                ],
                "stateDecision": {"nextStates": [{"stateId": "B", "stateOptions": OPTIONS}]},
            }

        def b_wait_until(_: dict[str, Any]) -> tuple[int, Any]:
            return 200, {
                "commandRequest": {
                    "commandWaitingType": "ALL_COMPLETED",
                    "timerCommands": [{"commandId": "t", "durationSeconds": TIMER_SECONDS}],
                    "interStateChannelCommands": [{"commandId": "m", "channelName": "q"}],
                }
            }

        def b_execute(body: dict[str, Any]) -> tuple[int, Any]:
            attributes = {kv["key"]: kv["value"] for kv in body.get("DataObjects", [])}
            seen = json.loads(attributes["seen"]["data"]) if "seen" in attributes else []
            received = body["commandResults"]["interStateChannelResults"][0]["value"]
            seen.append(json.loads(received["data"]))
            upsert = [{"key": "seen", "value": value(seen)}]
            if len(seen) < MESSAGES:
                movement = {"stateId": "B", "stateOptions": OPTIONS}
            else:
                movement = {
                    "stateId": "_SYS_GRACEFUL_COMPLETING_WORKFLOW",
                    "stateInput": value(seen),
                }
            return 200, {"upsertDataObjects": upsert, "stateDecision": {"nextStates": [movement]}}

        for api, state, answer in (
            ("execute", "A", a_execute),
            ("wait_until", "B", b_wait_until),
            ("execute", "B", b_execute),
        ):
            self.worker.on(api, state, self._misbehaving(answer))

    def _misbehaving(self, answer: Callable[[dict[str, Any]], tuple[int, Any]]) -> Any:
        def call(body: dict[str, Any]) -> tuple[int, Any]:
            kind = self._maybe(["worker: 5xx", "worker: malformed JSON", "worker: slow answer"])
            if kind == "worker: 5xx":
                return 503, {"detail": "injected"}
            if kind == "worker: malformed JSON":
                return 200, "{not json"
            if kind == "worker: slow answer":
                time.sleep(0.005)
            elif self._maybe(["worker: timed out"], rate=self.rate / 100):
                time.sleep(API_TIMEOUT_SECONDS + 0.2)
            return answer(body)

        return call

    # -- injection points inside the handlers

    def _maybe(self, kinds: list[str], *, rate: float | None = None) -> str | None:
        """One of ``kinds`` at the given rate (counted), or None."""
        with self._lock:
            if not self._armed or self.rng.random() >= (self.rate if rate is None else rate):
                return None
            kind = self.rng.choice(kinds)
            self.faults[kind] += 1
            return kind

    @contextmanager
    def installed(self) -> Iterator[None]:
        engine = self.harness.engine
        post, save, history = engine.worker.post, engine.store.save, engine.store.write_history
        call = BaseClient._make_api_call  # type: ignore[attr-defined]
        chaos = self

        def crashing_post(*args: Any, **kwargs: Any) -> dict[str, Any]:
            if self._maybe(["task: crash before the worker call"], rate=self.rate / 4):
                raise Crash
            answer = post(*args, **kwargs)
            if self._maybe(
                ["task: crash after the worker call, before the commit"], rate=self.rate / 4
            ):
                raise Crash
            return answer

        def crashing_save(execution: Any) -> None:
            save(execution)
            if self._maybe(["task: crash after the commit, before the ack"], rate=self.rate / 4):
                raise Crash

        def crashing_history(changes: Any) -> None:
            if self._maybe(
                ["stream: crash after enqueueing, before the checkpoint"], rate=self.rate / 4
            ):
                raise Crash
            history(changes)

        def throttled(client: BaseClient, operation: str, params: dict[str, Any]) -> Any:
            if client.meta.service_model.endpoint_prefix == "dynamodb" and chaos._maybe(
                ["DynamoDB call throttled"], rate=chaos.rate / 10
            ):
                error = {"Code": "ProvisionedThroughputExceededException", "Message": "injected"}
                raise ClientError({"Error": error}, operation)
            return call(client, operation, params)

        engine.worker.post = crashing_post  # type: ignore[method-assign]
        engine.store.save = crashing_save  # type: ignore[method-assign]
        engine.store.write_history = crashing_history  # type: ignore[method-assign]
        BaseClient._make_api_call = throttled  # type: ignore[attr-defined]
        try:
            yield
        finally:
            engine.worker.post = post  # type: ignore[method-assign]
            engine.store.save = save  # type: ignore[method-assign]
            engine.store.write_history = history  # type: ignore[method-assign]
            BaseClient._make_api_call = call  # type: ignore[attr-defined]

    # -- delivery, as Lambda's event source mappings would do it (with faults)

    def run(self, *, time_limit: float) -> None:
        harness = self.harness
        pending_records: list[dict[str, Any]] = []
        deadline = time.monotonic() + time_limit
        with self.installed():
            while time.monotonic() < deadline:
                self._armed = True
                pending_records += harness.stream_records()
                if pending_records:
                    pending_records = self._deliver_stream(pending_records)
                messages = harness.receive()
                if self._late and (not messages or self.rng.random() < 0.5):
                    messages, self._late = messages + self._late, []
                if messages:
                    self._deliver_tasks(messages)
                elif not pending_records:
                    self._armed = False
                    ready, delayed = harness.queue_depth()
                    if ready == 0 and delayed == 0 and not self._late:
                        return
                    time.sleep(0.1)
        raise AssertionError(f"the processes did not settle in {time_limit:.0f}s")

    def _deliver_stream(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Deliver a stream batch; return what must be delivered again."""
        copies = 2 if self._maybe(["stream batch delivered twice"]) else 1
        for _ in range(copies):
            try:
                answer = self.harness.deliver_stream(records)
            except Crash:
                return records
            if answer["batchItemFailures"]:
                return records  # the handler reported its batch: Lambda retries it
        return []

    def _deliver_tasks(self, messages: list[dict[str, Any]]) -> None:
        kind = self._maybe(["task delivered twice", "tasks reordered", "task delivered late"])
        if kind == "tasks reordered":
            self.rng.shuffle(messages)
        if kind == "task delivered late" and len(messages) > 1:
            self._late.append(messages.pop())
        for message in messages:
            copies = 2 if kind == "task delivered twice" else 1
            for _ in range(copies):
                try:
                    answer = self.harness.deliver_tasks([message])
                except (Crash, BatchProcessingError):
                    # Died, or failed its whole batch: never acknowledged, it comes back.
                    self.harness.make_visible([message])
                    break
                if answer["batchItemFailures"]:
                    self.harness.make_visible([message])
                    break
            else:
                self.harness.ack([message])


def violations(harness: Harness, workflow_ids: list[str]) -> Counter[str]:
    """Count, per invariant, the processes that break it."""
    found: Counter[str] = Counter({name: 0 for name in INVARIANTS})
    for wf in workflow_ids:
        status, body = harness.api("/api/v1/workflow/get", {"workflowId": wf, "needsResults": True})
        expected = [f"{wf}-m{i}" for i in range(MESSAGES)]
        if status != 200 or body["workflowStatus"] != "COMPLETED":
            found["process did not end as defined"] += 1
            continue
        output = json.loads(body["results"][0]["completedStateOutput"]["data"])
        if output != expected:
            found["a message lost or consumed twice"] += 1
        history = harness.history(wf, body["workflowRunId"])
        decisions = Counter(
            e.state_execution_id for e in history if e.kind is EventKind.EXECUTE_COMPLETED
        )
        wanted = {"A-1": 1} | {f"B-{i}": 1 for i in range(1, MESSAGES + 1)}
        if decisions != wanted:
            found["a decision committed more or less than once"] += 1
        timers = Counter(e.state_execution_id for e in history if e.kind is EventKind.TIMER_FIRED)
        if any(n > 1 for n in timers.values()):
            found["a timer fired twice into a state"] += 1
    return found
