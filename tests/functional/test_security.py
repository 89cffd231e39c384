"""Every worker call is signed; only allowed worker URLs are called."""

from __future__ import annotations

import time

import pytest

from tests.functional.harness import SIGNING_SECRET, FakeWorker, Harness, complete
from xdb.engine import runtime
from xdb.signing import SignatureError, verify


def test_every_worker_request_verifies_and_a_tampered_copy_does_not(
    harness: Harness, worker: FakeWorker
) -> None:
    worker.on("execute", "A", complete("ok"))
    harness.start("wf")
    harness.run()
    assert worker.raw, "the worker was called"
    for headers, body in worker.raw:
        verify(SIGNING_SECRET.encode(), body, headers)
        with pytest.raises(SignatureError):
            verify(SIGNING_SECRET.encode(), body.replace(b"wf", b"wg"), headers)
        with pytest.raises(SignatureError):
            verify(SIGNING_SECRET.encode(), body, headers, now=time.time() + 600)


def test_a_worker_outside_the_allow_list_is_never_called(
    harness: Harness, worker: FakeWorker
) -> None:
    worker.on("execute", "A", complete("ok"))
    settings = harness.engine.settings.model_copy(
        update={"worker_urls": ("https://workers.example.com/",)}
    )
    harness.engine = runtime.build(settings, clock=harness.clock, sleep=harness.clock.advance)
    runtime.install(harness.engine)
    status, body = harness.api(
        "/api/v1/workflow/start",
        {
            "workflowId": "wf",
            "iwfWorkerUrl": harness.worker_url,
            "iwfWorkflowType": "Flow",
            "workflowTimeoutSeconds": 0,
            "startStateId": "A",
        },
    )
    assert status == 400 and "not in this deployment's allow-list" in body["detail"]
    assert harness.engine.store.current("wf") is None
    assert worker.raw == []
