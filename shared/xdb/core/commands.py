"""Pure transitions a client asks for: start, stop, signal, publish, skip a timer, set data.

Like :mod:`xdb.core.transitions`: (snapshot, request, now) -> next snapshot, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdb.core import channels, search_attributes
from xdb.core import options as state_options
from xdb.core.errors import BadRequest, InvalidWorkerAnswer, ProcessAlreadyStarted
from xdb.core.persistence import apply_answer, write_globals
from xdb.core.snapshot import (
    RESERVED_PREFIX,
    begin_state,
    close,
    next_version,
    publish,
    require_running,
    upsert,
)
from xdb.core.transitions import on_timer
from xdb.model.execution import (
    Event,
    EventKind,
    Execution,
    GlobalBinding,
    Phase,
    StateOptions,
    Status,
)
from xdb.model.wire import (
    EncodedObject,
    GlobalAttributeConflictMode,
    IdReusePolicy,
    InterStateChannelPublishing,
    KeyValue,
    SearchAttribute,
    WorkflowErrorType,
    WorkflowStopType,
    WorkflowWorkerRpcResponse,
)

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
    search_attributes: list[SearchAttribute] = field(default_factory=list)
    global_binding: GlobalBinding | None = None
    global_initial: list[KeyValue] = field(default_factory=list)
    global_conflict_mode: GlobalAttributeConflictMode = GlobalAttributeConflictMode.ERROR
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
    search_attributes.upsert(execution.search_attributes, spec.search_attributes)
    execution.global_binding = spec.global_binding
    write_globals(execution, spec.global_initial, create_mode=spec.global_conflict_mode)
    if spec.start_state_id:
        first = begin_state(execution, spec.start_state_id, spec.input, spec.options, now)
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


def skip_timer(
    execution: Execution,
    state_execution_id: str,
    command_id: str | None,
    index: int | None,
    *,
    now: float,
) -> Execution | None:
    """Fire a timer now. A skip for a state that does not wait yet is kept until it does."""
    require_running(execution)
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
    nxt = next_version(execution)
    nxt.skipped_timers.append(f"{state_execution_id}#{command_id if index is None else index}")
    return nxt


def receive_signal(
    execution: Execution, channel: str, value: EncodedObject | None, *, now: float
) -> Execution:
    """A signal from a client."""
    require_running(execution)
    nxt = next_version(execution)
    channels.publish(nxt, channel, value, internal=False)
    channels.deliver(nxt, now)
    return nxt


def publish_messages(
    execution: Execution, messages: list[InterStateChannelPublishing], *, now: float
) -> Execution | None:
    """Messages to internal channels (local queues) from a client; repeated dedup ids are dropped."""
    require_running(execution)
    nxt = next_version(execution)
    if not publish(nxt, messages):
        return None
    channels.deliver(nxt, now)
    return nxt


def stop(
    execution: Execution, stop_type: WorkflowStopType, reason: str | None, *, now: float
) -> Execution | None:
    """Cancel, terminate or fail a running execution; a closed one stays as it is."""
    if execution.status.closed:
        return None
    nxt = next_version(execution)
    if stop_type is WorkflowStopType.FAIL:
        close(
            nxt,
            Status.FAILED,
            now,
            WorkflowErrorType.CLIENT_API_FAILING_WORKFLOW_ERROR_TYPE,
            reason or "failed by a client",
        )
    else:
        status = Status.TERMINATED if stop_type is WorkflowStopType.TERMINATE else Status.CANCELED
        close(nxt, status, now, None, reason)
    return nxt


def reset(
    execution: Execution,
    started: Event,
    *,
    run_id: str,
    now: float,
    keep_signals: bool,
    reason: str | None,
) -> StartOutcome:
    """A new run of ``execution``'s process that begins again at the state execution
    ``started`` (its STATE_STARTED event: same state, input and options).

    XDB keeps one snapshot per run, not its past versions, so the new run starts from
    the attributes the process has now (data, search, and its global attribute row);
    unconsumed signals come along unless ``keep_signals`` is False; internal channel
    messages belong to the old run's states and stay with it. A running old run is
    terminated.
    """
    replaced = stop(execution, WorkflowStopType.TERMINATE, reason or "reset", now=now) or execution
    timeout = execution.timeout_at - execution.started_at if execution.timeout_at else None
    fresh = Execution(
        workflow_id=execution.workflow_id,
        run_id=run_id,
        workflow_type=execution.workflow_type,
        worker_url=execution.worker_url,
        started_at=now,
        timeout_at=now + timeout if timeout else None,
        data_attributes=dict(execution.data_attributes),
        search_attributes=dict(execution.search_attributes),
        global_binding=execution.global_binding,
        signals=execution.signals if keep_signals else {},
        wait_for_state_ids=list(execution.wait_for_state_ids),
        wait_for_state_execution_ids=list(execution.wait_for_state_execution_ids),
        events=[
            Event(
                at=now,
                kind=EventKind.PROCESS_STARTED,
                detail=f"reset of run {execution.run_id} to {started.state_execution_id}",
            )
        ],
    )
    state_id = (started.state_execution_id or "").rsplit("-", 1)[0]
    begin_state(
        fresh, state_id, started.input, started.options or StateOptions(), now, started.wait_for_key
    )
    return StartOutcome(fresh, replaced=replaced)


def set_search_attributes(
    execution: Execution, values: list[SearchAttribute], *, now: float
) -> Execution:
    """Upsert search attributes from a client."""
    require_running(execution)
    nxt = next_version(execution)
    keys = search_attributes.upsert(nxt.search_attributes, values)
    nxt.events.append(Event(at=now, kind=EventKind.SEARCH_ATTRIBUTES_SET, detail=", ".join(keys)))
    return nxt


def set_data_attributes(execution: Execution, objects: list[KeyValue], *, now: float) -> Execution:
    """Upsert data attributes from a client."""
    require_running(execution)
    nxt = next_version(execution)
    upsert(nxt.data_attributes, objects)
    keys = ", ".join(kv.key for kv in objects)
    nxt.events.append(Event(at=now, kind=EventKind.DATA_ATTRIBUTES_SET, detail=keys))
    return nxt


def on_rpc_answer(
    execution: Execution, answer: WorkflowWorkerRpcResponse, *, now: float, max_api_timeout: float
) -> Execution | None:
    """Commit what an RPC returned: attribute upserts, publishes and states to start, in one
    write. None when it changed nothing (a read-only RPC needs no write, and may run
    after the process closed)."""
    if not rpc_writes(answer):
        return None
    movements = answer.state_decision.next_states if answer.state_decision else None
    require_running(execution)
    nxt = next_version(execution)
    apply_answer(nxt, answer, now=now)
    for movement in movements or []:
        if movement.state_id.startswith(RESERVED_PREFIX):
            raise InvalidWorkerAnswer(f"an RPC can start states, not {movement.state_id!r}")
        options = state_options.resolve(movement.state_options, max_api_timeout=max_api_timeout)
        begin_state(
            nxt, movement.state_id, movement.state_input, options, now, movement.wait_for_key
        )
    nxt.events.append(
        Event(at=now, kind=EventKind.RPC_COMMITTED, detail=", ".join(_rpc_changes(answer)))
    )
    channels.deliver(nxt, now)
    return nxt


def rpc_writes(answer: WorkflowWorkerRpcResponse) -> bool:
    """Whether an RPC's answer changes the process (a read-only one does not)."""
    movements = answer.state_decision.next_states if answer.state_decision else None
    return any(
        (
            answer.upsert_data_attributes,
            answer.upsert_search_attributes,
            answer.publish_to_inter_state_channel,
            answer.record_events,
            answer.upsert_global_attributes,
            movements,
        )
    )


def _rpc_changes(answer: WorkflowWorkerRpcResponse) -> list[str]:
    changes = [f"set {kv.key}" for kv in answer.upsert_data_attributes or []]
    changes += [f"set {sa.key}" for sa in answer.upsert_search_attributes or []]
    changes += [f"publish {p.channel_name}" for p in answer.publish_to_inter_state_channel or []]
    if answer.state_decision:
        changes += [f"start {m.state_id}" for m in answer.state_decision.next_states or []]
    return changes


# ------------------------------------------------------------------ helpers
