"""Search: runs of one process type by status and search attribute, from one index."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from tests.functional.harness import FakeWorker, Harness


def start(harness: Harness, wf: str, workflow_type: str, **attributes: Any) -> None:
    kinds = {str: "KEYWORD", int: "INT", bool: "BOOL", list: "KEYWORD_ARRAY"}
    fields = {
        str: "stringValue",
        int: "integerValue",
        bool: "boolValue",
        list: "stringArrayValue",
    }
    search = [
        {"key": k, "valueType": kinds[type(v)], fields[type(v)]: v} for k, v in attributes.items()
    ]
    status, body = harness.api(
        "/api/v1/workflow/start",
        {
            "workflowId": wf,
            "iwfWorkflowType": workflow_type,
            "workflowTimeoutSeconds": 0,
            "iwfWorkerUrl": harness.worker_url,
            "workflowStartOptions": {"searchAttributes": search},
        },
    )
    assert status == 200, body


def search(harness: Harness, query: str, **extra: Any) -> tuple[int, Any]:
    return harness.api("/api/v1/workflow/search", {"query": query, **extra})


def ids(body: dict[str, Any]) -> set[str]:
    return {e["workflowId"] for e in body["workflowExecutions"]}


@pytest.fixture
def processes(harness: Harness, worker: FakeWorker) -> Harness:
    start(harness, "o1", "Order", Tier="vip", Items=3, Tags=["red", "blue"])
    start(harness, "o2", "Order", Tier="basic", Items=3, Paid=True)
    start(harness, "o3", "Order", Tier="vip", Items=1)
    start(harness, "s1", "Signup", Tier="vip")
    harness.api("/api/v1/workflow/stop", {"workflowId": "o3"})
    return harness


def test_by_type_status_and_attribute(processes: Harness) -> None:
    harness = processes
    assert ids(search(harness, "WorkflowType = 'Order'")[1]) == {"o1", "o2", "o3"}
    running = "WorkflowType='Order' AND ExecutionStatus='Running'"
    assert ids(search(harness, running)[1]) == {"o1", "o2"}
    assert ids(search(harness, running + " AND Tier='vip'")[1]) == {"o1"}
    assert ids(search(harness, "WorkflowType='Order' AND Items=3")[1]) == {"o1", "o2"}
    assert ids(search(harness, "WorkflowType='Order' AND Paid=true")[1]) == {"o2"}
    assert ids(search(harness, "WorkflowType='Order' AND Tags='red'")[1]) == {"o1"}
    # 'vi' is not 'vip': keyword equality, not a substring.
    assert ids(search(harness, "WorkflowType='Order' AND Tier='vi'")[1]) == set()
    assert ids(search(harness, "WorkflowType='Order' AND ExecutionStatus='Canceled'")[1]) == {"o3"}


def test_pages_cover_every_run_once(processes: Harness) -> None:
    seen: list[str] = []
    token = None
    while True:
        extra = {"pageSize": 1, **({"nextPageToken": token} if token else {})}
        status, body = search(processes, "WorkflowType='Order'", **extra)
        assert status == 200, body
        seen += [e["workflowId"] for e in body["workflowExecutions"]]
        token = body.get("nextPageToken")
        if not token:
            break
    assert sorted(seen) == ["o1", "o2", "o3"]


@pytest.mark.parametrize(
    ("query", "detail"),
    [
        ("Tier='vip'", "needs WorkflowType"),
        ("WorkflowType='Order' OR Tier='vip'", "cannot answer"),
        ("WorkflowType='Order' AND Items > 2", "cannot answer"),
        ("WorkflowType='Order' ORDER BY StartTime", "cannot answer"),
        ("WorkflowType='Order' AND ExecutionStatus='Sleeping'", "unknown ExecutionStatus"),
        ("WorkflowType='Order' AND WorkflowId='o1'", "cannot search by WorkflowId"),
        ("WorkflowType='Order' AND WorkflowType='Signup'", "one WorkflowType"),
    ],
)
def test_queries_no_index_answers_are_clear_errors(
    harness: Harness, query: str, detail: str
) -> None:
    status, body = search(harness, query)
    assert status == 400 and detail in body["detail"], body


@pytest.mark.parametrize(
    "token",
    [
        "not-a-token",
        base64.urlsafe_b64encode(b"[1, 2]").decode(),
        base64.urlsafe_b64encode(json.dumps({"pk": {"S": "x"}}).encode()).decode(),
    ],
)
def test_a_forged_page_token_is_a_clear_error(harness: Harness, token: str) -> None:
    status, body = search(harness, "WorkflowType='Order'", nextPageToken=token)
    assert status == 400 and "nextPageToken" in body["detail"]
