"""Pure transitions: (execution snapshot, event, now) -> next snapshot.

Nothing here does I/O or reads a clock: ``now`` and new ids are passed in. Each function
returns the next snapshot (version + 1, with the events of this transition), or None
when the event is stale (a duplicate or late delivery): applying it changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdb.core import channels
from xdb.core import options as state_options
from xdb.core import waiting as waits
from xdb.core.errors import (
    BadRequest,
    InvalidWorkerAnswer,
    ProcessAlreadyStarted,
    ProcessClosed,
)
from xdb.core.retry import next_attempt_at
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
    EncodedObject,
    IdReusePolicy,
    InterStateChannelPublishing,
    KeyValue,
    StateDecision,
    StateMovement,
    WorkflowConditionalCloseType,
    WorkflowErrorType,
    WorkflowStateExecuteResponse,
    WorkflowStateWaitUntilResponse,
    WorkflowStopType,
)

GRACEFUL_COMPLETE = "_SYS_GRACEFUL_COMPLETING_WORKFLOW"
FORCE_COMPLETE = "_SYS_FORCE_COMPLETING_WORKFLOW"
FORCE_FAIL = "_SYS_FORCE_FAILING_WORKFLOW"
DEAD_END = "_SYS_DEAD_END"
RESERVED_PREFIX = "_SYS_"

_ABNORMAL = {Status.FAILED, Status.TIMEOUT, Status.TERMINATED, Status.CANCELED}


@dataclass(frozen=True)
class StartSpec:
    """A validated request to start a process execution."""

    workflow_id: str
    workflow_type: str
    worker_url: str
    timeout_seconds: int
    start_state_id: str | None
    input: EncodedObject | None
    options: StateOptions
    data_attributes: dict[str, EncodedObject] = field(default_factory=dict)
    reuse_policy: IdReusePolicy = IdReusePolicy.ALLOW_IF_NO_RUNNING
    request_id: str | None = None
    ignore_already_started: bool = False
    start_delay_seconds: int = 0
    wait_for_state_ids: list[str] = field(default_factory=list)
    wait_for_state_execution_ids: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class StartOutcome:
    execution: Execution
    # The closed (or terminated) run this start replaces, to archive before the write.
    replaced: Execution | None = None
    # True when the request was a repeat of the start that made ``execution``.
    existing: bool = False


def start(spec: StartSpec, *, current: Execution | None, run_id: str, now: float) -> StartOutcome:
    """Start a run of ``spec.workflow_id`` given its current run, under the reuse policy."""
    replaced = None
    if current is not None:
        repeat = spec.ignore_already_started and (
            spec.request_id is None or spec.request_id == current.request_id
        )
        if current.status is Status.RUNNING:
            if repeat:
                return StartOutcome(current, existing=True)
            if spec.reuse_policy is not IdReusePolicy.ALLOW_TERMINATE_IF_RUNNING:
                raise ProcessAlreadyStarted(
                    f"process {spec.workflow_id!r} is already running",
                    workflow_id=spec.workflow_id,
                    run_id=current.run_id,
                )
            replaced = stop(current, WorkflowStopType.TERMINATE, "replaced by a new run", now=now)
        else:
            if repeat and spec.request_id is not None:
                return StartOutcome(current, existing=True)
            _check_reuse(spec, current)
            replaced = current
    execution = Execution(
        workflow_id=spec.workflow_id,
        run_id=run_id,
        workflow_type=spec.workflow_type,
        worker_url=spec.worker_url,
        started_at=now,
        timeout_at=now + spec.timeout_seconds if spec.timeout_seconds > 0 else None,
        request_id=spec.request_id,
        data_attributes=dict(spec.data_attributes),
        wait_for_state_ids=list(spec.wait_for_state_ids),
        wait_for_state_execution_ids=list(spec.wait_for_state_execution_ids),
        events=[Event(at=now, kind=EventKind.PROCESS_STARTED, detail=spec.workflow_type)],
    )
    if spec.start_state_id:
        first = _begin(execution, spec.start_state_id, spec.input, spec.options, now)
        if spec.start_delay_seconds:
            # A delayed start is a first attempt that may not run before its time.
            first.next_call_at = now + spec.start_delay_seconds
    return StartOutcome(execution, replaced=replaced)


def _check_reuse(spec: StartSpec, previous: Execution) -> None:
    policy = spec.reuse_policy
    allowed = policy in (
        IdReusePolicy.ALLOW_IF_NO_RUNNING,
        IdReusePolicy.ALLOW_TERMINATE_IF_RUNNING,
    )
    if policy in (
        IdReusePolicy.ALLOW_IF_PREVIOUS_EXITS_ABNORMALLY,
        IdReusePolicy.ALLOW_IF_PREVIOUS_EXISTS_ABNORMALLY,
    ):
        allowed = previous.status in _ABNORMAL
    if not allowed:
        raise ProcessAlreadyStarted(
            f"process {spec.workflow_id!r} already ran ({previous.status}) and the id reuse "
            f"policy {policy} does not allow another run",
            workflow_id=spec.workflow_id,
            run_id=previous.run_id,
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
    nxt = _next(execution)
    state = nxt.states[state_execution_id]
    _upsert(nxt.data_attributes, answer.upsert_data_objects)
    _publish(nxt, answer.publish_to_inter_state_channel)
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
    nxt = _next(execution)
    state = nxt.states.pop(state_execution_id)
    _upsert(nxt.data_attributes, answer.upsert_data_objects)
    _publish(nxt, answer.publish_to_inter_state_channel)
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
    """Keep the output of a state execution that waitForStateCompletion may ask for."""
    keys = []
    if state.id in execution.wait_for_state_execution_ids:
        keys.append(state.id)
    if state.wait_for_key is not None and state.state_id in execution.wait_for_state_ids:
        keys.append(wait_for_key(state.state_id, state.wait_for_key))
    for key in keys:
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
    nxt = _next(execution)
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
        _begin(nxt, state.options.recovery_state_id, state.input, recovery, now)
    else:
        _close(
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
    nxt = _next(execution)
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


def skip_timer(
    execution: Execution,
    state_execution_id: str,
    command_id: str | None,
    index: int | None,
    *,
    now: float,
) -> Execution | None:
    """Fire a timer now. A skip for a state that does not wait yet is kept until it does."""
    _require_running(execution)
    state = execution.states.get(state_execution_id)
    if state is not None and state.phase is Phase.WAITING and state.waiting is not None:
        timers = state.waiting.timers
        found = (
            index
            if index is not None
            else next((i for i, t in enumerate(timers) if t.command_id == command_id), None)
        )
        if found is None or found >= len(timers):
            raise BadRequest(
                f"state execution {state_execution_id!r} has no timer {command_id if index is None else index!r}",
                state_execution_id=state_execution_id,
            )
        return on_timer(execution, state_execution_id, found, now=now, skipped=True)
    nxt = _next(execution)
    nxt.skipped_timers.append(f"{state_execution_id}#{command_id if index is None else index}")
    return nxt


def receive_signal(
    execution: Execution, channel: str, value: EncodedObject | None, *, now: float
) -> Execution:
    """A signal from a client."""
    _require_running(execution)
    nxt = _next(execution)
    channels.publish(nxt, channel, value, internal=False)
    channels.deliver(nxt, now)
    return nxt


def publish_messages(
    execution: Execution, messages: list[InterStateChannelPublishing], *, now: float
) -> Execution | None:
    """Messages to internal channels (local queues) from a client; repeated dedup ids are dropped."""
    _require_running(execution)
    nxt = _next(execution)
    if not _publish(nxt, messages):
        return None
    channels.deliver(nxt, now)
    return nxt


def on_process_timeout(execution: Execution, *, now: float) -> Execution | None:
    """The process timeout fired."""
    if execution.status.closed or execution.timeout_at is None or now < execution.timeout_at:
        return None
    nxt = _next(execution)
    _close(nxt, Status.TIMEOUT, now, None, "the process timed out")
    return nxt


def stop(
    execution: Execution, stop_type: WorkflowStopType, reason: str | None, *, now: float
) -> Execution | None:
    """Cancel, terminate or fail a running execution; a closed one stays as it is."""
    if execution.status.closed:
        return None
    nxt = _next(execution)
    if stop_type is WorkflowStopType.FAIL:
        _close(
            nxt,
            Status.FAILED,
            now,
            WorkflowErrorType.CLIENT_API_FAILING_WORKFLOW_ERROR_TYPE,
            reason or "failed by a client",
        )
    else:
        status = Status.TERMINATED if stop_type is WorkflowStopType.TERMINATE else Status.CANCELED
        _close(nxt, status, now, None, reason)
    return nxt


def set_data_attributes(execution: Execution, objects: list[KeyValue], *, now: float) -> Execution:
    """Upsert data attributes from a client."""
    _require_running(execution)
    nxt = _next(execution)
    _upsert(nxt.data_attributes, objects)
    keys = ", ".join(kv.key for kv in objects)
    nxt.events.append(Event(at=now, kind=EventKind.DATA_ATTRIBUTES_SET, detail=keys))
    return nxt


# ------------------------------------------------------------------ helpers


def _next(execution: Execution) -> Execution:
    nxt = execution.model_copy(deep=True)
    nxt.version += 1
    nxt.events = []
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


def _begin(
    execution: Execution,
    state_id: str,
    input: EncodedObject | None,
    options: StateOptions,
    now: float,
    wait_for_key: str | None = None,
) -> StateExecution:
    if state_id.startswith(RESERVED_PREFIX):
        raise BadRequest(f"state id {state_id!r} is reserved")
    number = execution.counters.get(state_id, 0) + 1
    execution.counters[state_id] = number
    state = StateExecution(
        id=f"{state_id}-{number}",
        state_id=state_id,
        input=input,
        options=options,
        phase=Phase.EXECUTE if options.skip_wait_until else Phase.WAIT_UNTIL,
        first_attempt_at=now,
        wait_for_key=wait_for_key,
    )
    execution.states[state.id] = state
    execution.events.append(
        Event(at=now, kind=EventKind.STATE_STARTED, state_execution_id=state.id, detail=state.phase)
    )
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
        _close(nxt, Status.COMPLETED, now, None, None)
    elif movement.state_id == FORCE_FAIL:
        nxt.results.append(output)
        _close(
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
        _begin(nxt, movement.state_id, movement.state_input, options, now, movement.wait_for_key)


def _complete_if_done(execution: Execution, now: float) -> None:
    # Graceful completion waits for the other threads; dead ends alone keep it running.
    if (
        not execution.status.closed
        and not execution.states
        and execution.graceful_complete_requested
    ):
        _close(execution, Status.COMPLETED, now, None, None)


def _close(
    execution: Execution,
    status: Status,
    now: float,
    error_type: WorkflowErrorType | None,
    message: str | None,
) -> None:
    execution.status = status
    execution.closed_at = now
    execution.states = {}
    execution.error_type = error_type.value if error_type else None
    execution.error_message = message
    detail = status.value + (f": {message}" if message else "")
    execution.events.append(Event(at=now, kind=EventKind.PROCESS_CLOSED, detail=detail))


def _upsert(attributes: dict[str, EncodedObject], objects: list[KeyValue] | None) -> None:
    for kv in objects or []:
        if kv.value is None:
            attributes.pop(kv.key, None)
        else:
            attributes[kv.key] = kv.value


def _merge(current: list[KeyValue], upserts: list[KeyValue] | None) -> list[KeyValue]:
    merged = {kv.key: kv for kv in current}
    merged.update({kv.key: kv for kv in upserts or []})
    return list(merged.values())


def _publish(execution: Execution, publishes: list[InterStateChannelPublishing] | None) -> bool:
    """Queue messages to internal channels; True when at least one was new."""
    added = False
    for message in publishes or []:
        added |= channels.publish(
            execution, message.channel_name, message.value, internal=True, dedup_id=message.dedup_id
        )
    return added


def _apply_skipped_timers(execution: Execution, state: StateExecution) -> None:
    assert state.waiting is not None
    for index, timer in enumerate(state.waiting.timers):
        for key in (f"{state.id}#{timer.command_id}", f"{state.id}#{index}"):
            if key in execution.skipped_timers:
                execution.skipped_timers.remove(key)
                timer.fired = True


def _require_running(execution: Execution) -> None:
    if execution.status.closed:
        raise ProcessClosed(
            f"process {execution.workflow_id!r} is {execution.status}: it takes no more changes",
            workflow_id=execution.workflow_id,
        )


def _describe_waiting(state: StateExecution) -> str:
    waiting = state.waiting
    if waiting is None or (not waiting.timers and not waiting.channels):
        return "no commands"
    parts = [f"timer {t.command_id or i}" for i, t in enumerate(waiting.timers)]
    parts += [f"channel {c.channel}" for c in waiting.channels]
    return f"{waiting.waiting_type}: " + ", ".join(parts)
