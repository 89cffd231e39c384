"""Pumps: what AWS does between the resources and the functions, done locally.

* :class:`StreamPump` reads the table's stream and invokes the stream handler with
  Lambda's DynamoDB event shape, the trigger's filter, and its partial-batch retries.
* :class:`QueuePump` receives task messages and invokes the task handler with Lambda's
  SQS event shape; it deletes what succeeded, and leaves the rest to come back after
  the visibility timeout, as the SQS event source mapping does.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from xdb.store.table import STREAM_FILTER

logger = logging.getLogger(__name__)
Handler = Callable[[dict[str, Any], Any], dict[str, Any]]

# Idle pumps poll at most this often; the wait grows while idle and resets on work.
MIN_IDLE_SLEEP, MAX_IDLE_SLEEP = 0.005, 0.05
MAX_STREAM_RETRIES = 5


@dataclass
class FakeLambdaContext:
    """The attributes of a Lambda context that powertools reads."""

    function_name: str
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:local"
    aws_request_id: str = ""

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


def context_for(function_name: str) -> FakeLambdaContext:
    return FakeLambdaContext(function_name=function_name, aws_request_id=str(uuid.uuid4()))


class _Pump(threading.Thread):
    def __init__(self, name: str, stop: threading.Event) -> None:
        super().__init__(name=name, daemon=True)
        self._stop_event = stop

    def run(self) -> None:
        idle = MIN_IDLE_SLEEP
        while not self._stop_event.is_set():
            try:
                busy = self.step()
            except Exception:
                if self._stop_event.is_set():
                    return
                logger.exception("%s failed; going on", self.name)
                busy = False
            if busy:
                idle = MIN_IDLE_SLEEP
            else:
                self._stop_event.wait(idle)
                idle = min(idle * 2, MAX_IDLE_SLEEP)

    def step(self) -> bool:
        raise NotImplementedError


def matches(record: dict[str, Any], pattern: dict[str, Any]) -> bool:
    """A Lambda event filter: nested keys, and lists of accepted values at the leaves."""
    for key, expected in pattern.items():
        if key not in record:
            return False
        if isinstance(expected, dict):
            if not isinstance(record[key], dict) or not matches(record[key], expected):
                return False
        elif record[key] not in expected:
            return False
    return True


class StreamPump(_Pump):
    """DynamoDB Streams -> the stream handler, one batch at a time, in order."""

    def __init__(
        self,
        read: Callable[[int], list[dict[str, Any]]],
        handler: Handler,
        stop: threading.Event,
        *,
        batch_size: int = 100,
        batching_window: float = 0.05,
    ) -> None:
        super().__init__("stream-pump", stop)
        self._read = read
        self._handler = handler
        self._batch_size = batch_size
        self._window = batching_window

    def step(self) -> bool:
        # Like MaximumBatchingWindowInSeconds: once a record is in, gather more for a
        # moment, so one invocation sends many tasks in few SQS and DynamoDB calls.
        read = self._read(self._batch_size)
        if not read:
            return False
        deadline = time.monotonic() + self._window
        while len(read) < self._batch_size and time.monotonic() < deadline:
            time.sleep(0.005)
            read += self._read(self._batch_size - len(read))
        records = [r for r in read if matches(r, STREAM_FILTER)]
        if records:
            self._deliver(records)
        return True

    def _deliver(self, records: list[dict[str, Any]]) -> None:
        for attempt in range(1, MAX_STREAM_RETRIES + 1):
            answer = self._handler({"Records": records}, context_for("stream"))
            failed = {f["itemIdentifier"] for f in answer.get("batchItemFailures", [])}
            if not failed:
                return
            # As Lambda does: retry from the first failed record on.
            first = next(
                i for i, r in enumerate(records) if r["dynamodb"]["SequenceNumber"] in failed
            )
            records = records[first:]
            time.sleep(min(0.1 * 2**attempt, 2.0))
        logger.error(
            "dropping %d stream record(s) after %d tries (on AWS: the on-failure destination)",
            len(records),
            MAX_STREAM_RETRIES,
        )


class SchedulePump(_Pump):
    """EventBridge Scheduler, which moto stores but never fires: sends each due one-time
    schedule's input to its target queue, then deletes the schedule (as
    ``ActionAfterCompletion=DELETE`` does)."""

    def __init__(
        self,
        scheduler: Any,
        sqs: Any,
        group: str,
        queue_urls: dict[str, str],
        clock: Callable[[], float],
        stop: threading.Event,
    ) -> None:
        super().__init__("schedule-pump", stop)
        self._scheduler = scheduler
        self._sqs = sqs
        self._group = group
        self._queue_urls = queue_urls  # target ARN -> queue URL
        self._clock = clock

    def step(self) -> bool:
        fired = self.fire_due()
        if not fired:
            # Scheduler's precision is a minute: polling once a second is plenty.
            self._stop_event.wait(1.0)
        return bool(fired)

    def fire_due(self) -> int:
        """Fire the schedules due now; returns how many fired."""
        fired = 0
        summaries = self._scheduler.list_schedules(GroupName=self._group).get("Schedules", [])
        for summary in summaries:
            schedule = self._scheduler.get_schedule(Name=summary["Name"], GroupName=self._group)
            if at_time(schedule["ScheduleExpression"]) > self._clock():
                continue
            target = schedule["Target"]
            self._sqs.send_message(
                QueueUrl=self._queue_urls[target["Arn"]], MessageBody=target["Input"]
            )
            self._scheduler.delete_schedule(Name=summary["Name"], GroupName=self._group)
            fired += 1
        return fired


def at_time(expression: str) -> float:
    """The time of a one-time schedule expression, ``at(yyyy-mm-ddThh:mm:ss)`` in UTC."""
    stamp = expression.removeprefix("at(").removesuffix(")")
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC).timestamp()


class QueuePump(_Pump):
    """SQS -> the task handler, as an event source mapping with partial batch responses.

    One thread receives; up to ``concurrency`` handler invocations run at once, like
    Lambda's concurrency for the queue. Receiving only when a slot is free keeps
    messages in the queue (and visible to the DLQ count) until they can be handled.
    """

    def __init__(
        self,
        sqs: Any,
        queue_url: str,
        queue_arn: str,
        handler: Handler,
        stop: threading.Event,
        *,
        concurrency: int = 16,
        batch_size: int = 5,
    ) -> None:
        super().__init__("task-pump", stop)
        self._sqs = sqs
        self._url = queue_url
        self._arn = queue_arn
        self._handler = handler
        self._batch_size = batch_size
        self._slots = threading.Semaphore(concurrency)
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="task")

    def step(self) -> bool:
        self._slots.acquire()
        try:
            answer = self._sqs.receive_message(
                QueueUrl=self._url, MaxNumberOfMessages=self._batch_size, AttributeNames=["All"]
            )
        except Exception:
            self._slots.release()
            raise
        messages = answer.get("Messages", [])
        if not messages:
            self._slots.release()
            return False
        self._pool.submit(self._invoke, messages)
        return True

    def _invoke(self, messages: list[dict[str, Any]]) -> None:
        try:
            event = {"Records": [self._record(m) for m in messages]}
            result = self._handler(event, context_for("task"))
            failed = {f["itemIdentifier"] for f in result.get("batchItemFailures", [])}
            done = [m for m in messages if m["MessageId"] not in failed]
            if done:
                self._sqs.delete_message_batch(
                    QueueUrl=self._url,
                    Entries=[
                        {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                        for i, m in enumerate(done)
                    ],
                )
        except Exception:
            logger.exception(
                "task invocation failed; its messages come back after the visibility timeout"
            )
        finally:
            self._slots.release()

    def join(self, timeout: float | None = None) -> None:
        super().join(timeout)
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _record(self, message: dict[str, Any]) -> dict[str, Any]:
        return {
            "messageId": message["MessageId"],
            "receiptHandle": message["ReceiptHandle"],
            "body": message["Body"],
            "attributes": message.get("Attributes", {}),
            "messageAttributes": {},
            "md5OfBody": message.get("MD5OfBody", ""),
            "eventSource": "aws:sqs",
            "eventSourceARN": self._arn,
            "awsRegion": "us-east-1",
        }
