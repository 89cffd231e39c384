"""xdb.sdk processes on the real engine in the time-controlled environment (xdb.testing):
every decision kind, every command kind, attributes, RPCs, retries, and the client's errors."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from pydantic import BaseModel

from examples.user_signup import Form, UserSignup
from xdb.sdk import (
    AsyncState,
    CommandRequest,
    CommandResults,
    Communication,
    CommunicationSchema,
    Context,
    IdReusePolicy,
    InvalidRequest,
    LocalAttribute,
    LocalQueue,
    LocalQueueCommand,
    Persistence,
    PersistenceSchema,
    Process,
    ProcessAlreadyStarted,
    ProcessClosed,
    ProcessFailed,
    ProcessNotFound,
    ProcessStartOptions,
    ProcessStatus,
    ProcessStopped,
    RetryPolicy,
    RpcFailed,
    StateDecision,
    StateMovement,
    StateOptions,
    StateSchema,
    TimerCommand,
    rpc,
)
from xdb.testing import TestEnvironment

calls: Counter[str] = Counter()


class Order(BaseModel):
    item: str
    quantity: int


class Decide(AsyncState[str]):
    """Makes the decision its input names."""

    next_states = ("Done", "Idle")

    def execute(
        self,
        ctx: Context,
        input: str,
        results: CommandResults,
        persistence: Persistence,
        communication: Communication,
    ) -> StateDecision:
        calls["Decide"] += 1
        return {
            "single": lambda: StateDecision.single_next_state(Done, "single"),
            "multi": lambda: StateDecision.multi_next_states(StateMovement(Done, "multi"), "Idle"),
            "graceful": lambda: StateDecision.graceful_complete_process("graceful"),
            "force_complete": lambda: StateDecision.multi_next_states(
                "Idle", StateMovement(Done, "force")
            ),
            "force_fail": lambda: StateDecision.force_fail_process("bad input"),
            "dead_end": lambda: StateDecision.dead_end(),
        }[input]()


class Done(AsyncState[str]):
    def execute(
        self,
        ctx: Context,
        input: str,
        results: CommandResults,
        persistence: Persistence,
        communication: Communication,
    ) -> StateDecision:
        calls["Done"] += 1
        if input == "force":
            return StateDecision.force_complete_process("forced")
        return StateDecision.graceful_complete_process(input)


class Idle(AsyncState[None]):
    """A thread that waits for a message that never comes, or ends at once (multi)."""

    def wait_until(
        self, ctx: Context, input: None, persistence: Persistence, communication: Communication
    ) -> CommandRequest:
        return CommandRequest.for_all_command_completed(LocalQueueCommand.by_name("never"))

    def execute(
        self,
        ctx: Context,
        input: None,
        results: CommandResults,
        persistence: Persistence,
        communication: Communication,
    ) -> StateDecision:
        return StateDecision.dead_end()


class Decisions(Process):
    states = StateSchema(Decide(), Done(), Idle())
    communication = CommunicationSchema(LocalQueue("never"))


class Wait(AsyncState[str]):
    """Waits for the commands its input names, then reports what it saw."""

    next_states = ("Wait",)

    def wait_until(
        self, ctx: Context, input: str, persistence: Persistence, communication: Communication
    ) -> CommandRequest:
        hour = TimerCommand.by_duration(timedelta(hours=1), command_id="hour")
        order = LocalQueueCommand.by_name("orders", command_id="order")
        return {
            "timer": CommandRequest.for_all_command_completed(hour),
            "queue": CommandRequest.for_all_command_completed(order),
            "any": CommandRequest.for_any_command_completed(hour, order),
            "all": CommandRequest.for_all_command_completed(hour, order),
            "two": CommandRequest.for_all_command_completed(
                LocalQueueCommand.by_name("orders"), LocalQueueCommand.by_name("orders")
            ),
            "none": CommandRequest.empty(),
        }[input]

    def execute(
        self,
        ctx: Context,
        input: str,
        results: CommandResults,
        persistence: Persistence,
        communication: Communication,
    ) -> StateDecision:
        seen = [f"timer {r.command_id} {r.fired}" for r in results.timers] + [
            f"queue {r.command_id} {r.received} {r.value!r}" for r in results.local_queues
        ]
        persistence.set_local("seen", seen)
        return StateDecision.graceful_complete_process(seen)


class Waits(Process):
    states = StateSchema(Wait())
    persistence = PersistenceSchema(LocalAttribute("seen", list[str]))
    communication = CommunicationSchema(LocalQueue("orders", Order))


class Flaky(AsyncState[None]):
    """Fails its first two attempts; after three failures it would go to Rescue."""

    next_states = ("Rescue",)
    options = StateOptions(
        execute_retry=RetryPolicy(initial_interval=timedelta(seconds=10), maximum_attempts=3),
        execute_failure_proceeds_to="Rescue",
    )

    def execute(
        self,
        ctx: Context,
        input: None,
        results: CommandResults,
        persistence: Persistence,
        communication: Communication,
    ) -> StateDecision:
        calls["Flaky"] += 1
        if ctx.attempt is not None and ctx.attempt < persistence.get_local("succeed_at"):
            raise ConnectionError(f"attempt {ctx.attempt} failed")
        return StateDecision.graceful_complete_process(f"attempt {ctx.attempt}")


class Rescue(AsyncState[None]):
    def execute(
        self,
        ctx: Context,
        input: None,
        results: CommandResults,
        persistence: Persistence,
        communication: Communication,
    ) -> StateDecision:
        return StateDecision.graceful_complete_process("rescued")


class Retries(Process):
    states = StateSchema(Flaky(), Rescue())
    persistence = PersistenceSchema(LocalAttribute("succeed_at", int))


class Counter_(AsyncState[int]):
    """Started by the RPC below: adds its input to the total."""

    def execute(
        self,
        ctx: Context,
        input: int,
        results: CommandResults,
        persistence: Persistence,
        communication: Communication,
    ) -> StateDecision:
        persistence.set_local("total", (persistence.get_local("total") or 0) + input)
        return StateDecision.dead_end()


class Rpcs(Process):
    states = StateSchema.without_starting_state(Counter_())
    persistence = PersistenceSchema(LocalAttribute("total", int))
    communication = CommunicationSchema(LocalQueue("inbox", str))

    @rpc
    def add(
        self, ctx: Context, amount: int, persistence: Persistence, communication: Communication
    ) -> int:
        communication.trigger_state(Counter_, amount)
        communication.publish_to_local_queue("inbox", f"add {amount}")
        return communication.local_queue_size("inbox") + 1

    @rpc
    def total(
        self, ctx: Context, input: None, persistence: Persistence, communication: Communication
    ) -> int:
        return persistence.get_local("total") or 0

    @rpc
    def explode(
        self, ctx: Context, input: None, persistence: Persistence, communication: Communication
    ) -> None:
        raise PermissionError("not allowed")


@pytest.fixture
def env() -> Iterator[TestEnvironment]:
    calls.clear()
    with TestEnvironment(UserSignup, Decisions, Waits, Retries, Rpcs) as environment:
        yield environment


def signup(env: TestEnvironment, user: str) -> str:
    options = ProcessStartOptions(
        global_attribute_pk_value=user,
        initial_upsert_global_attributes={
            "form": Form(email=f"{user}@example.com", name=user),
            "status": "waiting",
        },
    )
    env.client.start_process_execution(f"signup-{user}", UserSignup, None, options)
    return f"signup-{user}"


def test_signup_verified_at_once(env: TestEnvironment) -> None:
    process_id = signup(env, "ada")
    assert env.row("user", "ada") == {
        "user_id": "ada",
        "form": {"email": "ada@example.com", "name": "ada"},
        "status": "waiting",
    }
    assert env.client.invoke_rpc(process_id, UserSignup.verify, "email") == "done"
    assert env.client.invoke_rpc(process_id, UserSignup.verify, "email") == "already verified"
    assert env.client.wait_for_process_completion(process_id, str) == "done"
    assert env.client.invoke_rpc(process_id, UserSignup.reminders_sent) == 0
    row = env.row("user", "ada")
    assert row is not None and (row["status"], row["source"]) == ("verified", "email")


def test_signup_reminded_twice_over_48_hours_then_verified(env: TestEnvironment) -> None:
    process_id = signup(env, "bob")
    started = env.clock.now
    env.sleep(timedelta(hours=23, minutes=59))
    assert env.client.invoke_rpc(process_id, UserSignup.reminders_sent) == 0
    env.sleep(timedelta(hours=24, minutes=2))  # 48 h 1 min in: two timers have fired
    assert env.client.invoke_rpc(process_id, UserSignup.reminders_sent) == 2
    assert env.client.invoke_rpc(process_id, UserSignup.verify, "sms") == "done"
    assert env.client.wait_for_process_completion(process_id, str) == "done"
    assert env.client.invoke_rpc(process_id, UserSignup.reminders_sent) == 2
    assert env.clock.now - started == pytest.approx(48 * 3600 + 60)
    row = env.row("user", "bob")
    assert row is not None and (row["status"], row["source"]) == ("verified", "sms")


def test_waiting_for_completion_skips_time_to_the_next_timer(env: TestEnvironment) -> None:
    env.client.start_process_execution("w", Waits, "timer")
    started = env.clock.now
    assert env.client.wait_for_process_completion("w") == ["timer hour True"]
    assert env.clock.now - started == pytest.approx(3600, abs=1)


@pytest.mark.parametrize(
    ("decision", "outcome"),
    [
        ("single", ("COMPLETED", "single")),
        ("graceful", ("COMPLETED", "graceful")),
        ("force_complete", ("COMPLETED", "forced")),
        ("force_fail", ("FAILED", None)),
    ],
)
def test_every_decision_kind(env: TestEnvironment, decision: str, outcome: tuple[str, Any]) -> None:
    env.client.start_process_execution("d", Decisions, decision)
    try:
        output = env.client.wait_for_process_completion("d")
    except ProcessFailed as failed:
        assert failed.error_type == "STATE_DECISION_FAILING_WORKFLOW_ERROR_TYPE"
        output = None
    assert (env.client.describe("d").status.value, output) == outcome
    assert calls["Decide"] == 1


def test_multi_next_states_wait_for_every_thread_before_a_graceful_completion(
    env: TestEnvironment,
) -> None:
    # given: Done completes gracefully while Idle still waits for a message
    env.client.start_process_execution("d", Decisions, "multi")
    env.run()
    assert env.client.describe("d").status is ProcessStatus.RUNNING
    # when: Idle gets its message and dead-ends
    env.client.publish_to_local_queue("d", "never")
    # then
    assert env.client.wait_for_process_completion("d") == "multi"


def test_a_dead_end_ends_the_thread_not_the_process(env: TestEnvironment) -> None:
    env.client.start_process_execution("d", Decisions, "dead_end")
    env.sleep(timedelta(days=1))
    assert env.client.describe("d").status is ProcessStatus.RUNNING
    with pytest.raises(InvalidRequest, match="nothing is scheduled that could move it"):
        env.client.wait_for_process_completion("d")
    env.client.stop("d", "test over")
    with pytest.raises(ProcessStopped):
        env.client.wait_for_process_completion("d")


@pytest.mark.parametrize(
    ("commands", "send", "seen"),
    [
        ("timer", False, ["timer hour True"]),
        ("queue", True, ["queue order True Order(item='tea', quantity=2)"]),
        ("any", True, ["timer hour False", "queue order True Order(item='tea', quantity=2)"]),
        ("any", False, ["timer hour True", "queue order False None"]),
        ("all", True, ["timer hour True", "queue order True Order(item='tea', quantity=2)"]),
        ("none", False, []),
    ],
)
def test_every_command_kind(
    env: TestEnvironment, commands: str, send: bool, seen: list[str]
) -> None:
    env.client.start_process_execution("w", Waits, commands)
    if send:
        env.client.publish_to_local_queue("w", "orders", Order(item="tea", quantity=2))
    assert env.client.wait_for_process_completion("w") == seen


def test_two_queue_commands_take_two_messages_in_order(env: TestEnvironment) -> None:
    env.client.start_process_execution("w", Waits, "two")
    env.client.publish_to_local_queue("w", "orders", {"item": "tea", "quantity": 1})
    assert env.client.describe("w").status is ProcessStatus.RUNNING
    env.client.publish_to_local_queue("w", "orders", {"item": "tea", "quantity": 2})
    assert env.client.wait_for_process_completion("w") == [
        "queue 0 True Order(item='tea', quantity=1)",
        "queue 1 True Order(item='tea', quantity=2)",
    ]
    with pytest.raises(ProcessClosed):
        env.client.publish_to_local_queue("w", "orders", {"item": "tea", "quantity": 3})


def test_retries_follow_the_state_options_then_proceed(env: TestEnvironment) -> None:
    env.client.start_process_execution(
        "r", Retries, options=ProcessStartOptions(initial_local_attributes={"succeed_at": 3})
    )
    assert env.client.wait_for_process_completion("r") == "attempt 3"
    assert calls["Flaky"] == 3
    env.client.start_process_execution(
        "r2", Retries, options=ProcessStartOptions(initial_local_attributes={"succeed_at": 9})
    )
    assert env.client.wait_for_process_completion("r2") == "rescued"
    assert calls["Flaky"] == 6


def test_an_rpc_starts_threads_publishes_and_reads(env: TestEnvironment) -> None:
    env.client.start_process_execution("c", Rpcs)
    assert [env.client.invoke_rpc("c", Rpcs.add, n) for n in (1, 2, 3)] == [1, 2, 3]
    env.run()
    assert env.client.invoke_rpc("c", Rpcs.total) == 6
    with pytest.raises(RpcFailed) as failed:
        env.client.invoke_rpc("c", Rpcs.explode)
    assert "PermissionError: not allowed" in failed.value.detail
    assert failed.value.worker_detail == "PermissionError: not allowed"


def test_the_engine_errors_reach_the_client_typed(env: TestEnvironment) -> None:
    with pytest.raises(ProcessNotFound):
        env.client.describe("nobody")
    once = ProcessStartOptions(id_reuse_policy=IdReusePolicy.DISALLOW_REUSE)
    env.client.start_process_execution("once", Waits, "queue", once)
    with pytest.raises(ProcessAlreadyStarted):
        env.client.start_process_execution("once", Waits, "queue", once)
    signup(env, "cy")
    with pytest.raises(InvalidRequest, match="already has the row"):  # conflict mode ERROR
        env.client.start_process_execution(
            "signup-cy-2",
            UserSignup,
            None,
            ProcessStartOptions(
                global_attribute_pk_value="cy",
                initial_upsert_global_attributes={"status": "waiting"},
            ),
        )
