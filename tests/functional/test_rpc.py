"""RPC: the worker's answer is committed in one write before its output is returned."""

from __future__ import annotations

import json
from typing import Any

from tests.functional.harness import FakeWorker, Harness, complete


def value(data: Any) -> dict[str, str]:
    return {"encoding": "json", "data": json.dumps(data)}


def rpc(harness: Harness, name: str, data: Any = None) -> tuple[int, Any]:
    return harness.api(
        "/api/v1/workflow/rpc", {"workflowId": "wf", "rpcName": name, "input": value(data)}
    )


def test_rpc_commits_upserts_publishes_and_new_states_then_answers(
    harness: Harness, worker: FakeWorker
) -> None:
    # given: a process waiting for a message, and an RPC that sets an attribute and publishes it
    worker.on(
        "wait_until",
        "A",
        lambda _: (
            200,
            {
                "commandRequest": {
                    "interStateChannelCommands": [{"commandId": "v", "channelName": "verify"}]
                }
            },
        ),
    )
    worker.on("execute", "A", complete("verified"))
    worker.on("execute", "Audit", complete("audited"))

    def verify(body: dict[str, Any]) -> tuple[int, Any]:
        assert body["internalChannelInfos"] == {}
        return 200, {
            "output": value("done"),
            "upsertDataAttributes": [{"key": "status", "value": value("verified")}],
            "publishToInterStateChannel": [{"channelName": "verify"}],
            "stateDecision": {
                "nextStates": [{"stateId": "Audit", "stateOptions": {"skipWaitUntil": True}}]
            },
        }

    worker.on("rpc", "verify", verify)
    run_id = harness.start("wf", "A", stateOptions={})
    harness.run()
    # when
    status, body = rpc(harness, "verify", "email")
    # then: answered after one commit that holds all three changes
    assert (status, body) == (200, {"output": value("done")})
    execution = harness.engine.store.current("wf")
    assert execution is not None and execution.data_attributes["status"].data == '"verified"'
    assert (
        set(execution.states) == {"A-1", "Audit-1"} and execution.states["A-1"].phase == "EXECUTE"
    )
    harness.run()
    assert [e.kind for e in harness.history("wf", run_id)].count("RPC_COMMITTED") == 1
    assert (
        harness.api("/api/v1/workflow/get", {"workflowId": "wf"})[1]["workflowStatus"]
        == "COMPLETED"
    )


def test_read_only_rpc_writes_nothing(harness: Harness, worker: FakeWorker) -> None:
    worker.on("rpc", "peek", lambda _: (200, {"output": value("just looking")}))
    harness.start("wf", "Idle")
    before = harness.engine.store.current("wf")
    assert rpc(harness, "peek")[0] == 200
    assert harness.engine.store.current("wf") == before


def test_worker_error_is_420_with_its_detail_and_changes_nothing(
    harness: Harness, worker: FakeWorker
) -> None:
    worker.on("rpc", "boom", lambda _: (500, "WorkerExecutionError: no such order"))
    worker.on("rpc", "sdk", lambda _: (500, {"detail": "no such user", "errorType": "KeyError"}))
    harness.start("wf", "Idle")
    before = harness.engine.store.current("wf")
    status, body = rpc(harness, "boom")
    assert status == 420 and body["subStatus"] == "WORKER_API_ERROR"
    assert "no such order" in body["detail"]
    assert body["originalWorkerErrorDetail"] == "WorkerExecutionError: no such order"
    assert body["originalWorkerErrorStatus"] == 500
    status, body = rpc(harness, "sdk")
    assert (body["originalWorkerErrorDetail"], body["originalWorkerErrorType"]) == (
        "no such user",
        "KeyError",
    )
    assert harness.engine.store.current("wf") == before


def test_a_closed_process_answers_read_only_rpcs_and_refuses_writes(
    harness: Harness, worker: FakeWorker
) -> None:
    worker.on("rpc", "peek", lambda _: (200, {"output": value("seen")}))
    worker.on(
        "rpc",
        "verify",
        lambda _: (200, {"upsertDataAttributes": [{"key": "s", "value": value("v")}]}),
    )
    harness.start("wf", "Idle")
    harness.api("/api/v1/workflow/stop", {"workflowId": "wf"})
    before = harness.engine.store.current("wf")
    assert rpc(harness, "peek") == (200, {"output": value("seen")})
    status, body = rpc(harness, "verify")
    assert status == 400 and "takes no more changes" in body["detail"]
    assert harness.engine.store.current("wf") == before


def test_an_rpc_answer_is_not_applied_to_a_run_started_while_it_ran(
    harness: Harness, worker: FakeWorker
) -> None:
    def verify(_: dict[str, Any]) -> tuple[int, Any]:
        # Meanwhile a client starts the process over (a reset makes a new run).
        harness.api("/api/v1/workflow/reset", {"workflowId": "wf", "resetType": "BEGINNING"})
        return 200, {"upsertDataAttributes": [{"key": "status", "value": value("verified")}]}

    worker.on("rpc", "verify", verify)
    harness.start("wf", "Idle")
    status, body = rpc(harness, "verify")
    assert status == 400 and "started another run" in body["detail"]
    current = harness.engine.store.current("wf")
    assert current is not None and "status" not in current.data_attributes
