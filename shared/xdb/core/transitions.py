"""Pure transitions: (execution snapshot, event, now) -> next snapshot.

Nothing here does I/O or reads a clock: ``now`` and new ids are passed in. Each function
returns the next snapshot (version + 1, with the events of this transition), or None
when the event is stale (a duplicate or late delivery): applying it changes nothing.
"""

from __future__ import annotations

from xdb.core import channels
from xdb.core import options as state_options
from xdb.core import waiting as waits
from xdb.core.errors import (
    InvalidWorkerAnswer,
)
from xdb.core.persistence import apply_answer
from xdb.core.retry import next_attempt_at
from xdb.core.snapshot import RESERVED_PREFIX, begin_state, close, next_version
from xdb.model.execution import (
    Api,
    Completion,
    Event,
    EventKind,
    Execution,
    Phase,
    StateExecution,
    StateOptions,
    Status,
)
from xdb.model.wire import (
    DEAD_END,
    FORCE_COMPLETE,
    FORCE_FAIL,
    GRACEFUL_COMPLETE,
    EncodedObject,
    KeyValue,
    StateDecision,
    StateMovement,
    WorkflowConditionalCloseType,
    WorkflowErrorType,
    WorkflowStateExecuteResponse,
    WorkflowStateWaitUntilResponse,
)


def on_wait_until(
    execution: Execution,
    state_execution_id: str,
    attempt: int,
    answer: WorkflowStateWaitUntilResponse,
    *,
    now: float,
) -> Execution | None:
    """Commit a wait_until answer: the state waits, or goes on to execute."""
    if _live(execution, state_execution_id, Phase.WAIT_UNTIL, attempt) is None:
        return None
    waiting = waits.from_request(answer.command_request, now=now)
    nxt = next_version(execution)
    state = nxt.states[state_execution_id]
    apply_answer(nxt, answer, now=now, state_execution_id=state.id)
    state.locals = _merge(state.locals, answer.upsert_state_locals)
    state.waiting = waiting
    state.phase = Phase.WAITING
    state.next_call_at, state.last_error = None, None
    _apply_skipped_timers(nxt, state)
    nxt.events.append(
        Event(
            at=now,
            kind=EventKind.WAIT_UNTIL_COMPLETED,
            state_execution_id=state.id,
            detail=_describe_waiting(state),
        )
    )
    # Messages already queued count at once; an empty command request means no wait.
    channels.deliver(nxt, now)
    return nxt


def on_execute(
    execution: Execution,
    state_execution_id: str,
    attempt: int,
    answer: WorkflowStateExecuteResponse,
    *,
    now: float,
    max_api_timeout: float,
) -> Execution | None:
    """Commit an execute answer: apply its upserts, publishes and state decision."""
    if _live(execution, state_execution_id, Phase.EXECUTE, attempt) is None:
        return None
    decision = answer.state_decision or StateDecision()
    nxt = next_version(execution)
    state = nxt.states.pop(state_execution_id)
    apply_answer(nxt, answer, now=now, state_execution_id=state.id)
    movements = _movements(nxt, decision)
    nxt.events.append(
        Event(
            at=now,
            kind=EventKind.EXECUTE_COMPLETED,
            state_execution_id=state.id,
            detail="-> " + ", ".join(m.state_id for m in movements),
        )
    )
    _record_completion(nxt, state, movements[0].state_input)
    for movement in movements:
        _move(nxt, state, movement, now=now, max_api_timeout=max_api_timeout)
        if nxt.status.closed:
            break
    _complete_if_done(nxt, now)
    if not nxt.status.closed:
        channels.deliver(nxt, now)
    return nxt


def _movements(execution: Execution, decision: StateDecision) -> list[StateMovement]:
    """The movements a decision makes, with a conditional close decided on the spot
    (in the same write as everything else, so a message that arrives meanwhile either
    is in the channel now or comes after the close)."""
    close = decision.conditional_close
    if close is not None:
        kind = close.conditional_close_type
        if kind is WorkflowConditionalCloseType.GRACEFUL_COMPLETE_ON_ALL_CHANNELS_EMPTY:
            empty, target = channels.all_empty(execution), GRACEFUL_COMPLETE
        else:
            internal = kind is WorkflowConditionalCloseType.FORCE_COMPLETE_ON_INTERNAL_CHANNEL_EMPTY
            empty, target = (
                channels.is_empty(execution, close.channel_name, internal=internal),
                FORCE_COMPLETE,
            )
        if empty:
            return [StateMovement(state_id=target, state_input=close.close_input)]
    if not decision.next_states:
        raise InvalidWorkerAnswer(
            "execute must return a state decision with at least one next state"
        )
    return list(decision.next_states)


def _record_completion(
    execution: Execution, state: StateExecution, output: EncodedObject | None
) -> None:
    """Keep the output of a state execution that waitForStateCompletion may ask for.

    As in iWF: a state execution declared at start, or any execution of a state id declared
    at start, is kept under its wait-for key when its movement gave one, else under its
    state execution id.
    """
    if (
        state.id not in execution.wait_for_state_execution_ids
        and state.state_id not in execution.wait_for_state_ids
    ):
        return
    key = state.id
    if state.wait_for_key:
        key = wait_for_key(state.state_id, state.wait_for_key)
    execution.state_completions[key] = Completion(
        state_id=state.state_id, state_execution_id=state.id, output=output
    )


def wait_for_key(state_id: str, key: str) -> str:
    return f"{state_id}#{key}"


def on_api_failure(
    execution: Execution, state_execution_id: str, api: Api, attempt: int, error: str, *, now: float
) -> Execution | None:
    """Record a failed worker call: retry later, or apply the failure policy."""
    phase = Phase.WAIT_UNTIL if api is Api.WAIT_UNTIL else Phase.EXECUTE
    current = _live(execution, state_execution_id, phase, attempt)
    if current is None:
        return None
    at = next_attempt_at(
        current.options.retry(api),
        attempt=attempt,
        first_attempt_at=current.first_attempt_at,
        now=now,
    )
    if at is not None and execution.timeout_at is not None and at >= execution.timeout_at:
        # As Temporal bounds an activity's retries by the workflow's timeout: a retry that
        # could only happen after the process times out fails the state now, with its error.
        at = None
    nxt = next_version(execution)
    state = nxt.states[state_execution_id]
    if at is not None:
        state.attempt += 1
        state.next_call_at, state.last_error = at, error
        detail = f"{api} attempt {attempt} failed, next at +{at - now:.1f}s: {error}"
        nxt.events.append(
            Event(at=now, kind=EventKind.ATTEMPT_FAILED, state_execution_id=state.id, detail=detail)
        )
        return nxt
    detail = f"{api} failed after {attempt} attempt(s): {error}"
    nxt.events.append(
        Event(at=now, kind=EventKind.STATE_FAILED, state_execution_id=state.id, detail=detail)
    )
    if api is Api.WAIT_UNTIL and state.options.proceed_on_wait_until_failure:
        state.wait_until_failed = True
        waits.to_execute(state, now)
    elif api is Api.EXECUTE and state.options.recovery_state_id:
        del nxt.states[state.id]
        recovery = state.options.recovery_options or StateOptions()
        begin_state(nxt, state.options.recovery_state_id, state.input, recovery, now)
    else:
        close(
            nxt,
            Status.FAILED,
            now,
            WorkflowErrorType.STATE_API_FAIL_ERROR_TYPE,
            f"{state.id}: {detail}",
        )
    return nxt


def on_timer(
    execution: Execution, state_execution_id: str, index: int, *, now: float, skipped: bool = False
) -> Execution | None:
    """A timer command fired (or was skipped by a client)."""
    state = _live(execution, state_execution_id, Phase.WAITING, None)
    if state is None or state.waiting is None or index >= len(state.waiting.timers):
        return None
    if state.waiting.timers[index].fired:
        return None
    nxt = next_version(execution)
    state = nxt.states[state_execution_id]
    assert state.waiting is not None
    timer = state.waiting.timers[index]
    timer.fired = True
    nxt.events.append(
        Event(
            at=now,
            kind=EventKind.TIMER_SKIPPED if skipped else EventKind.TIMER_FIRED,
            state_execution_id=state.id,
            detail=f"timer {index} {timer.command_id}".rstrip(),
        )
    )
    if waits.is_complete(state.waiting):
        waits.to_execute(state, now)
    return nxt


def on_process_timeout(execution: Execution, *, now: float) -> Execution | None:
    """The process timeout fired."""
    if execution.status.closed or execution.timeout_at is None or now < execution.timeout_at:
        return None
    nxt = next_version(execution)
    close(nxt, Status.TIMEOUT, now, None, "the process timed out")
    return nxt


def _live(
    execution: Execution, state_execution_id: str, phase: Phase, attempt: int | None
) -> StateExecution | None:
    """The state execution an event is for, or None when the event is stale."""
    if execution.status.closed:
        return None
    state = execution.states.get(state_execution_id)
    if state is None or state.phase is not phase:
        return None
    if attempt is not None and state.attempt != attempt:
        return None
    return state


def _move(
    nxt: Execution,
    state: StateExecution,
    movement: StateMovement,
    *,
    now: float,
    max_api_timeout: float,
) -> None:
    output = Completion(
        state_id=state.state_id, state_execution_id=state.id, output=movement.state_input
    )
    if movement.state_id == DEAD_END:
        return
    if movement.state_id == GRACEFUL_COMPLETE:
        nxt.results.append(output)
        nxt.graceful_complete_requested = True
    elif movement.state_id == FORCE_COMPLETE:
        nxt.results.append(output)
        close(nxt, Status.COMPLETED, now, None, None)
    elif movement.state_id == FORCE_FAIL:
        nxt.results.append(output)
        close(
            nxt,
            Status.FAILED,
            now,
            WorkflowErrorType.STATE_DECISION_FAILING_WORKFLOW_ERROR_TYPE,
            f"{state.id} decided to fail the process",
        )
    elif movement.state_id.startswith(RESERVED_PREFIX):
        raise InvalidWorkerAnswer(f"unknown system state id {movement.state_id!r}")
    else:
        options = state_options.resolve(movement.state_options, max_api_timeout=max_api_timeout)
        begin_state(
            nxt, movement.state_id, movement.state_input, options, now, movement.wait_for_key
        )


def _complete_if_done(execution: Execution, now: float) -> None:
    # Graceful completion waits for the other threads; dead ends alone keep it running.
    if (
        not execution.status.closed
        and not execution.states
        and execution.graceful_complete_requested
    ):
        close(execution, Status.COMPLETED, now, None, None)


def _merge(current: list[KeyValue], upserts: list[KeyValue] | None) -> list[KeyValue]:
    merged = {kv.key: kv for kv in current}
    merged.update({kv.key: kv for kv in upserts or []})
    return list(merged.values())


def _apply_skipped_timers(execution: Execution, state: StateExecution) -> None:
    assert state.waiting is not None
    for index, timer in enumerate(state.waiting.timers):
        for key in (f"{state.id}#{timer.command_id}", f"{state.id}#{index}"):
            if key in execution.skipped_timers:
                execution.skipped_timers.remove(key)
                timer.fired = True


def _describe_waiting(state: StateExecution) -> str:
    waiting = state.waiting
    if waiting is None or (not waiting.timers and not waiting.channels):
        return "no commands"
    parts = [f"timer {t.command_id or i}" for i, t in enumerate(waiting.timers)]
    parts += [f"channel {c.channel}" for c in waiting.channels]
    return f"{waiting.waiting_type}: " + ", ".join(parts)
