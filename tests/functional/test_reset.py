"""Reset: a new run that begins again at a state execution of the current run."""

from __future__ import annotations

import json
from typing import Any

from tests.functional.harness import FakeWorker, Harness, complete


def value(data: Any) -> dict[str, str]:
    return {"encoding": "json", "data": json.dumps(data)}


def get(harness: Harness, run_id: str | None = None) -> dict[str, Any]:
    body = {"workflowId": "wf", **({"workflowRunId": run_id} if run_id else {})}
    return harness.api("/api/v1/workflow/get", body)[1]


def reset(harness: Harness, **request: Any) -> tuple[int, Any]:
    return harness.api("/api/v1/workflow/reset", {"workflowId": "wf", **request})


def waiting_for_signal(_: dict[str, Any]) -> tuple[int, Any]:
    command = {"commandId": "go", "signalChannelName": "go"}
    return 200, {"commandRequest": {"signalCommands": [command]}}


def test_reset_to_a_state_id_runs_it_again_with_its_input_in_a_new_run(
    harness: Harness, worker: FakeWorker
) -> None:
    inputs: list[Any] = []

    def first(body: dict[str, Any]) -> tuple[int, Any]:
        inputs.append(body.get("stateInput"))
        return 200, {"stateDecision": {"nextStates": [{"stateId": "B"}]}}

    worker.on("execute", "A", first)
    worker.on("wait_until", "B", waiting_for_signal)
    worker.on("execute", "B", complete("done"))
    old_run = harness.start("wf", "A", stateInput=value("order-7"))
    harness.run()
    harness.api(
        "/api/v1/workflow/signal", {"workflowId": "wf", "signalChannelName": "early"}
    )  # a signal nobody waits for yet: it comes along to the new run
    status, body = reset(harness, resetType="STATE_ID", stateId="A", reason="fix a bug")
    assert status == 200, body
    new_run = body["workflowRunId"]
    assert new_run != old_run
    assert get(harness, old_run)["workflowStatus"] == "TERMINATED"
    harness.run()
    assert inputs == [value("order-7"), value("order-7")]
    new = harness.engine.store.current("wf")
    assert new is not None and new.run_id == new_run
    assert set(new.states) == {"B-1"} and list(new.signals) == ["early"]


def test_reset_to_the_beginning_of_a_completed_process_completes_again(
    harness: Harness, worker: FakeWorker
) -> None:
    worker.on("execute", "A", complete("ok"))
    harness.start("wf", "A")
    harness.run()
    status, body = reset(harness, resetType="BEGINNING", skipSignalReapply=True)
    assert status == 200, body
    harness.run()
    assert get(harness) == {"workflowRunId": body["workflowRunId"], "workflowStatus": "COMPLETED"}
    assert worker.calls[("execute", "A")] == 2


def test_unknown_reset_points_and_types_are_clear_errors_that_change_nothing(
    harness: Harness, worker: FakeWorker
) -> None:
    worker.on("wait_until", "A", waiting_for_signal)
    harness.start("wf", "A", stateOptions={})
    harness.run()
    before = harness.engine.store.current("wf")
    for request, detail in [
        ({"resetType": "STATE_EXECUTION_ID", "stateExecutionId": "Z-1"}, "never started"),
        ({"resetType": "STATE_ID"}, "needs stateId"),
        ({"resetType": "HISTORY_EVENT_ID", "historyEventId": 3}, "not supported"),
        ({"resetType": "BEGINNING", "workflowRunId": "old"}, "only the current run"),
    ]:
        status, body = reset(harness, **request)
        assert status == 400 and detail in body["detail"], (request, body)
    assert harness.engine.store.current("wf") == before
