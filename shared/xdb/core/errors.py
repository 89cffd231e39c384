"""Errors the core raises. They carry identifiers and a stable ``code``.

The tree (all under :class:`xdb.core.errors.XdbError`)::

    XdbError
    ├── BadRequest            the caller asked for something invalid (400)
    │   ├── PayloadTooLarge   the execution would not fit in one item (400)
    │   └── GlobalRowExists   a start's initial global write met an existing row (400)
    ├── NotSupported          valid iWF, not built in XDB yet (400)
    ├── ProcessNotFound       no such process execution (400, WORKFLOW_NOT_EXISTS)
    ├── ProcessAlreadyStarted the id is taken under its reuse policy (400, ALREADY_STARTED)
    ├── ProcessClosed         the execution is closed; the request needs it running (400)
    ├── LongPollTimedOut      still running when the wait ended (420)
    ├── VersionConflict       someone else committed first; reload and re-apply
    ├── HistoryBehind         a history page is still being written; retry (503)
    ├── LockConflict          a locked attribute changed under a worker call (450)
    ├── InvalidWorkerAnswer   the worker answered something the engine cannot apply
    └── WorkerCallFailed      the worker call failed (timeout, 4xx/5xx, bad JSON)

The HTTP mapping lives in one table, in :mod:`xdb.api.errors`.
"""

from __future__ import annotations


class XdbError(Exception):
    code = "XDB_ERROR"

    def __init__(self, message: str, **identifiers: object) -> None:
        super().__init__(message)
        self.message = message
        self.identifiers = identifiers
        for name, value in identifiers.items():
            setattr(self, name, value)


class BadRequest(XdbError):
    code = "BAD_REQUEST"


class PayloadTooLarge(BadRequest):
    code = "PAYLOAD_TOO_LARGE"


class GlobalRowExists(BadRequest):
    code = "GLOBAL_ROW_EXISTS"


class NotSupported(XdbError):
    code = "NOT_SUPPORTED"


class ProcessNotFound(XdbError):
    code = "PROCESS_NOT_FOUND"


class ProcessAlreadyStarted(XdbError):
    code = "PROCESS_ALREADY_STARTED"


class ProcessClosed(XdbError):
    code = "PROCESS_CLOSED"


class LongPollTimedOut(XdbError):
    code = "LONG_POLL_TIMED_OUT"


class VersionConflict(XdbError):
    code = "VERSION_CONFLICT"


class HistoryBehind(XdbError):
    """A run's history is not whole yet: the stream function has a page still to write."""

    code = "HISTORY_BEHIND"


class LockConflict(XdbError):
    code = "LOCK_CONFLICT"


class InvalidWorkerAnswer(XdbError):
    code = "INVALID_WORKER_ANSWER"


class WorkerCallFailed(XdbError):
    code = "WORKER_CALL_FAILED"
