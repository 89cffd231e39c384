"""The one table from engine errors to HTTP statuses and iWF sub-statuses."""

from __future__ import annotations

from xdb.core import errors
from xdb.model.wire import ErrorSubStatus

# Ordered: the first matching class wins, so subclasses come before their bases.
HTTP_STATUS: list[tuple[type[errors.XdbError], int, ErrorSubStatus]] = [
    (errors.ProcessNotFound, 400, ErrorSubStatus.WORKFLOW_NOT_EXISTS_SUB_STATUS),
    (errors.ProcessAlreadyStarted, 400, ErrorSubStatus.WORKFLOW_ALREADY_STARTED_SUB_STATUS),
    (errors.LongPollTimedOut, 420, ErrorSubStatus.LONG_POLL_TIME_OUT_SUB_STATUS),
    (errors.BadRequest, 400, ErrorSubStatus.UNCATEGORIZED_SUB_STATUS),
    (errors.NotSupported, 400, ErrorSubStatus.UNCATEGORIZED_SUB_STATUS),
    (errors.ProcessClosed, 400, ErrorSubStatus.UNCATEGORIZED_SUB_STATUS),
    (errors.WorkerCallFailed, 420, ErrorSubStatus.WORKER_API_ERROR),
    (errors.InvalidWorkerAnswer, 420, ErrorSubStatus.WORKER_API_ERROR),
    (errors.LockConflict, 450, ErrorSubStatus.UNCATEGORIZED_SUB_STATUS),
    (errors.VersionConflict, 503, ErrorSubStatus.UNCATEGORIZED_SUB_STATUS),
    (errors.HistoryBehind, 503, ErrorSubStatus.UNCATEGORIZED_SUB_STATUS),
]


def status_of(error: errors.XdbError) -> tuple[int, ErrorSubStatus]:
    for kind, status, sub_status in HTTP_STATUS:
        if isinstance(error, kind):
            return status, sub_status
    return 500, ErrorSubStatus.UNCATEGORIZED_SUB_STATUS
