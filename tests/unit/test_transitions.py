"""The pure core: decisions, retries, failure policies, waiting, timeout, id reuse."""

from __future__ import annotations

import pytest

from xdb.core import commands as c
from xdb.core import transitions as t
from xdb.core.errors import InvalidWorkerAnswer, ProcessAlreadyStarted, ProcessClosed
from xdb.core.work import tasks_for
from xdb.model.execution import Api, EventKind, Execution, Phase, Retry, StateOptions, Status
from xdb.model.task import TaskKind
from xdb.model.wire import (
    CommandRequest,
    EncodedObject,
    IdReusePolicy,
    InterStateChannelPublishing,
    KeyValue,
    StateDecision,
    StateMovement,
    TimerCommand,
    WorkflowStateExecuteResponse,
    WorkflowStateWaitUntilResponse,
    WorkflowStopType,
)

NOW = 1_000_000.0


def value(data: str) -> EncodedObject:
    return EncodedObject(encoding="json", data=data)


def spec(**overrides: object) -> c.StartSpec:
    fields: dict[str, object] = {
        "workflow_id": "wf",
        "workflow_type": "Flow",
        "worker_url": "http://127.0.0.1:9",
        "timeout_seconds": 0,
        "start_state_id": "A",
        "input": value('"in"'),
        "options": StateOptions(skip_wait_until=True),
    }
    fields.update(overrides)
    return c.StartSpec(**fields)  # type: ignore[arg-type]


def started(**overrides: object) -> Execution:
    return c.start(spec(**overrides), current=None, run_id="run-1", now=NOW).execution


def decide(*movements: StateMovement) -> WorkflowStateExecuteResponse:
    return WorkflowStateExecuteResponse(state_decision=StateDecision(next_states=list(movements)))


def move(state_id: str, data: str | None = None, **options: object) -> StateMovement:
    wire_options = {"skipWaitUntil": True, **options}
    return StateMovement.model_validate(
        {
            "stateId": state_id,
            "stateInput": value(data).dump() if data else None,
            "stateOptions": wire_options,
        }
    )


def execute(execution: Execution, sx: str, *movements: StateMovement) -> Execution:
    nxt = t.on_execute(execution, sx, 1, decide(*movements), now=NOW, max_api_timeout=60)
    assert nxt is not None
    return nxt


class TestStart:
    def test_first_state_gets_execution_id_and_phase(self) -> None:
        execution = started(options=StateOptions())
        assert list(execution.states) == ["A-1"]
        assert execution.states["A-1"].phase is Phase.WAIT_UNTIL
        assert [e.kind for e in execution.events] == [
            EventKind.PROCESS_STARTED,
            EventKind.STATE_STARTED,
        ]

    def test_running_id_is_taken_unless_the_request_repeats(self) -> None:
        current = started(request_id="r1")
        with pytest.raises(ProcessAlreadyStarted):
            c.start(spec(), current=current, run_id="run-2", now=NOW)
        again = c.start(
            spec(request_id="r1", ignore_already_started=True),
            current=current,
            run_id="run-2",
            now=NOW,
        )
        assert again.existing and again.execution.run_id == "run-1"
        with pytest.raises(ProcessAlreadyStarted):
            c.start(
                spec(request_id="r2", ignore_already_started=True),
                current=current,
                run_id="run-2",
                now=NOW,
            )

    @pytest.mark.parametrize(
        ("policy", "previous", "allowed"),
        [
            (IdReusePolicy.ALLOW_IF_NO_RUNNING, Status.COMPLETED, True),
            (IdReusePolicy.DISALLOW_REUSE, Status.FAILED, False),
            (IdReusePolicy.ALLOW_IF_PREVIOUS_EXITS_ABNORMALLY, Status.FAILED, True),
            (IdReusePolicy.ALLOW_IF_PREVIOUS_EXITS_ABNORMALLY, Status.COMPLETED, False),
            (IdReusePolicy.ALLOW_TERMINATE_IF_RUNNING, Status.RUNNING, True),
        ],
    )
    def test_reuse_policies(self, policy: IdReusePolicy, previous: Status, allowed: bool) -> None:
        current = started().model_copy(update={"status": previous})
        if not allowed:
            with pytest.raises(ProcessAlreadyStarted):
                c.start(spec(reuse_policy=policy), current=current, run_id="run-2", now=NOW)
            return
        outcome = c.start(spec(reuse_policy=policy), current=current, run_id="run-2", now=NOW)
        assert outcome.execution.run_id == "run-2"
        assert outcome.replaced is not None and outcome.replaced.status.closed


class TestDecisions:
    def test_single_next_state_numbers_executions_per_state(self) -> None:
        execution = execute(started(), "A-1", move("A"))
        assert list(execution.states) == ["A-2"]
        assert execution.states["A-2"].phase is Phase.EXECUTE  # skipWaitUntil

    def test_parallel_threads_and_graceful_complete_waits_for_them(self) -> None:
        execution = execute(started(), "A-1", move("B"), move("C"))
        assert set(execution.states) == {"B-1", "C-1"}
        execution = execute(execution, "B-1", move(t.GRACEFUL_COMPLETE, '"b"'))
        assert execution.status is Status.RUNNING and set(execution.states) == {"C-1"}
        execution = execute(execution, "C-1", move(t.GRACEFUL_COMPLETE, '"c"'))
        assert execution.status is Status.COMPLETED
        assert [r.output.data for r in execution.results if r.output] == ['"b"', '"c"']

    def test_force_complete_ends_other_threads(self) -> None:
        execution = execute(started(), "A-1", move("B"), move("C"))
        execution = execute(execution, "B-1", move(t.FORCE_COMPLETE, '"done"'))
        assert execution.status is Status.COMPLETED and execution.states == {}

    def test_force_fail(self) -> None:
        execution = execute(started(), "A-1", move(t.FORCE_FAIL, '"why"'))
        assert execution.status is Status.FAILED
        assert execution.error_type == "STATE_DECISION_FAILING_WORKFLOW_ERROR_TYPE"

    def test_all_dead_ends_keep_the_process_running(self) -> None:
        execution = execute(started(), "A-1", move(t.DEAD_END))
        assert execution.status is Status.RUNNING and execution.states == {}

    def test_a_decision_without_next_states_is_invalid(self) -> None:
        with pytest.raises(InvalidWorkerAnswer):
            t.on_execute(
                started(), "A-1", 1, WorkflowStateExecuteResponse(), now=NOW, max_api_timeout=60
            )

    def test_upserts_and_removals_of_data_attributes(self) -> None:
        execution = started(data_attributes={"keep": value("1"), "drop": value("2")})
        answer = WorkflowStateExecuteResponse(
            state_decision=StateDecision(next_states=[move(t.DEAD_END)]),
            upsert_data_objects=[
                KeyValue(key="new", value=value("3")),
                KeyValue(key="drop", value=None),
            ],
        )
        nxt = t.on_execute(execution, "A-1", 1, answer, now=NOW, max_api_timeout=60)
        assert nxt is not None and set(nxt.data_attributes) == {"keep", "new"}

    def test_stale_and_duplicate_answers_change_nothing(self) -> None:
        execution = started()
        once = execute(execution, "A-1", move("B"))
        assert t.on_execute(once, "A-1", 1, decide(move("B")), now=NOW, max_api_timeout=60) is None
        assert (
            t.on_execute(execution, "A-1", 2, decide(move("B")), now=NOW, max_api_timeout=60)
            is None
        )


class TestRetriesAndFailurePolicies:
    def test_backoff_grows_and_is_capped(self) -> None:
        options = StateOptions(
            skip_wait_until=True,
            execute_retry=Retry(initial_interval=1, backoff_coefficient=2, maximum_interval=3),
        )
        execution = started(options=options)
        delays = []
        for attempt in range(1, 5):
            execution = t.on_api_failure(execution, "A-1", Api.EXECUTE, attempt, "boom", now=NOW)  # type: ignore[assignment]
            delays.append(execution.states["A-1"].next_call_at - NOW)  # type: ignore[operator]
        assert delays == [1, 2, 3, 3]
        assert execution.states["A-1"].attempt == 5

    def test_exhausted_execute_fails_the_process(self) -> None:
        execution = started(
            options=StateOptions(skip_wait_until=True, execute_retry=Retry(maximum_attempts=1))
        )
        failed = t.on_api_failure(execution, "A-1", Api.EXECUTE, 1, "boom", now=NOW)
        assert failed is not None and failed.status is Status.FAILED
        assert failed.error_type == "STATE_API_FAIL_ERROR_TYPE" and "boom" in (
            failed.error_message or ""
        )

    def test_maximum_duration_ends_retries(self) -> None:
        options = StateOptions(
            skip_wait_until=True, execute_retry=Retry(initial_interval=10, maximum_duration=5)
        )
        failed = t.on_api_failure(started(options=options), "A-1", Api.EXECUTE, 1, "boom", now=NOW)
        assert failed is not None and failed.status is Status.FAILED

    def test_exhausted_execute_proceeds_to_recovery_state_with_same_input(self) -> None:
        options = StateOptions(
            skip_wait_until=True, execute_retry=Retry(maximum_attempts=1), recovery_state_id="R"
        )
        recovered = t.on_api_failure(
            started(options=options), "A-1", Api.EXECUTE, 1, "boom", now=NOW
        )
        assert recovered is not None and list(recovered.states) == ["R-1"]
        assert recovered.states["R-1"].input == value('"in"')

    def test_exhausted_wait_until_proceeds_to_execute_when_configured(self) -> None:
        options = StateOptions(
            wait_until_retry=Retry(maximum_attempts=1), proceed_on_wait_until_failure=True
        )
        proceeded = t.on_api_failure(
            started(options=options), "A-1", Api.WAIT_UNTIL, 1, "boom", now=NOW
        )
        assert proceeded is not None
        state = proceeded.states["A-1"]
        assert state.phase is Phase.EXECUTE and state.wait_until_failed and state.attempt == 1

    def test_failure_of_a_stale_attempt_changes_nothing(self) -> None:
        assert t.on_api_failure(started(), "A-1", Api.EXECUTE, 7, "late", now=NOW) is None


class TestWaiting:
    def wait(self, waiting_type: str, *durations: int) -> Execution:
        answer = WorkflowStateWaitUntilResponse(
            command_request=CommandRequest(
                command_waiting_type=waiting_type,  # type: ignore[arg-type]
                timer_commands=[
                    TimerCommand(command_id=f"t{d}", duration_seconds=d) for d in durations
                ],
            )
        )
        nxt = t.on_wait_until(started(options=StateOptions()), "A-1", 1, answer, now=NOW)
        assert nxt is not None
        return nxt

    def test_empty_command_request_goes_straight_to_execute(self) -> None:
        nxt = t.on_wait_until(
            started(options=StateOptions()), "A-1", 1, WorkflowStateWaitUntilResponse(), now=NOW
        )
        assert nxt is not None and nxt.states["A-1"].phase is Phase.EXECUTE

    def test_all_completed_waits_for_every_timer(self) -> None:
        execution = self.wait("ALL_COMPLETED", 5, 10)
        assert execution.states["A-1"].phase is Phase.WAITING
        execution = t.on_timer(execution, "A-1", 0, now=NOW + 5)  # type: ignore[assignment]
        assert execution.states["A-1"].phase is Phase.WAITING
        assert t.on_timer(execution, "A-1", 0, now=NOW + 6) is None  # fired already
        execution = t.on_timer(execution, "A-1", 1, now=NOW + 10)  # type: ignore[assignment]
        assert execution.states["A-1"].phase is Phase.EXECUTE

    def test_any_completed_needs_one_timer(self) -> None:
        execution = t.on_timer(self.wait("ANY_COMPLETED", 5, 10), "A-1", 1, now=NOW + 10)
        assert execution is not None and execution.states["A-1"].phase is Phase.EXECUTE

    def test_timers_become_delayed_tasks_once(self) -> None:
        before = started(options=StateOptions())
        after = self.wait("ALL_COMPLETED", 5)
        tasks = tasks_for(before, after)
        assert [(task.kind, task.due_at) for task in tasks] == [(TaskKind.TIMER, NOW + 5)]
        assert tasks_for(after, after) == []


class TestTimeoutStopAndAttributes:
    def test_timeout_closes_and_drops_pending_work(self) -> None:
        execution = started(timeout_seconds=10)
        assert t.on_process_timeout(execution, now=NOW + 9) is None
        closed = t.on_process_timeout(execution, now=NOW + 10)
        assert closed is not None and closed.status is Status.TIMEOUT and closed.states == {}
        assert tasks_for(execution, closed) == []

    @pytest.mark.parametrize(
        ("stop_type", "status"),
        [
            (WorkflowStopType.CANCEL, Status.CANCELED),
            (WorkflowStopType.TERMINATE, Status.TERMINATED),
            (WorkflowStopType.FAIL, Status.FAILED),
        ],
    )
    def test_stop(self, stop_type: WorkflowStopType, status: Status) -> None:
        stopped = c.stop(started(), stop_type, "test", now=NOW)
        assert stopped is not None and stopped.status is status
        assert c.stop(stopped, stop_type, "again", now=NOW) is None

    def test_closed_process_attributes_are_read_only(self) -> None:
        closed = c.stop(started(), WorkflowStopType.CANCEL, None, now=NOW)
        assert closed is not None
        with pytest.raises(ProcessClosed):
            c.set_data_attributes(closed, [KeyValue(key="k", value=value("1"))], now=NOW)


class TestChannels:
    def waiting_on(
        self, execution: Execution, sx: str, *channels: str, waiting: str = "ALL_COMPLETED"
    ) -> Execution:
        request = CommandRequest.model_validate(
            {
                "commandWaitingType": waiting,
                "interStateChannelCommands": [{"commandId": c, "channelName": c} for c in channels],
            }
        )
        nxt = t.on_wait_until(
            execution, sx, 1, WorkflowStateWaitUntilResponse(command_request=request), now=NOW
        )
        assert nxt is not None
        return nxt

    def test_messages_sent_before_the_wait_are_kept_for_it(self) -> None:
        execution = c.publish_messages(
            started(options=StateOptions()),
            [InterStateChannelPublishing(channel_name="q", value=value("1"))],
            now=NOW,
        )
        assert execution is not None
        execution = self.waiting_on(execution, "A-1", "q")
        state = execution.states["A-1"]
        assert state.phase is Phase.EXECUTE and state.waiting.channels[0].value == value("1")  # type: ignore[union-attr]
        assert execution.channels == {}

    def test_first_waiting_state_takes_the_first_message(self) -> None:
        options = {"skipWaitUntil": False}
        execution = execute(started(), "A-1", move("B", **options), move("C", **options))
        execution = self.waiting_on(self.waiting_on(execution, "B-1", "q"), "C-1", "q")
        messages = [
            InterStateChannelPublishing(channel_name="q", value=value(v)) for v in ("1", "2")
        ]
        execution = c.publish_messages(execution, messages, now=NOW)  # type: ignore[assignment]
        assert execution.states["B-1"].waiting.channels[0].value == value("1")  # type: ignore[union-attr]
        assert execution.states["C-1"].waiting.channels[0].value == value("2")  # type: ignore[union-attr]

    def test_any_completed_leaves_other_messages_queued(self) -> None:
        execution = c.publish_messages(
            started(options=StateOptions()),
            [InterStateChannelPublishing(channel_name=c, value=value(c)) for c in ("a", "b")],
            now=NOW,
        )
        execution = self.waiting_on(execution, "A-1", "a", "b", waiting="ANY_COMPLETED")  # type: ignore[arg-type]
        assert [c.received for c in execution.states["A-1"].waiting.channels] == [True, False]  # type: ignore[union-attr]
        assert list(execution.channels) == ["b"]

    def test_repeated_dedup_id_changes_nothing(self) -> None:
        message = InterStateChannelPublishing(channel_name="q", value=value("1"), dedup_id="x")
        once = c.publish_messages(started(), [message], now=NOW)
        assert once is not None and c.publish_messages(once, [message], now=NOW) is None

    def test_conditional_close_goes_on_while_the_channel_has_messages(self) -> None:
        close = {
            "conditionalCloseType": "FORCE_COMPLETE_ON_INTERNAL_CHANNEL_EMPTY",
            "channelName": "q",
        }
        decision = StateDecision.model_validate(
            {"conditionalClose": close, "nextStates": [{"stateId": "A"}]}
        )
        answer = WorkflowStateExecuteResponse(state_decision=decision)
        busy = c.publish_messages(
            started(), [InterStateChannelPublishing(channel_name="q")], now=NOW
        )
        assert busy is not None
        went_on = t.on_execute(busy, "A-1", 1, answer, now=NOW, max_api_timeout=60)
        assert went_on is not None and went_on.status is Status.RUNNING and "A-2" in went_on.states
        closed = t.on_execute(started(), "A-1", 1, answer, now=NOW, max_api_timeout=60)
        assert closed is not None and closed.status is Status.COMPLETED
