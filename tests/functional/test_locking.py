"""Locked keys: a state API's answer commits only if its locked keys did not change."""

from __future__ import annotations

import json
from typing import Any

from tests.functional.harness import FakeWorker, Harness

LOCK = {
    "persistenceLoadingType": "LOAD_ALL_WITH_PARTIAL_LOCK",
    "lockingKeys": ["count"],
}


def value(data: Any) -> dict[str, str]:
    return {"encoding": "json", "data": json.dumps(data)}


def count_of(body: dict[str, Any]) -> int:
    values = {kv["key"]: kv["value"]["data"] for kv in body.get("DataObjects", [])}
    return int(json.loads(values.get("count", "0")))


def stored_count(harness: Harness) -> int:
    _, body = harness.api(
        "/api/v1/workflow/dataobjects/get", {"workflowId": "wf", "keys": ["count"]}
    )
    return count_of({"DataObjects": body["objects"]})


def test_a_locked_key_changed_during_execute_makes_it_run_again_on_the_new_value(
    harness: Harness, worker: FakeWorker
) -> None:
    seen: list[int] = []

    def execute(body: dict[str, Any]) -> tuple[int, Any]:
        seen.append(count_of(body))
        if len(seen) == 1:
            # Another writer (a client) sets the locked key while this call runs.
            harness.api(
                "/api/v1/workflow/dataobjects/set",
                {"workflowId": "wf", "objects": [{"key": "count", "value": value(10)}]},
            )
        upsert = [{"key": "count", "value": value(count_of(body) + 1)}]
        return 200, {
            "upsertDataObjects": upsert,
            "stateDecision": {"nextStates": [{"stateId": "_SYS_GRACEFUL_COMPLETING_WORKFLOW"}]},
        }

    worker.on("execute", "A", execute)
    harness.start(
        "wf",
        stateOptions={"skipWaitUntil": True, "executeApiDataAttributesLoadingPolicy": LOCK},
    )
    harness.run()
    # The first answer (0 + 1) was not committed over the client's 10; the second was.
    assert seen == [0, 10]
    assert stored_count(harness) == 11


def test_without_a_lock_the_same_race_loses_the_client_write(
    harness: Harness, worker: FakeWorker
) -> None:
    seen: list[int] = []

    def execute(body: dict[str, Any]) -> tuple[int, Any]:
        seen.append(count_of(body))
        harness.api(
            "/api/v1/workflow/dataobjects/set",
            {"workflowId": "wf", "objects": [{"key": "count", "value": value(10)}]},
        )
        return 200, {
            "upsertDataObjects": [{"key": "count", "value": value(count_of(body) + 1)}],
            "stateDecision": {"nextStates": [{"stateId": "_SYS_GRACEFUL_COMPLETING_WORKFLOW"}]},
        }

    worker.on("execute", "A", execute)
    harness.start("wf")
    harness.run()
    assert seen == [0]
    assert stored_count(harness) == 1
