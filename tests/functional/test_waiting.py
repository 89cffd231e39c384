"""Waiting: channel messages, dedup ids, any/all waiting, timer skip, duplicate timers,
the process timeout and conditional close, through the real handlers over moto."""

from __future__ import annotations

import json
import time
from typing import Any

from tests.functional.harness import FakeWorker, Harness, complete, decide

BATCH = 10


def value(data: Any) -> dict[str, str]:
    return {"encoding": "json", "data": json.dumps(data)}


def wait_for(*commands: dict[str, Any], waiting: str = "ALL_COMPLETED") -> Any:
    timers = [c for c in commands if "durationSeconds" in c]
    channels = [c for c in commands if "channelName" in c]
    answer = {
        "commandRequest": {
            "commandWaitingType": waiting,
            "timerCommands": timers,
            "interStateChannelCommands": channels,
        }
    }
    return lambda _: (200, answer)


def publish(harness: Harness, channel: str, *values: Any, dedup: str | None = None) -> int:
    message: dict[str, Any] = {"channelName": channel}
    messages = [
        {**message, "value": value(v), **({"dedupId": dedup} if dedup else {})} for v in values
    ]
    status, _ = harness.api(
        "/api/v1/workflow/publishToInternalChannel", {"workflowId": "wf", "messages": messages}
    )
    return status


def get(harness: Harness) -> dict[str, Any]:
    return harness.api("/api/v1/workflow/get", {"workflowId": "wf", "needsResults": True})[1]


def test_1000_messages_are_consumed_in_order_once(harness: Harness, worker: FakeWorker) -> None:
    # given: a state that takes 10 messages per execution until it has 1,000
    received: list[int] = []
    worker.on(
        "wait_until",
        "Take",
        wait_for(*[{"commandId": f"m{i}", "channelName": "q"} for i in range(BATCH)]),
    )

    def take(body: dict[str, Any]) -> tuple[int, Any]:
        results = body["commandResults"]["interStateChannelResults"]
        assert [r["requestStatus"] for r in results] == ["RECEIVED"] * BATCH
        received.extend(json.loads(r["value"]["data"]) for r in results)
        if len(received) >= 1000:
            return complete(len(received))(body)
        return 200, {"stateDecision": {"nextStates": [{"stateId": "Take"}]}}

    worker.on("execute", "Take", take)
    harness.start("wf", "Take", stateOptions={})
    # when: 1,000 messages arrive in batches while the process runs
    for start in range(0, 1000, 100):
        assert publish(harness, "q", *range(start, start + 100)) == 200
        harness.run()
    harness.run()
    # then
    assert received == list(range(1000))
    assert get(harness)["workflowStatus"] == "COMPLETED"
    assert harness.engine.store.current("wf").channels == {}  # type: ignore[union-attr]


def test_a_dedup_id_is_stored_once(harness: Harness, worker: FakeWorker) -> None:
    harness.start("wf", "Idle")
    assert publish(harness, "q", "first", dedup="order-7") == 200
    assert publish(harness, "q", "again", dedup="order-7") == 200
    assert publish(harness, "q", "other", dedup="order-8") == 200
    queued = harness.engine.store.current("wf").channels["q"]  # type: ignore[union-attr]
    assert [m.value.data for m in queued] == ['"first"', '"other"']  # type: ignore[union-attr]


def test_any_completed_consumes_only_what_completed(harness: Harness, worker: FakeWorker) -> None:
    worker.on(
        "wait_until",
        "A",
        wait_for(
            {"commandId": "t", "durationSeconds": 3600},
            {"commandId": "a", "channelName": "a"},
            {"commandId": "b", "channelName": "b"},
            waiting="ANY_COMPLETED",
        ),
    )
    worker.on("execute", "A", complete("done"))
    harness.start("wf", "A", stateOptions={})
    harness.run(wait_delayed=False)
    publish(harness, "a", 1)
    publish(harness, "a", 2)
    harness.run(wait_delayed=False)
    results = worker.requests[-1]["commandResults"]
    assert [r["timerStatus"] for r in results["timerResults"]] == ["SCHEDULED"]
    assert [(r["commandId"], r["requestStatus"]) for r in results["interStateChannelResults"]] == [
        ("a", "RECEIVED"),
        ("b", "WAITING"),
    ]
    assert get(harness)["workflowStatus"] == "COMPLETED"


def test_a_skip_before_the_timer_exists_fires_it_when_it_does(
    harness: Harness, worker: FakeWorker
) -> None:
    worker.on(
        "execute", "A", lambda _: (200, {"stateDecision": {"nextStates": [{"stateId": "B"}]}})
    )
    worker.on("wait_until", "B", wait_for({"commandId": "day", "durationSeconds": 86_400}))
    worker.on("execute", "B", complete("skipped"))
    harness.start("wf", "A")
    status, _ = harness.api(
        "/api/v1/workflow/timer/skip",
        {"workflowId": "wf", "workflowStateExecutionId": "B-1", "timerCommandId": "day"},
    )
    assert status == 200
    harness.run()  # B waits for its timer, which is skipped already
    results = worker.requests[-1]["commandResults"]["timerResults"]
    assert results == [{"commandId": "day", "timerStatus": "FIRED"}]
    assert get(harness)["workflowStatus"] == "COMPLETED"


def test_a_duplicate_timer_message_fires_once(harness: Harness, worker: FakeWorker) -> None:
    worker.on("wait_until", "A", wait_for({"commandId": "t", "durationSeconds": 1}))
    worker.on("execute", "A", complete("late"))
    harness.start("wf", "A", stateOptions={})
    run_id = harness.engine.store.current("wf").run_id  # type: ignore[union-attr]
    harness.run(stream_copies=2, task_copies=2)
    kinds = [e.kind for e in harness.history("wf", run_id)]
    assert kinds.count("TIMER_FIRED") == 1
    assert worker.calls[("execute", "A")] == 1


def test_timeout_while_a_state_runs_drops_its_work(harness: Harness, worker: FakeWorker) -> None:
    worker.on("execute", "A", decide(("B", None)))
    harness.start("wf", "A", workflowTimeoutSeconds=1)
    harness.deliver_stream(harness.stream_records())
    state_task = harness.receive()  # A's task, not handled yet
    time.sleep(1.2)
    timeout_task = harness.receive()  # the process timeout is due
    harness.deliver_tasks(timeout_task)
    harness.ack(timeout_task)
    harness.deliver_tasks(state_task)  # A's task comes late
    harness.ack(state_task)
    harness.run()
    body = get(harness)
    assert body["workflowStatus"] == "TIMEOUT"
    assert worker.calls[("execute", "A")] == 0
    assert harness.engine.store.current("wf").states == {}  # type: ignore[union-attr]


def test_conditional_close_completes_only_on_an_empty_channel(
    harness: Harness, worker: FakeWorker
) -> None:
    def close_or_loop(_: dict[str, Any]) -> tuple[int, Any]:
        decision = {
            "conditionalClose": {
                "conditionalCloseType": "FORCE_COMPLETE_ON_INTERNAL_CHANNEL_EMPTY",
                "channelName": "q",
                "closeInput": value("closed"),
            },
            "nextStates": [{"stateId": "Drain"}],
        }
        return 200, {"stateDecision": decision}

    worker.on("wait_until", "Drain", wait_for({"commandId": "m", "channelName": "q"}))
    worker.on("execute", "Drain", close_or_loop)
    harness.start("wf", "Drain", stateOptions={})
    publish(harness, "q", 1, 2, 3)
    harness.run()
    assert worker.calls[("execute", "Drain")] == 3  # one per message: none is lost at the close
    assert get(harness)["results"][0]["completedStateOutput"]["data"] == '"closed"'


def test_signals_reach_a_waiting_state(harness: Harness, worker: FakeWorker) -> None:
    worker.on(
        "wait_until",
        "A",
        lambda _: (
            200,
            {"commandRequest": {"signalCommands": [{"commandId": "s", "signalChannelName": "go"}]}},
        ),
    )
    worker.on(
        "execute",
        "A",
        lambda body: complete(body["commandResults"]["signalResults"][0]["signalValue"]["data"])(
            body
        ),
    )
    harness.start("wf", "A", stateOptions={})
    harness.run()
    status, _ = harness.api(
        "/api/v1/workflow/signal",
        {"workflowId": "wf", "signalChannelName": "go", "signalValue": value(42)},
    )
    assert status == 200
    harness.run()
    assert get(harness)["results"][0]["completedStateOutput"]["data"] == json.dumps("42")


DAY = 86_400


def test_a_30_day_timer_goes_through_a_schedule_and_fires_once(
    harness: Harness, worker: FakeWorker
) -> None:
    # given: a state waiting 30 days
    worker.on("wait_until", "A", wait_for({"commandId": "month", "durationSeconds": 30 * DAY}))
    worker.on("execute", "A", complete("a month later"))
    run_id = harness.start("wf", "A", stateOptions={})
    harness.run(wait_delayed=False)
    # then: the timer is a schedule, not a message in the queue
    assert len(harness.schedules()) == 1
    assert harness.queue_depth() == (0, 0)
    assert harness.fire_schedules() == 0  # not due yet
    # when: 30 days pass, and Scheduler fires (twice, to be sure it is harmless)
    harness.clock.advance(30 * DAY)
    assert harness.fire_schedules() == 1
    assert harness.fire_schedules() == 0
    harness.run()
    # then
    kinds = [e.kind for e in harness.history("wf", run_id)]
    assert kinds.count("TIMER_FIRED") == 1
    assert get(harness)["workflowStatus"] == "COMPLETED"
    assert harness.schedules() == []


def test_a_long_timer_nobody_waits_for_loses_its_schedule(
    harness: Harness, worker: FakeWorker
) -> None:
    worker.on(
        "wait_until",
        "A",
        wait_for(
            {"commandId": "week", "durationSeconds": 7 * DAY},
            {"commandId": "m", "channelName": "q"},
            waiting="ANY_COMPLETED",
        ),
    )
    worker.on("execute", "A", complete("message first"))
    harness.start("wf", "A", stateOptions={}, workflowTimeoutSeconds=30 * DAY)
    harness.run(wait_delayed=False)
    assert len(harness.schedules()) == 2  # the timer and the process timeout
    publish(harness, "q", "hello")
    harness.run(wait_delayed=False)
    assert get(harness)["workflowStatus"] == "COMPLETED"
    assert harness.schedules() == []


def test_a_delayed_start_runs_its_first_state_after_the_delay(
    harness: Harness, worker: FakeWorker
) -> None:
    worker.on("execute", "A", complete("later"))
    harness.start("wf", "A", workflowStartOptions={"workflowStartDelaySeconds": 1})
    started = time.monotonic()
    harness.run()
    assert time.monotonic() - started >= 0.9
    assert worker.calls[("execute", "A")] == 1
    assert get(harness)["workflowStatus"] == "COMPLETED"
