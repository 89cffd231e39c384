"""The API function: iWF shapes and status codes, and bad input that changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from functions import api_http, stream_ddb, task_sqs
from tests.functional.harness import FakeWorker, Harness, complete, incompressible
from xdb.local.pumps import context_for
from xdb.store.dynamodb_store import decode

EVENTS = Path(__file__).parents[2] / "events"


def sample(name: str) -> dict:
    return json.loads((EVENTS / name).read_text())


def test_sample_start_then_get(harness: Harness) -> None:
    answer = api_http.lambda_handler(sample("api_start_workflow.json"), context_for("api"))
    assert answer["statusCode"] == 200
    run_id = json.loads(answer["body"])["workflowRunId"]
    answer = api_http.lambda_handler(sample("api_get_workflow.json"), context_for("api"))
    assert json.loads(answer["body"]) == {"workflowRunId": run_id, "workflowStatus": "RUNNING"}
    status, body = harness.api("/api/v1/workflow/dataobjects/get", {"workflowId": "order-42"})
    assert status == 200 and body["objects"] == [
        {"key": "status", "value": {"encoding": "json", "data": '"new"'}}
    ]


def test_sample_stream_insert_enqueues_the_first_task_and_its_events_stay_in_the_snapshot(
    harness: Harness,
) -> None:
    answer = stream_ddb.lambda_handler(sample("dynamodb_stream_insert.json"), context_for("stream"))
    assert answer == {"batchItemFailures": []}
    tasks = [json.loads(m["Body"]) for m in harness.receive()]
    assert [(t["kind"], t["state_execution_id"]) for t in tasks] == [("state", "Submit-1")]
    assert harness.queue_depth() == (1, 0)
    assert len(harness.schedules()) == 1  # the process timeout, an hour away
    assert harness.item_count() == 0  # no history page: the new snapshot carries its events
    modify = sample("dynamodb_stream_modify.json")
    assert stream_ddb.lambda_handler(modify, context_for("stream")) == {"batchItemFailures": []}
    # The new image left the old one's events out: they became a history page.
    execution = decode(modify["Records"][0]["dynamodb"]["NewImage"])
    history = harness.engine.store.history(execution)
    assert [e.kind for e in history] == [
        "PROCESS_STARTED",
        "STATE_STARTED",
        *(e.kind for e in execution.events),
    ]


def test_sample_task_for_an_unknown_process_is_dropped(harness: Harness) -> None:
    answer = task_sqs.lambda_handler(sample("sqs_task_state.json"), context_for("task"))
    assert answer == {"batchItemFailures": []}
    assert harness.item_count() == 0


def test_health(harness: Harness) -> None:
    status, body = harness.api("/info/healthcheck", None, method="GET")
    assert status == 200 and body["condition"] == "OK"


def test_already_started_and_not_found_sub_statuses(harness: Harness) -> None:
    harness.start("wf")
    status, body = harness.api("/api/v1/workflow/start", start_body())
    assert (status, body["subStatus"]) == (400, "WORKFLOW_ALREADY_STARTED_SUB_STATUS")
    status, body = harness.api("/api/v1/workflow/get", {"workflowId": "nope"})
    assert (status, body["subStatus"]) == (400, "WORKFLOW_NOT_EXISTS_SUB_STATUS")


def test_long_poll_times_out_with_420(harness: Harness) -> None:
    harness.start("wf")
    status, body = harness.api("/api/v1/workflow/getWithWait", {"workflowId": "wf"})
    assert (status, body["subStatus"]) == (420, "LONG_POLL_TIME_OUT_SUB_STATUS")


def test_long_poll_returns_results_once_completed(harness: Harness, worker: FakeWorker) -> None:
    worker.on("execute", "A", complete({"ok": True}))
    harness.start("wf")
    harness.run()
    status, body = harness.api(
        "/api/v1/workflow/getWithWait", {"workflowId": "wf", "needsResults": True}
    )
    assert status == 200 and body["workflowStatus"] == "COMPLETED"
    assert body["results"][0]["completedStateOutput"]["data"] == '{"ok": true}'


def test_stop_types_and_data_attributes(harness: Harness) -> None:
    harness.start("wf")
    status, _ = harness.api(
        "/api/v1/workflow/dataobjects/set",
        {"workflowId": "wf", "objects": [{"key": "k", "value": {"encoding": "json", "data": "1"}}]},
    )
    assert status == 200
    status, body = harness.api(
        "/api/v1/workflow/dataobjects/get", {"workflowId": "wf", "keys": ["k", "missing"]}
    )
    assert body == {"objects": [{"key": "k", "value": {"encoding": "json", "data": "1"}}]}
    status, _ = harness.api(
        "/api/v1/workflow/stop", {"workflowId": "wf", "stopType": "FAIL", "reason": "test"}
    )
    assert status == 200
    status, body = harness.api("/api/v1/workflow/get", {"workflowId": "wf"})
    assert (
        body["workflowStatus"] == "FAILED"
        and body["errorType"] == "CLIENT_API_FAILING_WORKFLOW_ERROR_TYPE"
    )


def start_body(**changes: object) -> dict:
    body: dict[str, object] = {
        "workflowId": "wf",
        "iwfWorkflowType": "Flow",
        "workflowTimeoutSeconds": 0,
        "iwfWorkerUrl": "http://127.0.0.1:9",
        "startStateId": "A",
    }
    body.update(changes)
    return {k: v for k, v in body.items() if v is not None}


@pytest.mark.parametrize(
    ("path", "body", "status", "says"),
    [
        (
            "/api/v1/workflow/start",
            start_body(colour="red"),
            400,
            "colour: Extra inputs are not permitted",
        ),
        ("/api/v1/workflow/start", start_body(workflowId=None), 400, "workflowId: Field required"),
        (
            "/api/v1/workflow/start",
            start_body(workflowId=""),
            400,
            "workflowId: String should have at least 1 character",
        ),
        (
            "/api/v1/workflow/start",
            start_body(workflowTimeoutSeconds="soon"),
            400,
            "workflowTimeoutSeconds: Input should be a valid integer",
        ),
        (
            "/api/v1/workflow/start",
            start_body(iwfWorkerUrl="ftp://x"),
            400,
            "must be a plain http:// or https:// URL",
        ),
        (
            "/api/v1/workflow/start",
            start_body(workflowStartOptions={"cronSchedule": "* * * * *"}),
            400,
            "cronSchedule",
        ),
        ("/api/v1/workflow/start", "{not json", 400, "invalid request"),
        (
            "/api/v1/workflow/start",
            start_body(
                workflowId="big", stateInput={"encoding": "json", "data": incompressible(600_000)}
            ),
            400,
            "over the 380000-byte limit",
        ),
        ("/api/v1/workflow/start", [], 400, "invalid request"),
        ("/api/v1/workflow/get", {"workflowId": "ghost"}, 400, "'ghost' does not exist"),
        (
            "/api/v1/workflow/get",
            {"workflowId": "wf", "workflowRunId": "no-such-run"},
            400,
            "does not exist",
        ),
        ("/api/v1/workflow/stop", {"workflowId": "ghost"}, 400, "does not exist"),
        ("/api/v1/workflow/stop", {"workflowId": "wf", "stopType": "EXPLODE"}, 400, "stopType"),
        (
            "/api/v1/workflow/dataobjects/set",
            {"workflowId": "ghost", "objects": []},
            400,
            "does not exist",
        ),
        (
            "/api/v1/workflow/dataobjects/set",
            {"workflowId": "wf", "objects": [{"value": {}}]},
            400,
            "objects.0.key: Field required",
        ),
        ("/api/v1/workflow/nope", {}, 404, "no such endpoint"),
    ],
)
def test_bad_requests_get_a_clear_4xx_and_change_nothing(
    harness: Harness, path: str, body: object, status: int, says: str
) -> None:
    harness.start("wf")
    before = harness.engine.store.current("wf")
    items = harness.item_count()
    got_status, got = harness.api(path, body)
    assert got_status == status
    assert says in got["detail"]
    assert harness.engine.store.current("wf") == before
    assert harness.item_count() == items
