"""History: events ride in the snapshot while they fit, then become pages; none lost or doubled."""

from __future__ import annotations

import base64
import itertools
from typing import Any

import pytest

from tests.functional.harness import FakeWorker, Harness, complete, decide, incompressible
from xdb.core.errors import HistoryBehind
from xdb.core.snapshot import next_version
from xdb.model.execution import Event, EventKind
from xdb.store import dynamodb_store
from xdb.store.dynamodb_store import decode
from xdb.store.table import CURRENT, history_prefix, process_key

STATES = [f"S{i}" for i in range(1, 13)]


def writing(size: int, key: str, following: str) -> Any:
    """An execute answer that moves on and writes ``size`` bytes of attribute ``key``."""

    def answer(body: dict[str, Any]) -> tuple[int, Any]:
        status, decision = decide((following, None))(body)
        value = {"encoding": "json", "data": f'"{incompressible(size)}"'}
        return status, {**decision, "upsertDataObjects": [{"key": key, "value": value}]}

    return answer


def pages(harness: Harness, workflow_id: str, run_id: str) -> int:
    answer = harness.ddb.query(
        TableName=harness.local.settings.table_name,
        KeyConditionExpression="pk = :pk AND begins_with(sk, :h)",
        ExpressionAttributeValues={
            ":pk": {"S": process_key(workflow_id)},
            ":h": {"S": history_prefix(run_id)},
        },
    )
    return len(answer["Items"])


def run_chain(harness: Harness, worker: FakeWorker, size: int) -> str:
    for n, (current, following) in enumerate(itertools.pairwise(STATES)):
        worker.on("execute", current, writing(size, f"note{n}", following))
    worker.on("execute", STATES[-1], complete("done"))
    run_id = harness.start("wf", STATES[0])
    harness.run(stream_copies=2, task_copies=2)  # every record and task twice
    return run_id


def assert_whole_history(harness: Harness, run_id: str) -> None:
    kinds = [e.kind for e in harness.history("wf", run_id)]
    assert kinds[0] == "PROCESS_STARTED" and kinds[-1] == "PROCESS_CLOSED"
    assert kinds.count("STATE_STARTED") == len(STATES)
    assert harness.decisions("wf", run_id) == {f"{s}-1": 1 for s in STATES}


def test_a_small_process_carries_about_ten_versions_of_history_in_its_snapshot(
    harness: Harness, worker: FakeWorker
) -> None:
    run_id = run_chain(harness, worker, size=8)
    assert_whole_history(harness, run_id)
    assert pages(harness, "wf", run_id) <= 1  # for 12 states, instead of a write each


def test_a_growing_process_pages_its_history_and_loses_or_doubles_nothing(
    harness: Harness, worker: FakeWorker
) -> None:
    # Each state adds 400 bytes that compression cannot shrink: the snapshot needs one more
    # write unit every few states, and each time leaves its carried events to a page.
    run_id = run_chain(harness, worker, size=400)
    assert_whole_history(harness, run_id)
    assert 2 <= pages(harness, "wf", run_id) < len(STATES)
    # The soak's one-pass read of every history agrees.
    whole = harness.history("wf", run_id)
    assert harness.engine.store.all_history() == {("wf", run_id): whole}


def test_a_snapshot_reads_from_a_lambda_event_and_from_boto3_alike(harness: Harness) -> None:
    harness.start("wf")
    key = {"pk": {"S": process_key("wf")}, "sk": {"S": CURRENT}}
    item = harness.ddb.get_item(TableName=harness.local.settings.table_name, Key=key)["Item"]
    assert isinstance(item["doc"]["B"], bytes)  # compressed JSON
    # A Lambda event (and the local stream) carries binary values in base64.
    as_event = {**item, "doc": {"B": base64.b64encode(item["doc"]["B"]).decode()}}
    assert decode(as_event) == decode(item) == harness.engine.store.current("wf")


def test_history_waits_for_a_page_still_owed_and_never_doubles_a_version(
    harness: Harness, monkeypatch: Any
) -> None:
    harness.start("wf")
    store = harness.engine.store
    execution = store.current("wf")
    assert execution is not None
    while execution.owed_page is None:  # versions whose events fill the snapshot's unit
        execution = next_version(execution)
        execution.events = [Event(at=1.0, kind=EventKind.RECORDED, detail=incompressible(200))]
        store.save(execution)
    monkeypatch.setattr(dynamodb_store, "HISTORY_TRIES", 2)
    with pytest.raises(HistoryBehind):  # the stream function has not written the page yet
        store.history(execution)
    harness.deliver_stream(harness.stream_records())
    kinds = [e.kind for e in store.history(execution)]
    assert kinds[:2] == ["PROCESS_STARTED", "STATE_STARTED"]
    assert kinds.count("RECORDED") == execution.version - 1  # each version once
