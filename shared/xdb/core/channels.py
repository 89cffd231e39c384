"""Messages: signal channels and internal channels (XDB local queues).

A message goes into its channel's queue; waiting states take messages first in first out,
one per channel command, in the order the states started. A state stops taking messages
as soon as its wait is over, so with ANY_COMPLETED the commands that did not complete
consume nothing.
"""

from __future__ import annotations

from xdb.core import waiting as waits
from xdb.model.execution import Event, EventKind, Execution, Message, Phase
from xdb.model.wire import EncodedObject


def publish(
    execution: Execution,
    channel: str,
    value: EncodedObject | None,
    *,
    internal: bool,
    dedup_id: str | None = None,
) -> bool:
    """Append a message; False when its dedup id was seen before (nothing changes)."""
    if dedup_id is not None:
        seen = execution.dedup_ids.setdefault(channel, [])
        if dedup_id in seen:
            return False
        seen.append(dedup_id)
    queues = execution.channels if internal else execution.signals
    queues.setdefault(channel, []).append(Message(value=value))
    return True


def deliver(execution: Execution, now: float) -> None:
    """Hand queued messages to the states waiting for them."""
    for state in execution.states.values():
        if state.phase is not Phase.WAITING or state.waiting is None:
            continue
        for command in state.waiting.channels:
            if waits.is_complete(state.waiting):
                break
            queues = execution.channels if command.internal else execution.signals
            queue = queues.get(command.channel)
            if command.received or not queue:
                continue
            message = queue.pop(0)
            if not queue:
                del queues[command.channel]
            command.received, command.value = True, message.value
            kind = "internal channel" if command.internal else "signal"
            execution.events.append(
                Event(
                    at=now,
                    kind=EventKind.MESSAGE_RECEIVED,
                    state_execution_id=state.id,
                    detail=f"{kind} {command.channel}",
                )
            )
        if waits.is_complete(state.waiting):
            waits.to_execute(state, now)


def is_empty(execution: Execution, channel: str | None, *, internal: bool) -> bool:
    queues = execution.channels if internal else execution.signals
    return not queues.get(channel or "")


def all_empty(execution: Execution) -> bool:
    return not execution.channels and not execution.signals
