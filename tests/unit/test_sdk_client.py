"""The client's requests and its error mapping, over a scripted transport."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

import pytest

from examples.user_signup import Form, UserSignup
from tests.unit.test_sdk_registry import Good
from xdb.sdk import (
    Client,
    ClientError,
    EngineUnavailable,
    InvalidRequest,
    LockConflict,
    MultipleOutputs,
    ProcessAlreadyStarted,
    ProcessClosed,
    ProcessFailed,
    ProcessNotFound,
    ProcessStartOptions,
    ProcessStopped,
    ProcessTimedOut,
    RpcFailed,
    SigV4Transport,
    WaitTimedOut,
)
from xdb.transport import Reply, TransportError


class Script:
    """A transport answering each path from a list of replies, recording the requests."""

    def __init__(self, **replies: Any) -> None:
        self.replies = {path: list(r) for path, r in replies.items()}
        self.requests: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, url: str, body: bytes, headers: Mapping[str, str], timeout: float) -> Reply:
        path = url.rsplit("/api/v1/workflow/", 1)[1]
        self.requests.append((path, json.loads(body)))
        reply = self.replies[path].pop(0)
        if isinstance(reply, Exception):
            raise reply
        status, answer = reply
        return Reply(status, answer if isinstance(answer, bytes) else json.dumps(answer).encode())


def client(script: Script) -> Client:
    return Client("http://engine", "http://worker", transport=script)


@pytest.mark.parametrize(
    ("status", "body", "kind"),
    [
        (400, {"detail": "x", "code": "PROCESS_NOT_FOUND"}, ProcessNotFound),
        (400, {"detail": "x", "subStatus": "WORKFLOW_NOT_EXISTS_SUB_STATUS"}, ProcessNotFound),
        (400, {"detail": "x", "code": "PROCESS_ALREADY_STARTED"}, ProcessAlreadyStarted),
        (
            400,
            {"detail": "x", "subStatus": "WORKFLOW_ALREADY_STARTED_SUB_STATUS"},
            ProcessAlreadyStarted,
        ),
        (400, {"detail": "x", "code": "PROCESS_CLOSED"}, ProcessClosed),
        (400, {"detail": "x", "code": "BAD_REQUEST"}, InvalidRequest),
        (420, {"detail": "x", "code": "WORKER_CALL_FAILED"}, RpcFailed),
        (420, {"detail": "x", "subStatus": "WORKER_API_ERROR"}, RpcFailed),
        (420, {"detail": "x", "code": "LONG_POLL_TIMED_OUT"}, WaitTimedOut),
        (450, {"detail": "x", "code": "LOCK_CONFLICT"}, LockConflict),
        (503, {"detail": "x", "code": "VERSION_CONFLICT"}, EngineUnavailable),
        (502, b"Bad Gateway", EngineUnavailable),
        (403, {"message": "Forbidden"}, ClientError),
    ],
)
def test_error_answers_map_to_typed_exceptions(status: int, body: Any, kind: type) -> None:
    script = Script(stop=[(status, body)])
    with pytest.raises(kind) as raised:
        client(script).stop("p")
    assert type(raised.value) is kind
    assert raised.value.status == status


def test_stop_terminates_and_api_gateway_refusals_say_why() -> None:
    script = Script(stop=[(200, {}), (403, {"message": "Missing Authentication Token"})])
    client(script).stop("p")
    assert script.requests[0][1]["stopType"] == "TERMINATE"
    with pytest.raises(ClientError, match="Missing Authentication Token"):
        client(script).stop("p")


def test_publishing_with_the_process_checks_the_queue_and_the_value() -> None:
    script = Script(publishToInternalChannel=[(200, {})])
    with pytest.raises(ValueError, match="no local queue 'verfy'"):
        client(script).publish_to_local_queue("p", "verfy", process=UserSignup)
    with pytest.raises(ValueError, match="does not fit type str"):
        client(script).publish_to_local_queue("p", "q", 42, process=Good)
    client(script).publish_to_local_queue("p", "q", "fine", process=Good)
    assert [path for path, _ in script.requests] == ["publishToInternalChannel"]


def test_no_answer_is_engine_unavailable() -> None:
    with pytest.raises(EngineUnavailable, match="no answer from http://engine"):
        client(Script(stop=[TransportError("connection refused")])).stop("p")


def test_start_sends_the_starting_state_its_options_and_the_global_binding() -> None:
    script = Script(start=[(200, {"workflowRunId": "run-1"})])
    options = ProcessStartOptions(
        global_attribute_pk_value="u1",
        initial_upsert_global_attributes={
            "form": Form(email="a@b.c", name="A"),
            "status": "waiting",
        },
        timeout=timedelta(days=7),
    )
    assert client(script).start_process_execution("signup-u1", UserSignup, None, options) == "run-1"
    [(_, request)] = script.requests
    assert request["iwfWorkflowType"] == "UserSignup"
    assert request["startStateId"] == "Submit"
    assert request["stateOptions"] == {"skipWaitUntil": True}
    assert request["workflowTimeoutSeconds"] == 7 * 86400
    binding = request["workflowStartOptions"]["globalAttributes"]
    assert binding["tableName"] == "user" and binding["primaryKeyValue"] == "u1"
    assert binding["attributes"] == ["form", "status", "source"]
    assert binding["initialUpsert"][0]["value"]["data"] == '{"email":"a@b.c","name":"A"}'


def test_start_refuses_what_the_process_does_not_declare_before_calling() -> None:
    script = Script()
    with pytest.raises(ValueError, match="global_attribute_pk_value"):
        client(script).start_process_execution("p", UserSignup)
    with pytest.raises(ValueError, match="no global attribute 'colour'"):
        client(script).start_process_execution(
            "p",
            UserSignup,
            options=ProcessStartOptions(
                global_attribute_pk_value="u", initial_upsert_global_attributes={"colour": "red"}
            ),
        )
    with pytest.raises(ValueError, match="does not fit type int"):
        client(script).start_process_execution(
            "p", Good, 1, ProcessStartOptions(initial_local_attributes={"count": "many"})
        )
    assert script.requests == []


def test_rpc_input_and_output_are_typed_by_the_method() -> None:
    script = Script(rpc=[(200, {"output": {"encoding": "json", "data": "3"}})])
    assert client(script).invoke_rpc("p", UserSignup.reminders_sent) == 3
    assert script.requests[0][1]["rpcName"] == "reminders_sent"
    with pytest.raises(ValueError, match="does not fit type str"):
        client(script).invoke_rpc("p", UserSignup.verify, 42)  # type: ignore[arg-type]


def closed(status: str, *outputs: str, **extra: Any) -> tuple[int, dict[str, Any]]:
    results = [
        {
            "completedStateId": f"S{i}",
            "completedStateExecutionId": f"S{i}-1",
            "completedStateOutput": {"encoding": "json", "data": json.dumps(o)},
        }
        for i, o in enumerate(outputs)
    ]
    return 200, {"workflowRunId": "r", "workflowStatus": status, "results": results, **extra}


def test_waiting_polls_again_after_a_long_poll_timeout_and_maps_how_it_ended() -> None:
    timed_out = (420, {"detail": "still waiting", "code": "LONG_POLL_TIMED_OUT"})
    script = Script(getWithWait=[timed_out, closed("COMPLETED", "done")])
    assert client(script).wait_for_process_completion("p", str) == "done"
    assert len(script.requests) == 2
    for status, kind in [
        ("FAILED", ProcessFailed),
        ("TIMEOUT", ProcessTimedOut),
        ("TERMINATED", ProcessStopped),
        ("CANCELED", ProcessStopped),
    ]:
        ended = closed(status, errorType="STATE_DECISION_FAILING_WORKFLOW_ERROR_TYPE")
        with pytest.raises(kind, match=f"ended {status}"):
            client(Script(getWithWait=[ended])).wait_for_process_completion("p")


def test_several_outputs_are_not_silently_reduced_to_one() -> None:
    script = Script(getWithWait=[closed("COMPLETED", "a", "b")] * 2)
    with pytest.raises(MultipleOutputs):
        client(script).wait_for_process_completion("p")
    assert [r.output for r in client(script).get_results("p")] == ["a", "b"]


def test_sigv4_transport_signs_for_execute_api(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    seen: list[Mapping[str, str]] = []

    def inner(url: str, body: bytes, headers: Mapping[str, str], timeout: float) -> Reply:
        seen.append(headers)
        return Reply(200, b"{}")

    transport = SigV4Transport("eu-west-1", inner)
    transport("https://abc.execute-api.eu-west-1.amazonaws.com/api/v1/workflow/stop", b"{}", {}, 5)
    authorization = seen[0]["Authorization"]
    assert authorization.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "/eu-west-1/execute-api/aws4_request" in authorization
    assert "X-Amz-Date" in seen[0]
