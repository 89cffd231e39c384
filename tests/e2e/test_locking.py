"""Locked read-modify-write through RPCs, against the local runtime over real HTTP."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tests.e2e.engine_http import post
from tests.functional.harness import FakeWorker

COUNTER_LOCK = {
    "persistenceLoadingType": "LOAD_PARTIAL_WITH_EXCLUSIVE_LOCK",
    "partialLoadingKeys": ["count"],
    "lockingKeys": ["count"],
}


def counter(data_attributes: list[dict[str, Any]]) -> int:
    values = {kv["key"]: kv["value"]["data"] for kv in data_attributes}
    return int(json.loads(values.get("count", "0")))


def test_50_concurrent_locked_increments_end_at_exactly_50(worker: FakeWorker) -> None:
    calls = 0
    lock = threading.Lock()

    def increment(body: dict[str, Any]) -> tuple[int, Any]:
        nonlocal calls
        with lock:
            calls += 1
        value = counter(body.get("dataAttributes", []))
        upsert = {"key": "count", "value": {"encoding": "json", "data": json.dumps(value + 1)}}
        return 200, {"upsertDataAttributes": [upsert]}

    worker.on("rpc", "increment", increment)
    wf = "locked-counter"
    status, body = post(
        "start",
        {
            "workflowId": wf,
            "iwfWorkflowType": "Counter",
            "workflowTimeoutSeconds": 0,
            "iwfWorkerUrl": worker.url,  # type: ignore[attr-defined]
            "workflowStartOptions": {"idReusePolicy": "ALLOW_TERMINATE_IF_RUNNING"},
        },
    )
    assert status == 200, body
    rpc = {
        "workflowId": wf,
        "rpcName": "increment",
        "timeoutSeconds": 60,
        "dataAttributesLoadingPolicy": COUNTER_LOCK,
    }
    with ThreadPoolExecutor(max_workers=50) as pool:
        statuses = list(pool.map(lambda _: post("rpc", rpc)[0], range(50)))
    assert statuses == [200] * 50
    status, body = post("dataobjects/get", {"workflowId": wf, "keys": ["count"]})
    assert counter(body["objects"]) == 50
    # Each increment that lost a race was asked again: more calls than commits.
    assert calls >= 50
