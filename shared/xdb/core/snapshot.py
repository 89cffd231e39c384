"""Helpers that every transition uses to make the next snapshot."""

from __future__ import annotations

from xdb.core import channels
from xdb.core.errors import BadRequest, ProcessClosed
from xdb.model.execution import (
    Event,
    EventKind,
    Execution,
    Phase,
    StateExecution,
    StateOptions,
    Status,
    VersionEvents,
)
from xdb.model.wire import EncodedObject, InterStateChannelPublishing, KeyValue, WorkflowErrorType

RESERVED_PREFIX = "_SYS_"


def next_version(execution: Execution) -> Execution:
    """The snapshot a transition changes: a deep copy one version on, with no events yet
    (this version's events join the earlier ones). Events are never changed once made, so
    the copy shares them rather than copying them again at every version."""
    earlier = list(execution.earlier_events)
    if execution.events:
        earlier.append(VersionEvents(version=execution.version, events=list(execution.events)))
    nxt = execution.model_copy(update={"events": [], "earlier_events": []}).model_copy(deep=True)
    nxt.earlier_events = earlier
    nxt.version += 1
    nxt.global_write = None
    return nxt


def begin_state(
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
        Event(
            at=now,
            kind=EventKind.STATE_STARTED,
            state_execution_id=state.id,
            detail=state.phase,
            input=input,
            options=options,
            wait_for_key=wait_for_key,
        )
    )
    return state


def close(
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


def upsert(attributes: dict[str, EncodedObject], objects: list[KeyValue] | None) -> None:
    for kv in objects or []:
        if kv.value is None:
            attributes.pop(kv.key, None)
        else:
            attributes[kv.key] = kv.value


def publish(execution: Execution, publishes: list[InterStateChannelPublishing] | None) -> bool:
    """Queue messages to internal channels; True when at least one was new."""
    added = False
    for message in publishes or []:
        added |= channels.publish(
            execution, message.channel_name, message.value, internal=True, dedup_id=message.dedup_id
        )
    return added


def require_running(execution: Execution) -> None:
    if execution.status.closed:
        raise ProcessClosed(
            f"process {execution.workflow_id!r} is {execution.status}: it takes no more changes",
            workflow_id=execution.workflow_id,
        )
