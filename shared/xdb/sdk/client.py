"""The client: start processes, send them messages, call their RPCs, wait for their results.

::

    client = Client("http://127.0.0.1:8801", worker_url="http://127.0.0.1:8802")
    client.start_process_execution(
        f"signup-{user_id}", UserSignup, None,
        ProcessStartOptions(global_attribute_pk_value=user_id,
                            initial_upsert_global_attributes={"form": form, "status": "waiting"}),
    )
    client.invoke_rpc(f"signup-{user_id}", UserSignup.verify, "email")

Against a deployed stack, change ``server_url`` to the stack's ``ApiUrl`` and sign requests
with :class:`SigV4Transport` (IAM authorization, the stack's default) or pass
``headers={"Authorization": "Bearer ..."}`` (JWT authorization).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar, get_type_hints

from xdb.model import wire
from xdb.model.wire import GlobalAttributeConflictMode, IdReusePolicy
from xdb.model.wire import WorkflowStatus as ProcessStatus
from xdb.sdk.encoding import decode, encode
from xdb.sdk.errors import (
    EngineUnavailable,
    MultipleOutputs,
    WaitTimedOut,
    error_from_reply,
    not_completed,
)
from xdb.sdk.process import Process
from xdb.sdk.registry import define
from xdb.transport import HttpTransport, Reply, Transport, TransportError

__all__ = [
    "Client",
    "GlobalAttributeConflictMode",
    "IdReusePolicy",
    "ProcessDescription",
    "ProcessStartOptions",
    "ProcessStatus",
    "SigV4Transport",
    "StateOutput",
]

DEFAULT_SERVER_URL = "http://127.0.0.1:8801"
DEFAULT_WORKER_URL = "http://127.0.0.1:8802"
# Each long poll asks the engine to wait this long (API Gateway ends requests at 29 s).
LONG_POLL_SECONDS = 20

Input = TypeVar("Input")
Output = TypeVar("Output")
T = TypeVar("T")


@dataclass(frozen=True)
class ProcessStartOptions:
    """How to start a process execution.

    ``global_attribute_pk_value`` picks the row of the process's global-attribute table
    (required when the process declares global attributes);
    ``initial_upsert_global_attributes`` is written to that row in the start's own
    transaction, and ``global_attribute_conflict_mode`` says what happens if the row
    exists (ERROR: the start fails, IGNORE: keep the row, OVERRIDE: write over it).
    ``timeout``: the process fails with TIMEOUT after it (None: never).
    """

    global_attribute_pk_value: str | None = None
    initial_upsert_global_attributes: Mapping[str, Any] | None = None
    global_attribute_conflict_mode: GlobalAttributeConflictMode = GlobalAttributeConflictMode.ERROR
    initial_local_attributes: Mapping[str, Any] | None = None
    id_reuse_policy: IdReusePolicy | None = None
    timeout: timedelta | None = None


@dataclass(frozen=True)
class ProcessDescription:
    process_id: str
    process_execution_id: str
    status: ProcessStatus


@dataclass(frozen=True)
class StateOutput:
    """The output a state closed the process with."""

    state_id: str
    state_execution_id: str
    output: Any


class Client:
    def __init__(
        self,
        server_url: str = DEFAULT_SERVER_URL,
        worker_url: str = DEFAULT_WORKER_URL,
        *,
        transport: Transport | None = None,
        headers: Mapping[str, str] | None = None,
        request_timeout: float = 60.0,
    ) -> None:
        self.server_url = server_url.rstrip("/")
        self.worker_url = worker_url
        self._transport = transport or HttpTransport()
        self._headers = {"Content-Type": "application/json", **(headers or {})}
        self._timeout = request_timeout

    def close(self) -> None:
        """Close the client's connections (also: use the client as a context manager)."""
        close = getattr(self._transport, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def start_process_execution(
        self,
        process_id: str,
        process: type[Process],
        input: Any = None,
        options: ProcessStartOptions | None = None,
    ) -> str:
        """Start ``process`` as ``process_id``; returns the process execution id."""
        definition = define(process)
        options = options or ProcessStartOptions()
        request: dict[str, Any] = {
            "workflow_id": process_id,
            "iwf_workflow_type": definition.process_type,
            "iwf_worker_url": self.worker_url,
            "workflow_timeout_seconds": (
                0 if options.timeout is None else max(1, int(options.timeout.total_seconds()))
            ),
        }
        start = definition.starting_state
        if start is not None:
            request["start_state_id"] = type(start).state_id()
            request["state_input"] = encode(input, type(start).input_type())
            request["state_options"] = definition.state_options(type(start).state_id())
        start_options: dict[str, Any] = {"id_reuse_policy": options.id_reuse_policy}
        if options.initial_local_attributes:
            start_options["data_attributes"] = [
                wire.KeyValue(
                    key=key,
                    value=encode(
                        value, _declared(definition.local_attributes, key, "local attribute")
                    ),
                )
                for key, value in options.initial_local_attributes.items()
            ]
        table = definition.global_attributes
        if table is not None:
            if not options.global_attribute_pk_value:
                raise ValueError(
                    f"{definition.process_type} keeps global attributes in table {table.table!r}: "
                    "give ProcessStartOptions(global_attribute_pk_value=...) to pick its row"
                )
            start_options["global_attributes"] = wire.GlobalAttributeBinding(
                table_name=table.table,
                primary_key=table.primary_key,
                primary_key_value=options.global_attribute_pk_value,
                attributes=list(table.columns),
                initial_upsert=[
                    wire.KeyValue(
                        key=key,
                        value=encode(value, _declared(table.columns, key, "global attribute")),
                    )
                    for key, value in (options.initial_upsert_global_attributes or {}).items()
                ]
                or None,
                conflict_mode=options.global_attribute_conflict_mode,
            )
        elif options.initial_upsert_global_attributes:
            raise ValueError(f"{definition.process_type} declares no global attributes")
        request["workflow_start_options"] = wire.WorkflowStartOptions(**start_options)
        answer = self._call("/api/v1/workflow/start", wire.WorkflowStartRequest(**request))
        return str(answer["workflowRunId"])

    def publish_to_local_queue(
        self,
        process_id: str,
        queue: str,
        value: Any = None,
        *,
        dedup_id: str | None = None,
        process: type[Process] | None = None,
    ) -> None:
        """Send a message to a local queue of the current execution; with ``dedup_id`` a
        retried send is stored once. Given the ``process`` class, the queue's name and the
        value's type are checked before sending."""
        kind: Any = Any
        if process is not None:
            kind = _declared(define(process).queues, queue, "local queue")
        message = wire.InterStateChannelPublishing(
            channel_name=queue,
            value=None if value is None else encode(value, kind),
            dedup_id=dedup_id,
        )
        self._call(
            "/api/v1/workflow/publishToInternalChannel",
            wire.PublishToInternalChannelRequest(workflow_id=process_id, messages=[message]),
        )

    def invoke_rpc(
        self,
        process_id: str,
        method: Callable[[Any, Any, Input, Any, Any], Output],
        input: Input | None = None,
        *,
        timeout: timedelta | None = None,
    ) -> Output:
        """Call an RPC, e.g. ``invoke_rpc(pid, UserSignup.verify, "email")``; its input and
        output are checked against the method's annotations."""
        hints = get_type_hints(method)
        parameters = list(method.__code__.co_varnames[: method.__code__.co_argcount])
        input_type = hints.get(parameters[2], Any) if len(parameters) > 2 else Any
        call_timeout = timeout
        if call_timeout is None:
            call_timeout = getattr(getattr(method, "__xdb_rpc__", None), "timeout", None)
        request = wire.WorkflowRpcRequest(
            workflow_id=process_id,
            rpc_name=method.__name__,
            input=encode(input, input_type),
            timeout_seconds=(
                None if call_timeout is None else max(1, math.ceil(call_timeout.total_seconds()))
            ),
        )
        answer = self._call("/api/v1/workflow/rpc", request)
        output = answer.get("output")
        return decode(
            None if output is None else wire.EncodedObject(**output), hints.get("return", Any)
        )

    def wait_for_process_completion(
        self, process_id: str, output_type: type[T] | Any = Any, *, timeout: timedelta | None = None
    ) -> T:
        """Wait until the current execution closes; return its output as ``output_type``.

        Raises :class:`ProcessFailed`, :class:`ProcessTimedOut` or :class:`ProcessStopped`
        if it did not complete, :class:`WaitTimedOut` if ``timeout`` passed first, and
        :class:`MultipleOutputs` if several states completed it with outputs (see
        :meth:`get_results`)."""
        outputs = self._wait(process_id, timeout)
        found = [o for o in outputs if o.completed_state_output is not None]
        if len(found) > 1:
            raise MultipleOutputs(process_id, [o.completed_state_id for o in found])
        output = found[0].completed_state_output if found else None
        result: T = decode(output, output_type)
        return result

    def get_results(
        self, process_id: str, *, timeout: timedelta | None = None
    ) -> list[StateOutput]:
        """Wait until the current execution closes; every state output it completed with."""
        return [
            StateOutput(
                o.completed_state_id,
                o.completed_state_execution_id,
                decode(o.completed_state_output),
            )
            for o in self._wait(process_id, timeout)
        ]

    def describe(
        self, process_id: str, process_execution_id: str | None = None
    ) -> ProcessDescription:
        answer = self._call(
            "/api/v1/workflow/get",
            wire.WorkflowGetRequest(workflow_id=process_id, workflow_run_id=process_execution_id),
        )
        return ProcessDescription(
            process_id, answer["workflowRunId"], ProcessStatus(answer["workflowStatus"])
        )

    def stop(self, process_id: str, reason: str | None = None, *, fail: bool = False) -> None:
        """Stop the current execution: TERMINATED, or FAILED with ``fail=True``."""
        self._call(
            "/api/v1/workflow/stop",
            wire.WorkflowStopRequest(
                workflow_id=process_id,
                reason=reason,
                stop_type=wire.WorkflowStopType.FAIL if fail else wire.WorkflowStopType.TERMINATE,
            ),
        )

    def skip_timer(self, process_id: str, state_execution_id: str, command_id: str) -> None:
        """Fire a timer now (e.g. ``skip_timer(pid, "Verify-1", "reminder")``); a skip for a
        state execution that is not waiting yet is kept until it waits."""
        self._call(
            "/api/v1/workflow/timer/skip",
            wire.WorkflowSkipTimerRequest(
                workflow_id=process_id,
                workflow_state_execution_id=state_execution_id,
                timer_command_id=command_id,
            ),
        )

    # -- plumbing

    def _wait(self, process_id: str, timeout: timedelta | None) -> list[wire.StateCompletionOutput]:
        deadline = None if timeout is None else time.monotonic() + timeout.total_seconds()
        while True:
            left = LONG_POLL_SECONDS if deadline is None else deadline - time.monotonic()
            try:
                answer = self._call(
                    "/api/v1/workflow/getWithWait",
                    wire.WorkflowGetRequest(
                        workflow_id=process_id,
                        needs_results=True,
                        wait_time_seconds=max(1, int(min(left, LONG_POLL_SECONDS))),
                    ),
                    timeout=LONG_POLL_SECONDS + self._timeout,
                )
            except WaitTimedOut:
                if deadline is not None and time.monotonic() >= deadline:
                    raise
                continue
            got = wire.WorkflowGetResponse.model_validate(answer)
            if got.workflow_status is ProcessStatus.COMPLETED:
                return got.results or []
            raise not_completed(
                process_id, got.workflow_status.value, got.error_type, got.error_message
            )

    def _call(self, path: str, request: Any, *, timeout: float | None = None) -> dict[str, Any]:
        body = json.dumps(request.dump()).encode()
        try:
            reply = self._transport(
                self.server_url + path, body, self._headers, timeout or self._timeout
            )
        except TransportError as error:
            raise EngineUnavailable(f"no answer from {self.server_url}{path}: {error}") from None
        if reply.status >= 300:
            raise error_from_reply(reply.status, reply.body)
        return json.loads(reply.body) if reply.body else {}


def _declared(types: Mapping[str, Any], key: str, what: str) -> Any:
    try:
        return types[key]
    except KeyError:
        raise ValueError(f"no {what} {key!r} is declared (declared: {sorted(types)})") from None


class SigV4Transport:
    """Signs each request with AWS Signature Version 4 (the stack's IAM authorization),
    with the default boto3 credentials, then sends it with ``inner``."""

    def __init__(self, region: str, inner: Transport | None = None) -> None:
        import boto3  # only clients of a deployed stack need it

        self._region = region
        self._session = boto3.Session()
        self._inner = inner or HttpTransport()

    def __call__(self, url: str, body: bytes, headers: Mapping[str, str], timeout: float) -> Reply:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        request = AWSRequest(method="POST", url=url, data=body, headers=dict(headers))
        credentials = self._session.get_credentials()
        if credentials is None:
            raise TransportError("no AWS credentials to sign the request with")
        SigV4Auth(credentials.get_frozen_credentials(), "execute-api", self._region).add_auth(
            request
        )
        return self._inner(url, body, dict(request.headers.items()), timeout)
