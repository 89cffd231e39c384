"""Every message may arrive twice; a handler may die between any two lines.
Each state execution still gets exactly one committed decision (counted)."""

from __future__ import annotations

import itertools
import threading

import pytest

from tests.functional.harness import Crash, FakeWorker, Harness, complete, decide

STATES = ["A", "B", "C", "D"]


def script_chain(worker: FakeWorker) -> None:
    for current, following in itertools.pairwise(STATES):
        worker.on("execute", current, decide((following, current)))
    worker.on("execute", STATES[-1], complete("done"))


def assert_completed_once_per_state(harness: Harness, run_id: str) -> None:
    status, body = harness.api("/api/v1/workflow/get", {"workflowId": "wf", "needsResults": True})
    assert status == 200 and body["workflowStatus"] == "COMPLETED", body
    assert body["results"][0]["completedStateOutput"]["data"] == '"done"'
    assert harness.decisions("wf", run_id) == {f"{s}-1": 1 for s in STATES}


def test_every_stream_record_and_task_delivered_twice(harness: Harness, worker: FakeWorker) -> None:
    # given
    script_chain(worker)
    run_id = harness.start("wf")
    # when
    harness.run(stream_copies=2, task_copies=2)
    # then
    assert_completed_once_per_state(harness, run_id)
    # The duplicate task finds its state moved on and does not call the worker again.
    assert all(worker.calls[("execute", s)] == 1 for s in STATES)
    assert harness.queue_depth() == (0, 0)


def test_concurrent_duplicates_race_and_only_one_commits(
    harness: Harness, worker: FakeWorker
) -> None:
    script_chain(worker)
    run_id = harness.start("wf")
    for _ in range(len(STATES) + 1):
        harness.deliver_stream(harness.stream_records())
        messages = harness.receive()
        if not messages:
            continue
        # The same task, handled by two invocations at once (SQS at-least-once delivery).
        threads = [
            threading.Thread(target=harness.deliver_tasks, args=(messages,)) for _ in range(2)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        harness.ack(messages)
    harness.run()
    assert_completed_once_per_state(harness, run_id)


@pytest.mark.parametrize("crash_state", STATES)
def test_crash_between_worker_call_and_commit(
    harness: Harness, worker: FakeWorker, crash_state: str
) -> None:
    # given: the task handler dies after the worker answered, before the commit
    script_chain(worker)
    run_id = harness.start("wf")
    save = harness.engine.store.save
    crashed = []

    def save_or_crash(execution):  # type: ignore[no-untyped-def]
        if (
            not crashed
            and f"{crash_state}-1" not in execution.states
            and execution.counters.get(crash_state)
        ):
            crashed.append(execution.version)
            raise Crash
        return save(execution)

    harness.engine.store.save = save_or_crash  # type: ignore[method-assign]
    # when: the message is never acknowledged, so SQS delivers it again
    for _ in range(20):
        records = harness.stream_records()
        if records:
            harness.deliver_stream(records)
        messages = harness.receive()
        if not messages:
            break
        try:
            harness.deliver_tasks(messages)
        except Crash:
            harness.make_visible(messages)
            continue
        harness.ack(messages)
    # then: the worker ran twice for that state, the decision was committed once
    assert crashed
    assert worker.calls[("execute", crash_state)] == 2
    assert_completed_once_per_state(harness, run_id)


def test_crash_in_stream_handler_after_enqueueing(harness: Harness, worker: FakeWorker) -> None:
    script_chain(worker)
    run_id = harness.start("wf")
    records = harness.stream_records()
    history = harness.engine.store.write_history

    def crash(_):  # type: ignore[no-untyped-def]
        raise Crash

    harness.engine.store.write_history = crash  # type: ignore[method-assign]
    with pytest.raises(Crash):
        harness.deliver_stream(records)  # tasks were sent, the checkpoint was not
    harness.engine.store.write_history = history  # type: ignore[method-assign]
    harness.deliver_stream(records)  # Lambda delivers the batch again
    harness.run()
    assert_completed_once_per_state(harness, run_id)


def test_a_stale_snapshot_of_another_phase_never_calls_the_wrong_api(
    harness: Harness, worker: FakeWorker
) -> None:
    # given: A's wait_until is committed, but this handler's remembered snapshot still
    # shows A before it (as in a Lambda container that did not make that commit)
    worker.on("wait_until", "A", lambda _: (200, {"commandRequest": {}}))
    worker.on("execute", "A", complete("done"))
    harness.start("wf", "A", stateOptions={})
    stale = harness.engine.store.current("wf")
    harness.deliver_stream(harness.stream_records())
    messages = harness.receive()
    harness.deliver_tasks(messages)
    harness.ack(messages)
    harness.engine.store._recent["wf"] = stale  # type: ignore[index]
    # when: the execute task arrives
    harness.run()
    # then: execute ran once, wait_until was not called again
    assert worker.calls[("wait_until", "A")] == 1
    assert worker.calls[("execute", "A")] == 1
    _status, body = harness.api("/api/v1/workflow/get", {"workflowId": "wf"})
    assert body["workflowStatus"] == "COMPLETED"
