"""Fixes to moto's hot paths, applied by the local runtime only.

Each keeps moto's behaviour and removes work that grows with load; each was found with a
profiler on ``xdb bench`` (moto 5.2.5):

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
import time
from datetime import datetime
from typing import Any

import moto.core.responses
import moto.sqs.models
from moto.core.base_backend import BackendDict
from moto.core.utils import method_names_from_class
from moto.core.utils import unix_time as moto_unix_time
from moto.sqs.models import SQSBackend

_applied = False


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
        queue = self.get_queue(queue_name)
        return bool(
            int(getattr(queue, "message_retention_period")) + message.sent_timestamp / 1000 > time.time()
        )

    moto.sqs.models.unix_time = _unix_time
    moto.sqs.models.unix_time_millis = _unix_time_millis
    moto.sqs.models.generate_receipt_handle = _receipt_handle
    SQSBackend.is_message_valid_based_on_retention_period = retained  # type: ignore[method-assign]
    moto.core.responses.method_names_from_class = functools.cache(method_names_from_class)
    BackendDict._create_account_specific_backend = existing_or_create  # type: ignore[method-assign]
