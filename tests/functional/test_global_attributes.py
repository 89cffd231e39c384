"""XDB global attributes: a process's columns in a row of the user's own table."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.functional.harness import FakeWorker, Harness, complete
from xdb.core.errors import VersionConflict
from xdb.core.snapshot import next_version
from xdb.model.execution import GlobalWrite
from xdb.model.wire import EncodedObject


def value(data: Any) -> dict[str, str]:
    return {"encoding": "json", "data": json.dumps(data)}


def binding(**overrides: Any) -> dict[str, Any]:
    return {
        "tableName": "users",
        "primaryKey": "user_id",
        "primaryKeyValue": "u1",
        "attributes": ["status", "form"],
        "initialUpsert": [
            {"key": "form", "value": value({"email": "a@example.com", "age": 30})},
            {"key": "status", "value": value("waiting")},
        ],
        **overrides,
    }


def start(harness: Harness, **overrides: Any) -> tuple[int, Any]:
    return harness.api(
        "/api/v1/workflow/start",
        {
            "workflowId": "signup-u1",
            "iwfWorkflowType": "Signup",
            "workflowTimeoutSeconds": 0,
            "iwfWorkerUrl": harness.worker_url,
            "startStateId": "Verify",
            "stateOptions": {"skipWaitUntil": True},
            "workflowStartOptions": {"globalAttributes": binding(**overrides)},
        },
    )


def row(harness: Harness) -> dict[str, Any] | None:
    item = harness.ddb.get_item(TableName="users", Key={"user_id": {"S": "u1"}}).get("Item")
    return dict(item) if item else None


def step(harness: Harness) -> None:
    """Deliver what the stream and the queue hold now, once."""
    harness.deliver_stream(harness.stream_records())
    messages = harness.receive()
    harness.deliver_tasks(messages)
    harness.ack(messages)


def test_start_writes_the_row_and_a_state_write_commits_with_its_move(
    harness: Harness, worker: FakeWorker
) -> None:
    seen: list[Any] = []

    def verify(body: dict[str, Any]) -> tuple[int, Any]:
        seen.append(body["globalAttributes"])
        return 200, {
            "upsertGlobalAttributes": [{"key": "status", "value": value("verified")}],
            "stateDecision": {
                "nextStates": [{"stateId": "Welcome", "stateOptions": {"skipWaitUntil": True}}]
            },
        }

    worker.on("execute", "Verify", verify)
    worker.on("execute", "Welcome", complete("done"))
    assert start(harness)[0] == 200
    # The row reads naturally: native DynamoDB values, not JSON strings.
    assert row(harness) == {
        "user_id": {"S": "u1"},
        "status": {"S": "waiting"},
        "form": {"M": {"email": {"S": "a@example.com"}, "age": {"N": "30"}}},
    }
    # One step: deliver Verify's task once.
    step(harness)
    execution = harness.engine.store.current("signup-u1")
    assert execution is not None and set(execution.states) == {"Welcome-1"}
    assert row(harness)["status"] == {"S": "verified"}  # type: ignore[index]
    # The worker saw the row's columns, JSON-encoded, in the order of the binding.
    assert seen == [
        [
            {"key": "status", "value": value("waiting")},
            {"key": "form", "value": value({"email": "a@example.com", "age": 30})},
        ]
    ]
    harness.run()
    assert harness.api("/api/v1/workflow/get", {"workflowId": "signup-u1"})[1][
        "workflowStatus"
    ] == ("COMPLETED")


def test_a_failed_commit_writes_neither_the_snapshot_nor_the_row(
    harness: Harness, worker: FakeWorker
) -> None:
    worker.on("execute", "Verify", complete("x"))
    assert start(harness)[0] == 200
    current = harness.engine.store.current("signup-u1")
    assert current is not None
    winner = next_version(current)
    harness.engine.store.save(winner)
    # A writer that read the same version as the winner tries to commit a row change.
    loser = next_version(current)
    loser.global_write = GlobalWrite(values={"status": EncodedObject(encoding="json", data='"x"')})
    with pytest.raises(VersionConflict):
        harness.engine.store.save(loser)
    assert row(harness)["status"] == {"S": "waiting"}  # type: ignore[index]
    assert harness.engine.store.current("signup-u1") == winner


@pytest.mark.parametrize(
    ("mode", "status", "row_status"),
    [("ERROR", 400, "taken"), ("IGNORE", 200, "taken"), ("OVERRIDE", 200, "waiting")],
)
def test_conflict_mode_decides_what_a_start_does_to_an_existing_row(
    harness: Harness, worker: FakeWorker, mode: str, status: int, row_status: str
) -> None:
    harness.ddb.put_item(TableName="users", Item={"user_id": {"S": "u1"}, "status": {"S": "taken"}})
    answer = start(harness, conflictMode=mode)
    assert answer[0] == status, answer
    assert row(harness)["status"] == {"S": row_status}  # type: ignore[index]
    started = harness.engine.store.current("signup-u1")
    assert (started is not None) == (status == 200)
    if status == 400:
        assert "already has the row" in answer[1]["detail"]


def test_a_table_outside_the_allow_list_is_refused(harness: Harness) -> None:
    status, body = start(harness, tableName="payroll")
    assert status == 400 and "not one this deployment may write" in body["detail"]
    assert harness.engine.store.current("signup-u1") is None


def test_a_worker_writing_an_unbound_column_fails_its_attempt_and_writes_nothing(
    harness: Harness, worker: FakeWorker
) -> None:
    worker.on(
        "execute",
        "Verify",
        lambda _: (
            200,
            {
                "upsertGlobalAttributes": [{"key": "salary", "value": value(1)}],
                "stateDecision": {"nextStates": [{"stateId": "_SYS_DEAD_END"}]},
            },
        ),
    )
    assert start(harness, initialUpsert=None)[0] == 200
    step(harness)
    execution = harness.engine.store.current("signup-u1")
    assert execution is not None
    assert execution.states["Verify-1"].last_error is not None
    assert "salary not among the bound attributes" in execution.states["Verify-1"].last_error
    assert row(harness) is None
