"""The cost model: count what the engine asks of AWS, and price it.

While a :class:`Meter` is installed, every boto3 request made through the default session
(the engine's and the local pumps') is counted per service and operation, and DynamoDB
capacity is computed from item sizes by DynamoDB's rules:

* a write costs 1 write unit per KB of the item (rounded up), twice that inside a
  transaction; the search index costs 1 write unit per KB of its entry when a write adds
  the entry or changes its projected values, 2 when it changes its keys, and nothing when
  the entry stays the same (DynamoDB's rules for global secondary index writes);
* a strongly consistent read costs 1 read unit per 4 KB read (rounded up, at least 1),
  an eventually consistent read half of that; a query sums the items it reads.

Lambda is priced from invocations and a duration model (the local runtime runs handlers
in-process over moto, so wall time says little about Lambda's): each invocation is billed
``BASE_MS`` of engine code, ``AWS_REQUEST_MS`` per AWS request it makes, the time the
engine sleeps (a long poll between its reads, a backoff), and for each worker call one
round trip (``AWS_REQUEST_MS`` again) plus the time the worker says it took (its
``Server-Timing`` header; the call's measured wall time when it sends none). The worker's
own figure is used because the engine's measured time here includes waiting for the other
handlers' threads in this one process, which a Lambda invocation never does.
The prices and their sources are in docs/cost.md.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from botocore.client import BaseClient

from xdb.store.capacity import item_size, write_units
from xdb.store.table import SEARCH_INDEX, TABLE
from xdb.transport import HttpTransport, Reply, server_time_ms

# us-east-1 list prices, USD (sources in docs/cost.md).
PRICE_WRITE_UNIT = 0.625 / 1e6  # DynamoDB on-demand write request unit
PRICE_READ_UNIT = 0.125 / 1e6  # DynamoDB on-demand read request unit
PRICE_SQS_REQUEST = 0.40 / 1e6  # SQS standard queue, per 64 KB chunk of a request
PRICE_LAMBDA_REQUEST = 0.20 / 1e6
PRICE_LAMBDA_GB_SECOND_ARM = 0.0000133334
PRICE_HTTP_API_REQUEST = 1.00 / 1e6  # API Gateway HTTP API, first 300 million a month
PRICE_SCHEDULER_INVOCATION = 1.00 / 1e6  # EventBridge Scheduler, after 14 million free

# The duration model of one Lambda invocation (see the module docstring).
BASE_MS = 5.0
AWS_REQUEST_MS = 10.0
# Memory of each function in the stack (infra/stack.py), in GB.
FUNCTION_GB = {"api_http": 0.5, "stream_ddb": 0.25, "task_sqs": 0.5}

_INDEXED_KEYS = {k["AttributeName"] for k in TABLE["GlobalSecondaryIndexes"][0]["KeySchema"]}
_PROJECTED = set(TABLE["GlobalSecondaryIndexes"][0]["Projection"]["NonKeyAttributes"])
assert TABLE["GlobalSecondaryIndexes"][0]["IndexName"] == SEARCH_INDEX


@dataclass
class Meter:
    requests: Counter[str] = field(default_factory=Counter)
    write_units: float = 0.0
    read_units: float = 0.0
    sqs_chunks: int = 0
    empty_receives: int = 0
    invocations: Counter[str] = field(default_factory=Counter)
    gb_seconds: float = 0.0
    api_requests: int = 0
    # The search index entry of each item as last written, to price index writes.
    _index: dict[str, dict[str, Any]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _calls: threading.local = field(default_factory=threading.local)

    # -- AWS requests

    def count(self, service: str, operation: str, params: dict[str, Any], parsed: Any) -> None:
        if getattr(self._calls, "paused", False):
            return
        with self._lock:
            self.requests[f"{service}:{operation}"] += 1
            if service == "dynamodb":
                write, read = _dynamodb_units(operation, params, parsed, self._index)
                self.write_units += write
                self.read_units += read
            elif service == "sqs":
                if operation == "ReceiveMessage" and not parsed.get("Messages"):
                    self.empty_receives += 1
                else:
                    self.sqs_chunks += _sqs_chunks(params)
        self._calls.count = getattr(self._calls, "count", 0) + 1

    # -- Lambda and API Gateway

    def invoked(self, function: str, handler: Callable[..., Any]) -> Callable[..., Any]:
        """``handler``, counted as Lambda invocations with the duration model."""

        def metered(event: Any, context: Any) -> Any:
            self._calls.count = 0
            self._calls.worker_seconds = 0.0
            self._calls.slept = 0.0
            try:
                return handler(event, context)
            finally:
                waited = self._calls.worker_seconds + self._calls.slept
                billed_ms = math.ceil(BASE_MS + AWS_REQUEST_MS * self._calls.count + 1000 * waited)
                with self._lock:
                    self.invocations[function] += 1
                    self.gb_seconds += FUNCTION_GB[function] * billed_ms / 1000
                    if function == "api_http":
                        self.api_requests += 1

        return metered

    def worker_called(self, measured_seconds: float, reply: Reply | None) -> None:
        """Bill a call to a worker: the function waits for it (see the module docstring)."""
        reported_ms = server_time_ms(reply.headers) if reply is not None else None
        billed = measured_seconds if reported_ms is None else (AWS_REQUEST_MS + reported_ms) / 1000
        self._calls.worker_seconds = getattr(self._calls, "worker_seconds", 0.0) + billed

    def sleep(self, seconds: float) -> None:
        """The engine's sleep (a long poll's wait, a backoff): Lambda bills it."""
        self._calls.slept = getattr(self._calls, "slept", 0.0) + seconds
        time.sleep(seconds)

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Leave out this thread's requests (a benchmark's own reads, say)."""
        self._calls.paused = True
        try:
            yield
        finally:
            self._calls.paused = False

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.invocations.clear()
            self.write_units = self.read_units = self.gb_seconds = 0.0
            self._index.clear()
            self.sqs_chunks = self.empty_receives = self.api_requests = 0

    # -- results

    def dollars(self) -> dict[str, float]:
        lambda_requests = sum(self.invocations.values())
        return {
            "DynamoDB writes": self.write_units * PRICE_WRITE_UNIT,
            "DynamoDB reads": self.read_units * PRICE_READ_UNIT,
            "SQS": self.sqs_chunks * PRICE_SQS_REQUEST,
            "Lambda requests": lambda_requests * PRICE_LAMBDA_REQUEST,
            "Lambda duration": self.gb_seconds * PRICE_LAMBDA_GB_SECOND_ARM,
            "API Gateway": self.api_requests * PRICE_HTTP_API_REQUEST,
            "Scheduler": self.requests["scheduler:CreateSchedule"] * PRICE_SCHEDULER_INVOCATION,
        }

    def aws_requests(self) -> int:
        """Billed AWS requests: every request but the empty receives of idle polling."""
        return sum(self.requests.values()) - self.empty_receives


@contextmanager
def metering() -> Iterator[Meter]:
    """Count every boto3 request and worker call made while this is open.

    It wraps botocore's one entry point for API calls rather than registering on a
    session's events: moto replaces boto3's default session when it starts.
    """
    meter = Meter()
    call, send = BaseClient._make_api_call, HttpTransport.__call__  # type: ignore[attr-defined]

    def counted_call(self: BaseClient, operation: str, params: dict[str, Any]) -> Any:
        parsed = call(self, operation, params)
        meter.count(self.meta.service_model.endpoint_prefix, operation, params, parsed)
        return parsed

    def timed_send(self: HttpTransport, *args: Any, **kwargs: Any) -> Reply:
        # In the engine's process, every HTTP request is a call to a worker.
        started, reply = time.perf_counter(), None
        try:
            reply = send(self, *args, **kwargs)
            return reply
        finally:
            meter.worker_called(time.perf_counter() - started, reply)

    BaseClient._make_api_call = counted_call  # type: ignore[attr-defined]
    HttpTransport.__call__ = timed_send  # type: ignore[method-assign]
    try:
        yield meter
    finally:
        BaseClient._make_api_call = call  # type: ignore[attr-defined]
        HttpTransport.__call__ = send  # type: ignore[method-assign]


# -- DynamoDB's capacity rules


def _write_units(item: dict[str, Any], index: dict[str, dict[str, Any]]) -> float:
    units = float(write_units(item))
    if item.keys() >= _INDEXED_KEYS:
        key = f"{item['pk']['S']}|{item['sk']['S']}"
        entry = {k: v for k, v in item.items() if k in _INDEXED_KEYS | _PROJECTED | {"pk", "sk"}}
        before = index.get(key)
        if entry != before:
            size_units = write_units(entry)
            keys_changed = before is not None and any(before[k] != entry[k] for k in _INDEXED_KEYS)
            units += size_units * (2 if keys_changed else 1)
            index[key] = entry
    return units


def _read_units(size: int, consistent: bool) -> float:
    units = float(math.ceil(size / 4096) or 1)
    return units if consistent else units / 2


def _dynamodb_units(
    operation: str, params: dict[str, Any], parsed: dict[str, Any], index: dict[str, Any]
) -> tuple[float, float]:
    if operation == "PutItem":
        return _write_units(params["Item"], index), 0.0
    if operation in ("UpdateItem", "DeleteItem"):
        return float(math.ceil(item_size(params.get("Key", {})) / 1024) or 1), 0.0
    if operation == "BatchWriteItem":
        puts = [
            r["PutRequest"]["Item"]
            for requests in params["RequestItems"].values()
            for r in requests
            if "PutRequest" in r
        ]
        return sum(_write_units(item, index) for item in puts), 0.0
    if operation == "TransactWriteItems":
        units = 0.0
        for entry in params["TransactItems"]:
            if "Put" in entry:
                units += 2 * _write_units(entry["Put"]["Item"], index)
            else:
                units += 2.0
        return units, 0.0
    if operation == "GetItem":
        item = parsed.get("Item") or {}
        return 0.0, _read_units(item_size(item), bool(params.get("ConsistentRead")))
    if operation == "BatchGetItem":
        return 0.0, sum(
            _read_units(item_size(item), bool(params["RequestItems"][table].get("ConsistentRead")))
            for table, items in parsed.get("Responses", {}).items()
            for item in items
        )
    if operation in ("Query", "Scan"):
        size = sum(item_size(item) for item in parsed.get("Items", []))
        return 0.0, _read_units(size, bool(params.get("ConsistentRead")))
    return 0.0, 0.0


def _sqs_chunks(params: dict[str, Any]) -> int:
    """SQS bills each 64 KB of a request's payload as one request."""
    bodies = [params.get("MessageBody", "")] + [
        e.get("MessageBody", "") for e in params.get("Entries", [])
    ]
    size = sum(len(body.encode()) for body in bodies)
    return max(1, math.ceil(size / 65536))
