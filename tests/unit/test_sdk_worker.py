"""The worker service and its adapters: signature checks, routing, user errors, ASGI, Lambda."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from typing import Any

from starlette.applications import Starlette
from starlette.routing import Mount

from tests.unit.test_sdk_registry import Finish, Good, Start
from xdb.model.wire import EXECUTE_PATH, RPC_PATH, WAIT_UNTIL_PATH
from xdb.sdk import (
    AsyncState,
    CommandRequest,
    CommandResults,
    Communication,
    Context,
    Persistence,
    Process,
    Registry,
    StateDecision,
    StateSchema,
    TimerCommand,
    WorkerService,
)
from xdb.sdk.asgi import asgi_app
from xdb.sdk.aws_lambda import handler
from xdb.signing import sign
from xdb.transport import server_time_ms

SECRET = b"unit-test-secret"


class Broken(AsyncState[None]):
    def execute(
        self,
        ctx: Context,
        input: None,
        results: CommandResults,
        persistence: Persistence,
        communication: Communication,
    ) -> StateDecision:
        raise ConnectionError("the mail server is down")


class Wanders(AsyncState[None]):  # goes to a state it did not declare
    def execute(
        self,
        ctx: Context,
        input: None,
        results: CommandResults,
        persistence: Persistence,
        communication: Communication,
    ) -> StateDecision:
        return StateDecision.single_next_state(Finish, 1)


class LooksUp(AsyncState[None]):  # a bug in user code: a missing key
    def execute(
        self,
        ctx: Context,
        input: None,
        results: CommandResults,
        persistence: Persistence,
        communication: Communication,
    ) -> StateDecision:
        return {}["missing"]  # type: ignore[no-any-return]


class Misc(Process):
    states = StateSchema(Broken(), Wanders(), LooksUp(), Finish())


def execute_body(process: str, state: str, data: str = "null") -> bytes:
    return json.dumps(
        {
            "context": {"workflowId": "p", "workflowRunId": "r", "workflowStartedTimestamp": 1},
            "workflowType": process,
            "workflowStateId": state,
            "stateInput": {"encoding": "json", "data": data},
            "commandResults": {},
        }
    ).encode()


worker = WorkerService(Registry(Good, Misc), signing_secret=SECRET)


def call(path: str, body: bytes, secret: bytes = SECRET) -> tuple[int, Any]:
    reply = worker.handle(path, body, sign(secret, body))
    return reply.status, json.loads(reply.body)


def test_a_signed_execute_answers_the_decision_with_the_next_states_options() -> None:
    status, answer = call(EXECUTE_PATH, execute_body("Good", "Start", "41"))
    assert status == 200
    assert answer["stateDecision"]["nextStates"] == [
        {
            "stateId": "Finish",
            "stateInput": {"encoding": "json", "data": "42"},
            "stateOptions": {"skipWaitUntil": True},
        }
    ]


def test_requests_not_signed_by_the_engine_are_refused() -> None:
    body = execute_body("Good", "Start", "1")
    assert call(EXECUTE_PATH, body, secret=b"another key")[0] == 401
    assert worker.handle(EXECUTE_PATH, body, {}).status == 401
    stale = sign(SECRET, body, now=time.time() - 3600)
    assert worker.handle(EXECUTE_PATH, body, stale).status == 401


def test_a_worker_without_a_secret_does_not_start(monkeypatch: Any) -> None:
    monkeypatch.delenv("XDB_SIGNING_SECRET", raising=False)
    try:
        WorkerService(Registry())
    except ValueError as error:
        assert "signing_secret" in str(error)
    else:
        raise AssertionError("a worker without a signing secret started")


def test_bad_requests_are_4xx_and_user_errors_500() -> None:
    assert call("/nowhere", b"{}")[0] == 404
    assert call(EXECUTE_PATH, b"{not json")[0] == 400
    assert call(EXECUTE_PATH, execute_body("Nobody", "Start"))[0] == 400
    assert call(RPC_PATH, b'{"context": {}}')[0] == 400
    status, answer = call(EXECUTE_PATH, execute_body("Good", "Start", '"not an int"'))
    assert status == 500 and "does not fit type int" in answer["detail"]
    status, answer = call(EXECUTE_PATH, execute_body("Misc", "Broken"))
    assert (status, answer["errorType"]) == (500, "ConnectionError")
    assert answer["detail"] == "ConnectionError: the mail server is down"
    status, answer = call(EXECUTE_PATH, execute_body("Misc", "Wanders"))
    assert status == 500 and "not in Wanders.next_states" in answer["detail"]


def asgi_post(app: Any, path: str, body: bytes, method: str = "POST") -> tuple[int, bytes]:
    sent: list[dict[str, Any]] = []
    chunks = [body[:10], body[10:]]  # the body in two parts, as a server may deliver it

    async def receive() -> dict[str, Any]:
        chunk = chunks.pop(0)
        return {"type": "http.request", "body": chunk, "more_body": bool(chunks)}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    headers = [(k.lower().encode(), v.encode()) for k, v in sign(SECRET, body).items()]
    scope = {"type": "http", "method": method, "path": path, "headers": headers, "root_path": ""}
    asyncio.run(app(scope, receive, send))
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


def test_the_asgi_app_serves_the_protocol_alone_and_mounted_in_starlette() -> None:
    app = asgi_app(worker)
    body = execute_body("Good", "Start", "1")
    status, answer = asgi_post(app, EXECUTE_PATH, body)
    assert (
        status == 200
        and json.loads(answer)["stateDecision"]["nextStates"][0]["stateId"] == "Finish"
    )
    assert asgi_post(app, EXECUTE_PATH, body, method="GET")[0] == 405

    async def through_starlette() -> int:
        mounted = Starlette(routes=[Mount("/worker", app=app)])
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        headers = [(k.lower().encode(), v.encode()) for k, v in sign(SECRET, body).items()]
        scope = {
            "type": "http",
            "method": "POST",
            "path": "/worker" + EXECUTE_PATH,
            "raw_path": ("/worker" + EXECUTE_PATH).encode(),
            "root_path": "",
            "headers": headers,
            "query_string": b"",
        }
        await mounted(scope, receive, send)
        return int(sent[0]["status"])

    assert asyncio.run(through_starlette()) == 200


def test_the_lambda_handler_serves_function_url_events() -> None:
    lambda_handler = handler(worker)
    body = execute_body("Good", "Start", "1")
    event = {
        "rawPath": EXECUTE_PATH,
        "headers": {k.lower(): v for k, v in sign(SECRET, body).items()},
        "requestContext": {"http": {"method": "POST"}},
        "body": base64.b64encode(body).decode(),
        "isBase64Encoded": True,
    }
    answer = lambda_handler(event, None)
    assert answer["statusCode"] == 200
    assert server_time_ms(answer["headers"]) is not None
    assert json.loads(answer["body"])["stateDecision"]["nextStates"][0]["stateInput"]["data"] == "2"
    event["headers"] = {}
    assert lambda_handler(event, None)["statusCode"] == 401


def test_start_state_classes_name_themselves() -> None:
    assert Start.state_id() == "Start" and Start.input_type() is int


def test_unknown_states_and_rpcs_are_400_but_a_key_error_in_user_code_is_500() -> None:
    assert call(EXECUTE_PATH, execute_body("Good", "Nowhere"))[0] == 400
    rpc_body = json.dumps(
        {
            "context": {"workflowId": "p", "workflowRunId": "r", "workflowStartedTimestamp": 1},
            "workflowType": "Good",
            "rpcName": "missing",
        }
    ).encode()
    status, answer = call(RPC_PATH, rpc_body)
    assert (status, answer["detail"]) == (400, "Good has no RPC 'missing'")
    status, answer = call(EXECUTE_PATH, execute_body("Misc", "LooksUp"))
    assert (status, answer["errorType"]) == (500, "KeyError")


def wait_until_body(process: str, state: str, data: str = "null") -> bytes:
    body = json.loads(execute_body(process, state, data))
    del body["commandResults"]
    return json.dumps(body).encode()


class Timers(AsyncState[None]):
    def wait_until(
        self, ctx: Context, input: None, persistence: Persistence, communication: Communication
    ) -> CommandRequest:
        # An explicit id "1", and an unnamed command at position 1.
        return CommandRequest.for_all_command_completed(
            TimerCommand.by_seconds(5, "1"), TimerCommand.by_seconds(9)
        )

    def execute(self, *_: Any) -> StateDecision:
        return StateDecision.dead_end()


class TwinTimers(Timers):
    def wait_until(self, *_: Any) -> CommandRequest:
        return CommandRequest.for_any_command_completed(
            TimerCommand.by_seconds(5, "t"), TimerCommand.by_seconds(9, "t")
        )


class Commands(Process):
    states = StateSchema(Timers(), TwinTimers(), Finish())


commands_worker = WorkerService(Registry(Commands), signing_secret=SECRET)


def test_unnamed_commands_never_take_an_id_a_command_was_given() -> None:
    body = wait_until_body("Commands", "Timers")
    reply = commands_worker.handle(WAIT_UNTIL_PATH, body, sign(SECRET, body))
    ids = [t["commandId"] for t in json.loads(reply.body)["commandRequest"]["timerCommands"]]
    assert ids == ["1", "_1"]
    body = wait_until_body("Commands", "TwinTimers")
    reply = commands_worker.handle(WAIT_UNTIL_PATH, body, sign(SECRET, body))
    assert reply.status == 500 and b"same id" in reply.body


def test_wait_until_on_a_state_without_one_waits_for_nothing() -> None:
    body = wait_until_body("Commands", "Finish", "1")
    reply = commands_worker.handle(WAIT_UNTIL_PATH, body, sign(SECRET, body))
    assert reply.status == 200
    assert json.loads(reply.body)["commandRequest"]["commandWaitingType"] == "ALL_COMPLETED"
