"""Test processes in this process, on the real engine, with a clock the test controls.

::

    with TestEnvironment(UserSignup) as env:
        env.client.start_process_execution("signup-1", UserSignup, None, options)
        env.sleep(timedelta(hours=48))          # two 24-hour reminders, in milliseconds
        env.client.invoke_rpc("signup-1", UserSignup.verify, "email")
        assert env.client.wait_for_process_completion("signup-1") == "done"
        assert env.row("user", "1")["status"] == "verified"

Everything is real but the clock and the transports: the three Lambda handlers, the
engine core, DynamoDB and its stream (moto, in memory), your worker code with signing.
The task queue is replaced by one that delivers each task when the *virtual* clock
reaches its due time. Time moves only when the test says so (:meth:`sleep`), or when a
client waits for a process to close and nothing else can happen first: then the clock
jumps to the next timer, as Temporal's time-skipping test server does.
"""

from __future__ import annotations

import heapq
import importlib
import itertools
import json
import threading
import time
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError
from boto3.dynamodb.types import TypeDeserializer
from pydantic import SecretStr

from xdb.aws.task_queue import TaskQueue
from xdb.aws.worker_client import WorkerClient
from xdb.engine import runtime
from xdb.local import aws
from xdb.local.http_api import to_event
from xdb.local.pumps import context_for, matches
from xdb.model.task import Task
from xdb.sdk import Client, Process, Registry, WorkerService
from xdb.store.table import STREAM_FILTER, TASK_QUEUE
from xdb.transport import Reply

ENGINE_URL = "http://engine.xdb.test"
WORKER_URL = "http://worker.xdb.test"
_SECRET = "xdb-testing-signing-secret"
_GET_WITH_WAIT = "/api/v1/workflow/getWithWait"
_MAX_STEPS = 10_000


class VirtualClock:
    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += max(0.0, seconds)


class VirtualQueue(TaskQueue):
    """The task queue, in memory: a task comes out when the virtual clock reaches its due
    time (SQS's delays and EventBridge schedules, without the waiting)."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Task]] = []
        self._order = itertools.count()

    def send(self, tasks: list[Task], *, now: float) -> None:
        for task in tasks:
            heapq.heappush(self._heap, (max(task.due_at, now), next(self._order), task))

    def cancel(self, tasks: list[Task], *, now: float) -> None:
        cancelled = {t.model_dump_json() for t in tasks}
        self._heap = [e for e in self._heap if e[2].model_dump_json() not in cancelled]
        heapq.heapify(self._heap)

    def due(self, now: float) -> list[Task]:
        ready = []
        while self._heap and self._heap[0][0] <= now:
            ready.append(heapq.heappop(self._heap)[2])
        return ready

    def next_due(self) -> float | None:
        return self._heap[0][0] if self._heap else None


class TestEnvironment:
    """An engine, a worker serving ``processes`` and a :attr:`client`, all in this process.

    Tables for the processes' global attributes are created empty. Use it as a context
    manager (one at a time per process).
    """

    __test__ = False  # not a pytest test class, despite its name

    def __init__(
        self, *processes: Process | type[Process], start_time: float | None = None
    ) -> None:
        self.registry = Registry(*processes)
        tables = {
            d.global_attributes.table: d.global_attributes.primary_key
            for d in self.registry
            if d.global_attributes is not None
        }
        self.clock = VirtualClock(time.time() if start_time is None else start_time)
        self.queue = VirtualQueue()
        self._aws = aws.start(user_tables=tables, serve=False)
        try:
            settings = self._aws.settings.model_copy(
                update={"signing_secret": SecretStr(_SECRET), "long_poll_seconds": 20.0}
            )
            self._worker = WorkerService(self.registry, signing_secret=_SECRET)
            self.engine = runtime.build(
                settings,
                clock=self.clock,
                sleep=self.clock.advance,
                queue=self.queue,
                worker=WorkerClient(secret=_SECRET.encode(), transport=self._to_worker),
            )
            runtime.install(self.engine)
            self._stream = self._aws.stream()
            self._handlers = {
                name: importlib.import_module(f"functions.{name}").lambda_handler
                for name in ("api_http", "stream_ddb", "task_sqs")
            }
        except BaseException:
            self._aws.stop()
            raise
        self.client = Client(ENGINE_URL, WORKER_URL, transport=self._to_engine)
        self.worker_calls = 0
        # A test may use the client from several threads; the engine here runs one step at a time.
        self._lock = threading.RLock()

    def __enter__(self) -> TestEnvironment:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        runtime.reset()
        self._aws.stop()

    # -- time

    def sleep(self, duration: timedelta) -> None:
        """Let ``duration`` of virtual time pass, running everything due on the way."""
        with self._lock:
            end = self.clock.now + duration.total_seconds()
            self.run(skip_time=True, horizon=end)
            self.clock.now = max(self.clock.now, end)
            self.run()

    def run(
        self,
        *,
        skip_time: bool = False,
        until: Callable[[], bool] | None = None,
        horizon: float | None = None,
    ) -> None:
        """Deliver stream records and due tasks until none are left (or ``until`` holds);
        with ``skip_time``, jump the clock to the next task whenever nothing else is left,
        but not past ``horizon``."""
        for _ in range(_MAX_STEPS):
            if until is not None and until():
                return
            records = [r for r in self._stream.read(100) if matches(r, STREAM_FILTER)]
            if records:
                answer = self._handlers["stream_ddb"]({"Records": records}, context_for("stream"))
                if answer.get("batchItemFailures"):
                    raise RuntimeError(f"the stream handler failed: {answer}")
                continue
            tasks = self.queue.due(self.clock.now)
            if tasks:
                self._deliver(tasks)
                continue
            due = self.queue.next_due()
            if not skip_time or due is None or (horizon is not None and due > horizon):
                return
            self.clock.now = max(self.clock.now, due)
        raise RuntimeError(
            f"the engine did not settle in {_MAX_STEPS} steps (at virtual time "
            f"{self.clock.now:.0f}): a state that keeps failing with unlimited retries?"
        )

    def _deliver(self, tasks: list[Task]) -> None:
        records = [
            {
                "messageId": str(index),
                "receiptHandle": str(index),
                "body": task.model_dump_json(exclude_none=True),
                "attributes": {},
                "messageAttributes": {},
                "eventSource": "aws:sqs",
            }
            for index, task in enumerate(tasks)
        ]
        try:
            answer = self._handlers["task_sqs"]({"Records": records}, context_for("task"))
            failed = [tasks[int(f["itemIdentifier"])] for f in answer.get("batchItemFailures", [])]
        except BatchProcessingError:  # every task of the batch failed
            failed = tasks
        # A failed task comes back when its visibility timeout ends, as on SQS.
        retry_at = self.clock.now + TASK_QUEUE["VisibilityTimeout"]
        for task in failed:
            self.queue.send([task.model_copy(update={"due_at": retry_at})], now=self.clock.now)

    # -- what the test can look at

    def row(self, table: str, key: str) -> dict[str, Any] | None:
        """A row of one of your tables (global attributes), as Python values."""
        definition = next(
            d.global_attributes
            for d in self.registry
            if d.global_attributes is not None and d.global_attributes.table == table
        )
        item = (
            self._aws.client("dynamodb")
            .get_item(
                TableName=table, Key={definition.primary_key: {"S": key}}, ConsistentRead=True
            )
            .get("Item")
        )
        if item is None:
            return None
        deserialize = TypeDeserializer().deserialize
        return {name: deserialize(value) for name, value in item.items()}

    # -- the transports

    def _to_worker(
        self, url: str, body: bytes, headers: Mapping[str, str], timeout: float
    ) -> Reply:
        self.worker_calls += 1
        return self._worker.handle(urlsplit(url).path, body, headers)

    def _to_engine(
        self, url: str, body: bytes, headers: Mapping[str, str], timeout: float
    ) -> Reply:
        path = urlsplit(url).path
        with self._lock:
            if path == _GET_WITH_WAIT:
                # Time skips to the process's end (or until nothing is left to happen).
                process_id = json.loads(body)["workflowId"]
                self.run(skip_time=True, until=lambda: self._closed(process_id))
                if not self._closed(process_id) and self.queue.next_due() is None:
                    return _stuck(process_id)
            else:
                self.run()
            event = to_event("POST", path, dict(headers), body)
            answer = self._handlers["api_http"](event, context_for("api"))
            self.run()
            return Reply(answer["statusCode"], (answer.get("body") or "").encode())

    def _closed(self, process_id: str) -> bool:
        execution = self.engine.store.current(process_id)
        return execution is None or execution.status.closed


def _stuck(process_id: str) -> Reply:
    detail = (
        f"process {process_id!r} is still running and nothing is scheduled that could move it "
        "(no timer, retry or message is pending): waiting for it would never end"
    )
    return Reply(400, json.dumps({"detail": detail, "code": "PROCESS_STUCK"}).encode())
