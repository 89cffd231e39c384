"""20 parallel starts of one process id, for each id reuse policy, over real HTTP."""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.e2e.engine_http import post
from tests.functional.harness import FakeWorker, complete

STARTS = 20
_ids = itertools.count()


def start_body(worker: FakeWorker, wf: str, **options: Any) -> dict[str, Any]:
    return {
        "workflowId": wf,
        "iwfWorkflowType": "Reuse",
        "workflowTimeoutSeconds": 0,
        "iwfWorkerUrl": worker.url,  # type: ignore[attr-defined]
        "workflowStartOptions": options,
    }


def parallel_starts(body: dict[str, Any]) -> list[tuple[int, Any]]:
    with ThreadPoolExecutor(max_workers=STARTS) as pool:
        return list(pool.map(lambda _: post("start", body), range(STARTS)))


def close_previous_run(worker: FakeWorker, wf: str, how: str) -> str:
    """A first run of ``wf`` that ends COMPLETED or CANCELED; returns its run id."""
    if how == "COMPLETED":
        worker.on("execute", "Done", complete("ok"))
        body = start_body(worker, wf)
        body.update(startStateId="Done", stateOptions={"skipWaitUntil": True})
        status, started = post("start", body)
        assert status == 200, started
        status, got = post("getWithWait", {"workflowId": wf})
        assert got["workflowStatus"] == "COMPLETED", got
    else:
        status, started = post("start", start_body(worker, wf))
        post("stop", {"workflowId": wf, "stopType": "CANCEL"})
    return str(started["workflowRunId"])


@pytest.mark.parametrize(
    ("policy", "previous", "new_runs"),
    [
        ("ALLOW_IF_NO_RUNNING", None, 1),
        ("ALLOW_IF_NO_RUNNING", "COMPLETED", 1),
        ("ALLOW_IF_PREVIOUS_EXITS_ABNORMALLY", "CANCELED", 1),
        ("ALLOW_IF_PREVIOUS_EXITS_ABNORMALLY", "COMPLETED", 0),
        ("DISALLOW_REUSE", None, 1),
        ("DISALLOW_REUSE", "COMPLETED", 0),
    ],
)
def test_parallel_starts_make_one_run_at_most(
    worker: FakeWorker, policy: str, previous: str | None, new_runs: int
) -> None:
    wf = f"reuse-{policy}-{previous}-{next(_ids)}"
    if previous:
        close_previous_run(worker, wf, previous)
    answers = parallel_starts(start_body(worker, wf, idReusePolicy=policy))
    started = {body["workflowRunId"] for status, body in answers if status == 200}
    refused = [body for status, body in answers if status != 200]
    assert len(started) == new_runs
    assert len(refused) == STARTS - new_runs
    assert all(b["subStatus"] == "WORKFLOW_ALREADY_STARTED_SUB_STATUS" for b in refused)


def test_parallel_terminate_if_running_leaves_one_running_run(worker: FakeWorker) -> None:
    wf = f"reuse-terminate-{next(_ids)}"
    post("start", start_body(worker, wf))
    answers = parallel_starts(start_body(worker, wf, idReusePolicy="ALLOW_TERMINATE_IF_RUNNING"))
    runs = [body["workflowRunId"] for status, body in answers if status == 200]
    assert len(runs) == STARTS and len(set(runs)) == STARTS
    statuses = [post("get", {"workflowId": wf, "workflowRunId": run})[1] for run in runs]
    running = [s for s in statuses if s["workflowStatus"] == "RUNNING"]
    assert len(running) == 1
    assert sum(s["workflowStatus"] == "TERMINATED" for s in statuses) == STARTS - 1
    assert post("get", {"workflowId": wf})[1]["workflowRunId"] == running[0]["workflowRunId"]


def test_parallel_repeats_of_one_request_id_share_one_run(worker: FakeWorker) -> None:
    wf = f"reuse-request-id-{next(_ids)}"
    body = start_body(
        worker,
        wf,
        workflowAlreadyStartedOptions={"ignoreAlreadyStartedError": True, "requestId": "r-1"},
    )
    answers = parallel_starts(body)
    assert {status for status, _ in answers} == {200}
    assert len({b["workflowRunId"] for _, b in answers}) == 1
