"""The sample events in events/ drive the real handlers, as Lambda would deliver them.

Each sample can also be tried by hand against ``xdb dev`` (see events/README.md); here
they run over moto with a scripted worker standing in for ``http://127.0.0.1:8802``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from functions import api_http, stream_ddb, task_sqs
from tests.functional.harness import FakeWorker, Harness, decide
from xdb.local.pumps import context_for

EVENTS = Path(__file__).resolve().parents[2] / "events"
SAMPLE_WORKER = "http://127.0.0.1:8802"


def sample(name: str, worker_url: str) -> dict[str, Any]:
    """A sample event, pointed at this test's worker instead of the sample's."""
    text = (EVENTS / name).read_text()
    assert SAMPLE_WORKER in text or "sqs" in name or "get" in name
    return dict(json.loads(text.replace(SAMPLE_WORKER, worker_url)))


def test_every_sample_is_used_here() -> None:
    used = {
        "api_start_workflow.json",
        "api_get_workflow.json",
        "dynamodb_stream_insert.json",
        "dynamodb_stream_modify.json",
        "sqs_task_state.json",
        "sqs_timer_from_schedule.json",
    }
    assert {p.name for p in EVENTS.glob("*.json")} == used


def test_api_samples_start_and_describe_a_process(harness: Harness, worker: FakeWorker) -> None:
    url = harness.worker_url
    started = api_http.lambda_handler(sample("api_start_workflow.json", url), context_for("api"))
    assert started["statusCode"] == 200, started
    got = api_http.lambda_handler(sample("api_get_workflow.json", url), context_for("api"))
    assert got["statusCode"] == 200
    assert json.loads(got["body"])["workflowStatus"] == "RUNNING"


def test_stream_and_task_samples_run_the_state_and_move_on(
    harness: Harness, worker: FakeWorker
) -> None:
    url = harness.worker_url
    insert = sample("dynamodb_stream_insert.json", url)
    # The snapshot the insert record describes is in the table, as it would be on AWS.
    item = insert["Records"][0]["dynamodb"]["NewImage"]
    harness.ddb.put_item(TableName=harness.local.settings.table_name, Item=item)
    assert stream_ddb.lambda_handler(insert, context_for("stream")) == {"batchItemFailures": []}
    assert [json.loads(m["Body"])["state_execution_id"] for m in harness.receive()] == ["Submit-1"]
    worker.on("execute", "Submit", decide(("Ship", {"item": "book"})))
    done = task_sqs.lambda_handler(sample("sqs_task_state.json", url), context_for("task"))
    assert done == {"batchItemFailures": []}
    execution = harness.engine.store.current("order-42")
    assert execution is not None and set(execution.states) == {"Ship-1"}
    modify = sample("dynamodb_stream_modify.json", url)
    assert stream_ddb.lambda_handler(modify, context_for("stream")) == {"batchItemFailures": []}
    # The timer sample points at a state that does not wait for a timer: it changes nothing.
    before = harness.engine.store.current("order-42")
    timer = sample("sqs_timer_from_schedule.json", url)
    assert task_sqs.lambda_handler(timer, context_for("task")) == {"batchItemFailures": []}
    assert harness.engine.store.current("order-42") == before
