"""Two fixes to moto's hot paths, applied by the local runtime only.

Both keep moto's behaviour and remove work that grows with load (measured with py-spy on
``xdb bench``; moto 5.2.5):

* SQS ``receive_message`` checks each candidate message's retention by computing *all*
  queue attributes, which counts every message in the queue: O(n^2) per receive with n
  messages in flight. We read the retention period directly.
* Every request lists the methods of its response class with ``inspect.getmembers``;
  classes do not change at run time, so we remember the list per class.
* Every backend lookup takes a global lock and copies the account list, even when the
  account's backend already exists; with the task pool's threads that lock is contended
  on every call. We skip the lock when the backend exists (a dict lookup is atomic).
"""

from __future__ import annotations

import functools
from typing import Any

import moto.core.responses
from moto.core.base_backend import BackendDict
from moto.core.utils import method_names_from_class, unix_time
from moto.sqs.models import SQSBackend

_applied = False


def apply() -> None:
    global _applied
    if _applied:
        return
    _applied = True
    create_backend = BackendDict._create_account_specific_backend

    def existing_or_create(self: BackendDict, account_id: str) -> None:
        if account_id in self and self in BackendDict._instances:  # type: ignore[attr-defined]
            return
        create_backend(self, account_id)

    def retained(self: SQSBackend, queue_name: str, message: Any) -> bool:
        queue = self.get_queue(queue_name)
        retain_until = int(queue.message_retention_period) + message.sent_timestamp / 1000
        return bool(retain_until > unix_time())

    moto.core.responses.method_names_from_class = functools.cache(method_names_from_class)
    BackendDict._create_account_specific_backend = existing_or_create  # type: ignore[method-assign]
    SQSBackend.is_message_valid_based_on_retention_period = retained  # type: ignore[method-assign]
