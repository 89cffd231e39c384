"""Fixes to moto, applied by the local runtime only (moto 5.2.5).

Two make room for the local runtime: a table's stream keeps every record forever in moto;
the local stream reader drops records once delivered (see ``MotoStream``), under
:data:`STREAM_LOCK`, which moto's ``StreamShard.add`` then also takes.

Two fix races. DynamoDB's conditional writes are atomic; moto's check the condition and
then write, so two threads of the local runtime could both pass a check on the same
version and one write would be lost (the 50-concurrent-RPC counter test ended at 49). We
run every DynamoDB call under one lock, :data:`DYNAMODB_LOCK`: reads too, because moto keeps a
table's items in a ``defaultdict`` that a read of a missing item adds to, and a transaction
deep-copies the table ("dictionary changed size during iteration"). The GIL serializes
moto's work anyway; the lock costs little. SQS ``delete_message`` rebuilds the queue's message list without the
queue's lock, while ``send_message`` appends under it: a message sent during a delete is
lost (``xdb bench`` lost about one process in twenty to it). ``receive_message`` reads the
set of pending messages while a delete changes it ("Set changed size during iteration").
We run receives and deletes under the queue's lock, as sends already are. A failed
``TransactWriteItems`` puts back a deep copy of each table it touched, taken when it
began: the copy must not be taken while the stream reader drops records (it could skip
unread ones), so transactions also hold :data:`STREAM_LOCK`; and the table object changes,
so the stream reader looks the table up on each read (a stale one stalled every process).

The others keep moto's behaviour and remove work that grows with load; each was found
with a profiler on ``xdb bench``:

* SQS reads the clock through ``unix_time()``, which builds two datetimes and subtracts
  them; it does so for every message of the queue on every send and receive (to count
  visible and delayed messages). We read ``time.time()`` instead: same value, ~20x cheaper.
* SQS ``receive_message`` checks each candidate message's retention by computing *all*
  queue attributes, which counts every message again: O(n^2) per receive. We read the
  retention period directly.
* SQS draws each 185-letter receipt handle one ``random.choice`` at a time.
* Every request lists the methods of its response class with ``inspect.getmembers``;
  classes do not change at run time, so we remember the list per class.
* Every backend lookup takes a global lock and copies the account list, even when the
  account's backend exists; the task threads contend on that lock on every call.
"""

from __future__ import annotations

import functools
import random
import string
import threading
import time
from datetime import datetime
from typing import Any

import moto.core.responses
import moto.sqs.models
from moto.core.base_backend import BackendDict
from moto.core.utils import method_names_from_class
from moto.core.utils import unix_time as moto_unix_time
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.table import StreamShard
from moto.sqs.models import Queue, SQSBackend

_applied = False
STREAM_LOCK = threading.RLock()
DYNAMODB_LOCK = threading.RLock()
_DYNAMODB_CALLS = (
    "put_item",
    "update_item",
    "delete_item",
    "transact_write_items",
    "batch_write_item",
    "get_item",
    "query",
    "scan",
)


def _unix_time(dt: datetime | None = None) -> float:
    return time.time() if dt is None else moto_unix_time(dt)


def _unix_time_millis(dt: datetime | None = None) -> float:
    return _unix_time(dt) * 1000.0


def _receipt_handle() -> str:
    return "".join(random.choices(string.ascii_lowercase, k=185))


def apply() -> None:
    global _applied
    if _applied:
        return
    _applied = True
    create_backend = BackendDict._create_account_specific_backend

    def existing_or_create(self: BackendDict, account_id: str) -> None:
        if account_id in self and self in getattr(BackendDict, "_instances", []):
            return
        create_backend(self, account_id)

    def retained(self: SQSBackend, queue_name: str, message: Any) -> bool:
        queue: Any = self.get_queue(queue_name)
        retain_until = int(queue.message_retention_period) + message.sent_timestamp / 1000
        return bool(retain_until > time.time())

    transact = DynamoDBBackend.transact_write_items

    def transact_with_stream_locked(self: DynamoDBBackend, *args: Any, **kwargs: Any) -> Any:
        with STREAM_LOCK:
            return transact(self, *args, **kwargs)

    DynamoDBBackend.transact_write_items = transact_with_stream_locked  # type: ignore[method-assign]
    # Outside the stream lock (taken second): every call takes the DynamoDB lock first.
    for name in _DYNAMODB_CALLS:
        setattr(DynamoDBBackend, name, _under_lock(getattr(DynamoDBBackend, name)))
    add_record = StreamShard.add

    def add_record_locked(self: StreamShard, old: Any, new: Any) -> None:
        with STREAM_LOCK:
            add_record(self, old, new)

    StreamShard.add = add_record_locked  # type: ignore[method-assign]
    delete_message = Queue.delete_message

    def delete_message_locked(self: Queue, receipt_handle: str) -> None:
        with self._messages_lock:
            delete_message(self, receipt_handle)

    Queue.delete_message = delete_message_locked  # type: ignore[method-assign]
    receive_message = SQSBackend.receive_message

    def receive_message_locked(self: SQSBackend, queue_name: str, *args: Any, **kwargs: Any) -> Any:
        queue: Any = self.get_queue(queue_name)
        with queue._messages_lock:
            return receive_message(self, queue_name, *args, **kwargs)

    SQSBackend.receive_message = receive_message_locked  # type: ignore[method-assign]
    moto.sqs.models.unix_time = _unix_time
    moto.sqs.models.unix_time_millis = _unix_time_millis
    moto.sqs.models.generate_receipt_handle = _receipt_handle
    SQSBackend.is_message_valid_based_on_retention_period = retained  # type: ignore[method-assign]
    moto.core.responses.method_names_from_class = functools.cache(method_names_from_class)
    BackendDict._create_account_specific_backend = existing_or_create  # type: ignore[method-assign]


def _under_lock(call: Any) -> Any:
    @functools.wraps(call)
    def locked(*args: Any, **kwargs: Any) -> Any:
        with DYNAMODB_LOCK:
            return call(*args, **kwargs)

    return locked
