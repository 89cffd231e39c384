"""Large data attribute values live in items of their own, written once per content."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.functional.harness import FakeWorker, Harness, complete, decide, incompressible
from xdb.core.errors import VersionConflict
from xdb.core.snapshot import next_version
from xdb.model.wire import EncodedObject
from xdb.store.capacity import item_size
from xdb.store.dynamodb_store import OFFLOAD_BYTES, ExecutionStore
from xdb.store.table import CURRENT, process_key, value_key

PROFILE = json.dumps(incompressible(2000))


def upserting(objects: dict[str, str], following: str | None) -> Any:
    """An execute answer that writes ``objects`` and moves on (or completes)."""

    def answer(body: dict[str, Any]) -> tuple[int, Any]:
        status, decision = (decide((following, None)) if following else complete("done"))(body)
        upserts = [{"key": k, "value": {"encoding": "json", "data": v}} for k, v in objects.items()]
        return status, {**decision, "upsertDataObjects": upserts}

    return answer


def initial(key: str, data: str) -> dict[str, Any]:
    return {"dataAttributes": [{"key": key, "value": {"encoding": "json", "data": data}}]}


def items(harness: Harness, prefix: str) -> list[dict[str, Any]]:
    answer = harness.ddb.query(
        TableName=harness.local.settings.table_name,
        KeyConditionExpression="pk = :pk AND begins_with(sk, :p)",
        ExpressionAttributeValues={":pk": {"S": process_key("wf")}, ":p": {"S": prefix}},
    )
    return list(answer["Items"])


def test_a_large_value_is_written_once_and_every_state_still_sees_it(
    harness: Harness, worker: FakeWorker
) -> None:
    worker.on("execute", "A", upserting({"profile": PROFILE, "step": "1"}, "B"))
    worker.on("execute", "B", upserting({"step": "2"}, "C"))
    worker.on("execute", "C", upserting({"step": "3"}, None))
    harness.start("wf")
    harness.run(stream_copies=2, task_copies=2)

    assert len(items(harness, value_key(""))) == 1  # B and C did not write it again
    (snapshot,) = items(harness, CURRENT)
    assert item_size(snapshot) < 1024  # one write unit, with 2 KB of attributes
    later = [r for r in worker.requests if r["workflowStateId"] in ("B", "C")]
    assert all(
        {"key": "profile", "value": {"encoding": "json", "data": PROFILE}} in r["DataObjects"]
        for r in later
    )
    status, body = harness.api("/api/v1/workflow/dataobjects/get", {"workflowId": "wf"})
    assert status == 200
    assert {o["key"]: o["value"]["data"] for o in body["objects"]} == {
        "profile": PROFILE,
        "step": "3",
    }


def test_another_container_reads_the_value_from_its_item(harness: Harness) -> None:
    harness.start("wf", workflowStartOptions=initial("profile", PROFILE))
    fresh = ExecutionStore(harness.ddb, harness.local.settings.table_name)  # an empty cache
    execution = fresh.current("wf")
    assert execution is not None
    assert execution.data_attributes["profile"].data == PROFILE
    assert execution.stored_values.keys() == {"profile"}


def test_a_value_written_for_a_commit_that_lost_never_shows(harness: Harness) -> None:
    harness.start("wf")
    store = harness.engine.store
    read = store.current("wf")
    assert read is not None
    winner, loser = next_version(read), next_version(read)
    winner.data_attributes["profile"] = EncodedObject(encoding="json", data=PROFILE)
    loser.data_attributes["profile"] = EncodedObject(encoding="json", data=json.dumps("x" * 999))
    store.save(winner)
    with pytest.raises(VersionConflict):
        store.save(loser)  # its value item is written, its snapshot is not
    assert len(items(harness, value_key(""))) == 2
    fresh = ExecutionStore(harness.ddb, harness.local.settings.table_name)
    current = fresh.current("wf")
    assert current is not None and current.data_attributes["profile"].data == PROFILE


def test_small_values_stay_in_the_snapshot(harness: Harness) -> None:
    small = json.dumps("y" * (OFFLOAD_BYTES - 10))
    harness.start("wf", workflowStartOptions=initial("note", small))
    assert items(harness, value_key("")) == []
    execution = harness.engine.store.current("wf")
    assert execution is not None and execution.data_attributes["note"].data == small


def test_two_attributes_with_one_large_value_store_it_once(harness: Harness) -> None:
    options = initial("a", PROFILE)
    options["dataAttributes"] += initial("b", PROFILE)["dataAttributes"]
    harness.start("wf", workflowStartOptions=options)
    assert len(items(harness, value_key(""))) == 1
    execution = ExecutionStore(harness.ddb, harness.local.settings.table_name).current("wf")
    assert execution is not None
    assert execution.data_attributes["a"] == execution.data_attributes["b"]


def test_a_value_that_differs_only_outside_its_data_is_written_again(harness: Harness) -> None:
    harness.start("wf")
    store = harness.engine.store
    read = store.current("wf")
    assert read is not None
    first = next_version(read)
    first.data_attributes["x"] = EncodedObject(encoding="json", data=PROFILE, ext_path="v1")
    store.save(first)
    second = next_version(first)
    second.data_attributes["x"] = EncodedObject(encoding="json", data=PROFILE, ext_path="v2")
    store.save(second)
    fresh = ExecutionStore(harness.ddb, harness.local.settings.table_name).current("wf")
    assert fresh is not None and fresh.data_attributes["x"].ext_path == "v2"
