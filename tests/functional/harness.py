"""Functional-test harness: the real handlers over moto, driven step by step.

``Harness`` plays the part of AWS's event source mappings synchronously, so a test
decides exactly how each stream record and task message is delivered: once, twice,
never acknowledged (a crash), and so on. Workers are real HTTP servers on 127.0.0.1.
"""

from __future__ import annotations

import base64
import json
import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pydantic import SecretStr

from functions import api_http, stream_ddb, task_sqs
from xdb.engine import runtime
from xdb.local import aws
from xdb.local.http_api import to_event
from xdb.local.pumps import context_for, matches
from xdb.model.execution import EventKind
from xdb.store.table import STREAM_FILTER


class Clock:
    """Real time plus an offset the test moves by hand (SQS delays stay real)."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += seconds


Answer = Callable[[dict[str, Any]], tuple[int, Any]]


@dataclass
class FakeWorker:
    """A worker on 127.0.0.1 whose answers the test scripts per (api, stateId)."""

    answers: dict[tuple[str, str], Answer] = field(default_factory=dict)
    calls: Counter[tuple[str, str]] = field(default_factory=Counter)
    requests: list[dict[str, Any]] = field(default_factory=list)
    # Each request as it arrived: (headers, raw body), to check signatures.
    raw: list[tuple[dict[str, str], bytes]] = field(default_factory=list)

    def on(self, api: str, state_id: str, answer: Answer) -> None:
        self.answers[(api, state_id)] = answer

    def handle(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        if path.endswith("/rpc"):
            key = ("rpc", body["rpcName"])
        else:
            key = ("wait_until" if path.endswith("/start") else "execute", body["workflowStateId"])
        self.calls[key] += 1
        self.requests.append(body)
        return self.answers[key](body)


def decide(*states: tuple[str, Any]) -> Answer:
    """An execute answer moving to ``(stateId, input)`` pairs."""

    def answer(_: dict[str, Any]) -> tuple[int, Any]:
        next_states = [
            {
                "stateId": state_id,
                "stateInput": {"encoding": "json", "data": json.dumps(data)},
                "stateOptions": {"skipWaitUntil": True},
            }
            for state_id, data in states
        ]
        return 200, {"stateDecision": {"nextStates": next_states}}

    return answer


def complete(output: Any) -> Answer:
    return decide(("_SYS_GRACEFUL_COMPLETING_WORKFLOW", output))


def serve(worker: FakeWorker) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            data = self.rfile.read(int(self.headers["Content-Length"]))
            worker.raw.append((dict(self.headers.items()), data))
            body = json.loads(data)
            try:
                status, answer = worker.handle(self.path, body)
            except Exception as error:  # a scripted failure
                status, answer = 500, {"detail": str(error)}
            data = (answer if isinstance(answer, str) else json.dumps(answer)).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


SIGNING_SECRET = "functional-test-signing-secret"


class Crash(BaseException):
    """A process dying mid-handler: not an Exception, so nothing in the handler catches it."""


class Harness:
    def __init__(self, local: aws.LocalAws, clock: Clock, worker_url: str) -> None:
        self.local = local
        self.clock = clock
        self.worker_url = worker_url
        settings = local.settings.model_copy(update={"signing_secret": SecretStr(SIGNING_SECRET)})
        self.engine = runtime.build(settings, clock=clock, sleep=clock.advance)
        runtime.install(self.engine)
        self.sqs = local.client("sqs")
        self.ddb = local.client("dynamodb")
        self._stream = local.stream()
        self._schedules = local.schedule_pump(clock, threading.Event())
        self.scheduler = local.client("scheduler")

    # -- the API function

    def api(self, path: str, body: Any, method: str = "POST") -> tuple[int, Any]:
        raw = body if isinstance(body, str) else json.dumps(body)
        event = to_event(method, path, {"Content-Type": "application/json"}, raw.encode())
        answer = api_http.lambda_handler(event, context_for("api"))
        return answer["statusCode"], json.loads(answer["body"] or "null")

    def start(self, workflow_id: str, state_id: str = "A", **extra: Any) -> str:
        status, body = self.api(
            "/api/v1/workflow/start",
            {
                "workflowId": workflow_id,
                "iwfWorkflowType": "Flow",
                "workflowTimeoutSeconds": 0,
                "iwfWorkerUrl": self.worker_url,
                "startStateId": state_id,
                "stateOptions": {"skipWaitUntil": True},
                **extra,
            },
        )
        assert status == 200, body
        return str(body["workflowRunId"])

    # -- the stream function

    def stream_records(self) -> list[dict[str, Any]]:
        return [r for r in self._stream.read(1000) if matches(r, STREAM_FILTER)]

    def deliver_stream(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        return stream_ddb.lambda_handler({"Records": records}, context_for("stream"))

    # -- the task function

    def receive(self, max_messages: int = 10) -> list[dict[str, Any]]:
        return self.sqs.receive_message(
            QueueUrl=self.local.settings.queue_url,
            MaxNumberOfMessages=max_messages,
            AttributeNames=["All"],
        ).get("Messages", [])

    def deliver_tasks(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        records = [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": {},
                "messageAttributes": {},
                "eventSource": "aws:sqs",
            }
            for m in messages
        ]
        return task_sqs.lambda_handler({"Records": records}, context_for("task"))

    def ack(self, messages: list[dict[str, Any]]) -> None:
        for message in messages:
            self.sqs.delete_message(
                QueueUrl=self.local.settings.queue_url, ReceiptHandle=message["ReceiptHandle"]
            )

    def make_visible(self, messages: list[dict[str, Any]]) -> None:
        """As if the visibility timeout ran out: the messages come back."""
        for message in messages:
            self.sqs.change_message_visibility(
                QueueUrl=self.local.settings.queue_url,
                ReceiptHandle=message["ReceiptHandle"],
                VisibilityTimeout=0,
            )

    def run(
        self,
        *,
        stream_copies: int = 1,
        task_copies: int = 1,
        wait_delayed: bool = True,
        rounds: int = 400,
    ) -> None:
        """Deliver everything until nothing is left, each record/message ``copies`` times.

        With ``wait_delayed=False`` it stops when only delayed tasks (long timers) remain.
        """
        for _ in range(rounds):
            records = self.stream_records()
            for _ in range(stream_copies):
                if records:
                    assert self.deliver_stream(records) == {"batchItemFailures": []}
            messages = self.receive()
            for _ in range(task_copies):
                if messages:
                    self.deliver_tasks(messages)
            self.ack(messages)
            if not records and not messages:
                ready, delayed = self.queue_depth()
                if ready == 0 and (delayed == 0 or not wait_delayed):
                    return
                time.sleep(0.2)  # a delayed task (a retry or a timer) is on its way
        raise AssertionError("the engine did not settle")

    def fire_schedules(self) -> int:
        """Fire the schedules due by the harness clock, as EventBridge Scheduler would."""
        return self._schedules.fire_due()

    def schedules(self) -> list[str]:
        group = self.local.settings.schedule_group
        return [s["Name"] for s in self.scheduler.list_schedules(GroupName=group)["Schedules"]]

    # -- what happened

    def history(self, workflow_id: str, run_id: str) -> list[Any]:
        execution = self.engine.store.run(workflow_id, run_id)
        assert execution is not None, f"no run {run_id} of {workflow_id}"
        return self.engine.store.history(execution)

    def decisions(self, workflow_id: str, run_id: str) -> Counter[str]:
        """Committed execute decisions per state execution id."""
        return Counter(
            e.state_execution_id
            for e in self.history(workflow_id, run_id)
            if e.kind is EventKind.EXECUTE_COMPLETED
        )

    def item_count(self) -> int:
        return int(self.ddb.scan(TableName=self.local.settings.table_name, Select="COUNT")["Count"])

    def queue_depth(self) -> tuple[int, int]:
        """(messages visible or in flight, messages delayed)."""
        attributes = self.sqs.get_queue_attributes(
            QueueUrl=self.local.settings.queue_url, AttributeNames=["All"]
        )["Attributes"]
        ready = int(attributes["ApproximateNumberOfMessages"]) + int(
            attributes["ApproximateNumberOfMessagesNotVisible"]
        )
        return ready, int(attributes["ApproximateNumberOfMessagesDelayed"])


def incompressible(size: int) -> str:
    """``size`` characters that zlib cannot shrink much (snapshots are stored compressed)."""
    return base64.b64encode(os.urandom(size * 3 // 4)).decode()
