"""Failed worker calls: retried with backoff, then the state's failure policy."""

from __future__ import annotations

import time
from typing import Any

from tests.functional.harness import FakeWorker, Harness, complete, decide, incompressible


def flaky(failures: int, then: Any) -> Any:
    seen = []

    def answer(body: dict[str, Any]) -> tuple[int, Any]:
        seen.append(body["context"]["attempt"])
        if len(seen) <= failures:
            return 500, {"detail": f"failure {len(seen)}"}
        return then(body)

    answer.attempts = seen  # type: ignore[attr-defined]
    return answer


def options(**overrides: Any) -> dict[str, Any]:
    return {"stateOptions": {"skipWaitUntil": True, **overrides}}


def get(harness: Harness) -> dict[str, Any]:
    return harness.api("/api/v1/workflow/get", {"workflowId": "wf", "needsResults": True})[1]


def test_worker_errors_are_retried_with_the_attempt_number(
    harness: Harness, worker: FakeWorker
) -> None:
    answer = flaky(2, complete("ok"))
    worker.on("execute", "A", answer)
    retry = {"initialIntervalSeconds": 1, "backoffCoefficient": 1, "maximumAttempts": 5}
    run_id = harness.start("wf", **options(executeApiRetryPolicy=retry))
    harness.run()
    assert get(harness)["workflowStatus"] == "COMPLETED"
    assert answer.attempts == [1, 2, 3]
    kinds = [e.kind for e in harness.history("wf", run_id)]
    assert kinds.count("ATTEMPT_FAILED") == 2 and kinds.count("EXECUTE_COMPLETED") == 1


def test_malformed_answer_exhausts_attempts_and_fails_the_process(
    harness: Harness, worker: FakeWorker
) -> None:
    worker.on("execute", "A", lambda _: (200, "{not json"))
    harness.start("wf", **options(executeApiRetryPolicy={"maximumAttempts": 1}))
    harness.run()
    body = get(harness)
    assert body["workflowStatus"] == "FAILED" and body["errorType"] == "STATE_API_FAIL_ERROR_TYPE"
    assert "malformed JSON" in body["errorMessage"]


def test_retry_that_would_land_after_the_process_timeout_fails_the_state_now(
    harness: Harness, worker: FakeWorker
) -> None:
    answer = flaky(100, complete("never"))
    worker.on("execute", "A", answer)
    harness.start("wf", workflowTimeoutSeconds=5, **options())
    harness.run()
    body = get(harness)
    # Retries at +1 s and +2 s fit in the 5 s timeout; the next (+4 s) would not.
    assert answer.attempts == [1, 2, 3]
    assert body["workflowStatus"] == "FAILED" and "failure 3" in body["errorMessage"]


def test_answer_outside_the_protocol_is_a_failed_attempt(
    harness: Harness, worker: FakeWorker
) -> None:
    worker.on(
        "execute", "A", lambda _: (200, {"stateDecision": {"nextStates": [{"stateInput": 3}]}})
    )
    harness.start("wf", **options(executeApiRetryPolicy={"maximumAttempts": 1}))
    harness.run()
    assert "does not match the iWF protocol" in get(harness)["errorMessage"]


def test_slow_worker_times_out_and_goes_to_the_recovery_state(
    harness: Harness, worker: FakeWorker
) -> None:
    def slow(_: dict[str, Any]) -> tuple[int, Any]:
        time.sleep(1.5)
        return decide(("B", None))(_)

    worker.on("execute", "A", slow)
    worker.on("execute", "Recover", complete("recovered"))
    harness.start(
        "wf",
        stateInput={"encoding": "json", "data": '"same input"'},
        **options(
            executeApiTimeoutSeconds=1,
            executeApiRetryPolicy={"maximumAttempts": 1},
            executeApiFailurePolicy="PROCEED_TO_CONFIGURED_STATE",
            executeApiFailureProceedStateId="Recover",
            executeApiFailureProceedStateOptions={"skipWaitUntil": True},
        ),
    )
    harness.run()
    assert get(harness)["results"][0]["completedStateOutput"]["data"] == '"recovered"'
    recover = [r for r in worker.requests if r["workflowStateId"] == "Recover"]
    assert recover[0]["stateInput"]["data"] == '"same input"'


def test_answer_that_would_overflow_the_item_fails_the_attempt_and_writes_nothing(
    harness: Harness, worker: FakeWorker
) -> None:
    huge = {"key": "blob", "value": {"encoding": "json", "data": incompressible(600_000)}}

    def answer(_: dict[str, Any]) -> tuple[int, Any]:
        return 200, {**decide(("B", None))(_)[1], "upsertDataObjects": [huge]}

    worker.on("execute", "A", answer)
    harness.start("wf", **options(executeApiRetryPolicy={"maximumAttempts": 1}))
    harness.run()
    body = get(harness)
    assert (
        body["workflowStatus"] == "FAILED" and "over the 380000-byte limit" in body["errorMessage"]
    )
    _, objects = harness.api("/api/v1/workflow/dataobjects/get", {"workflowId": "wf"})
    assert objects == {"objects": []}
