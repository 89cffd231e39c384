"""Everything the XDB SDK raises, under one root.

The tree::

    XdbError
    ├── DefinitionError          a process definition is wrong (raised when it is registered,
    │                            or when a worker's code breaks its own declarations)
    ├── ClientError              the engine refused or failed a request
    │   ├── InvalidRequest       400: the request is invalid (the detail says why)
    │   │   ├── ProcessNotFound      no such process (execution)
    │   │   ├── ProcessAlreadyStarted  the id is taken under its id reuse policy
    │   │   └── ProcessClosed        the execution has ended; the request needs it running
    │   ├── RpcFailed            420: the worker's RPC failed (``worker_detail``: what it said)
    │   ├── WaitTimedOut         420: still running when the wait ended
    │   ├── LockConflict         450: a locked attribute kept changing under the call
    │   └── EngineUnavailable    no answer, or 5xx/503: safe to retry later
    ├── ProcessNotCompleted      the process ended otherwise than completed
    │   ├── ProcessFailed
    │   ├── ProcessTimedOut
    │   └── ProcessStopped       terminated or canceled
    └── MultipleOutputs          several states completed the process with an output

:func:`error_from_reply` maps the engine's error answers to these classes, in one table.
"""

from __future__ import annotations

import json


class XdbError(Exception):
    """The root of every error the SDK raises."""


class DefinitionError(XdbError):
    """A process definition is invalid. ``problems`` lists every problem found."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


class ClientError(XdbError):
    """The engine answered ``status`` with an error (``code`` is XDB's stable error code)."""

    def __init__(
        self,
        detail: str,
        *,
        status: int = 0,
        code: str | None = None,
        sub_status: str | None = None,
        worker_detail: str | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.status = status
        self.code = code
        self.sub_status = sub_status
        self.worker_detail = worker_detail


class InvalidRequest(ClientError):
    pass


class ProcessNotFound(InvalidRequest):
    pass


class ProcessAlreadyStarted(InvalidRequest):
    pass


class ProcessClosed(InvalidRequest):
    pass


class RpcFailed(ClientError):
    pass


class WaitTimedOut(ClientError):
    pass


class LockConflict(ClientError):
    pass


class EngineUnavailable(ClientError):
    pass


class ProcessNotCompleted(XdbError):
    """The process execution ended as ``status`` (FAILED, TIMEOUT, TERMINATED, CANCELED)."""

    def __init__(
        self, process_id: str, status: str, error_type: str | None, message: str | None
    ) -> None:
        super().__init__(
            f"process {process_id} ended {status}"
            + (f" ({error_type}): {message}" if error_type or message else "")
        )
        self.process_id = process_id
        self.status = status
        self.error_type = error_type
        self.message = message


class ProcessFailed(ProcessNotCompleted):
    pass


class ProcessTimedOut(ProcessNotCompleted):
    pass


class ProcessStopped(ProcessNotCompleted):
    pass


class MultipleOutputs(XdbError):
    """``wait_for_process_completion`` found several outputs; ``get_results`` returns all."""

    def __init__(self, process_id: str, state_ids: list[str]) -> None:
        super().__init__(
            f"process {process_id} completed with outputs from {state_ids}: use get_results()"
        )
        self.process_id = process_id
        self.state_ids = state_ids


# The one table: the engine's error code (XDB) or iWF sub-status, else the HTTP status.
_BY_CODE: dict[str, type[ClientError]] = {
    "PROCESS_NOT_FOUND": ProcessNotFound,
    "WORKFLOW_NOT_EXISTS_SUB_STATUS": ProcessNotFound,
    "PROCESS_ALREADY_STARTED": ProcessAlreadyStarted,
    "WORKFLOW_ALREADY_STARTED_SUB_STATUS": ProcessAlreadyStarted,
    "PROCESS_CLOSED": ProcessClosed,
    "LONG_POLL_TIMED_OUT": WaitTimedOut,
    "LONG_POLL_TIME_OUT_SUB_STATUS": WaitTimedOut,
    "WORKER_CALL_FAILED": RpcFailed,
    "INVALID_WORKER_ANSWER": RpcFailed,
    "WORKER_API_ERROR": RpcFailed,
    "LOCK_CONFLICT": LockConflict,
    "VERSION_CONFLICT": EngineUnavailable,
    "HISTORY_BEHIND": EngineUnavailable,
}
_BY_STATUS: dict[int, type[ClientError]] = {
    400: InvalidRequest,
    404: InvalidRequest,
    405: InvalidRequest,
    420: RpcFailed,
    450: LockConflict,
}

_NOT_COMPLETED: dict[str, type[ProcessNotCompleted]] = {
    "FAILED": ProcessFailed,
    "TIMEOUT": ProcessTimedOut,
    "TERMINATED": ProcessStopped,
    "CANCELED": ProcessStopped,
}


def error_from_reply(status: int, body: bytes) -> ClientError:
    """The exception for an error answer of the engine (any body: JSON or not)."""
    try:
        answer = json.loads(body)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        answer = {"detail": body.decode("utf-8", "replace")[:500] or f"HTTP {status}"}
    code = answer.get("code")
    sub_status = answer.get("subStatus")
    kind = (
        _BY_CODE.get(code or "")
        or _BY_CODE.get(sub_status or "")
        or _BY_STATUS.get(status)
        or (EngineUnavailable if status >= 500 else ClientError)
    )
    # API Gateway's own refusals (authorization) carry "message" instead of "detail".
    return kind(
        str(answer.get("detail") or answer.get("message") or f"HTTP {status}"),
        status=status,
        code=code,
        sub_status=sub_status,
        worker_detail=answer.get("originalWorkerErrorDetail"),
    )


def not_completed(
    process_id: str, status: str, error_type: str | None, message: str | None
) -> ProcessNotCompleted:
    return _NOT_COMPLETED.get(status, ProcessNotCompleted)(process_id, status, error_type, message)
