"""Command requests: what a state waits for, and when the wait is over."""

from __future__ import annotations

from xdb.core.errors import InvalidWorkerAnswer
from xdb.model.execution import ChannelWait, Phase, StateExecution, Timer, Waiting
from xdb.model.wire import CommandRequest, CommandWaitingType

_OLD_TRIGGER_NAMES = {
    "ALL_COMMAND_COMPLETED": CommandWaitingType.ALL_COMPLETED,
    "ANY_COMMAND_COMPLETED": CommandWaitingType.ANY_COMPLETED,
    "ANY_COMMAND_COMBINATION_COMPLETED": CommandWaitingType.ANY_COMBINATION_COMPLETED,
}


def from_request(request: CommandRequest | None, *, now: float) -> Waiting:
    """The waiting a wait_until answer asks for; timers get absolute firing times."""
    if request is None:
        return Waiting()
    waiting_type = request.command_waiting_type or _OLD_TRIGGER_NAMES.get(
        request.decider_trigger_type or "", CommandWaitingType.ALL_COMPLETED
    )
    timers = []
    for timer in request.timer_commands or []:
        if timer.firing_unix_timestamp_seconds is not None:
            fire_at = float(timer.firing_unix_timestamp_seconds)
        elif timer.duration_seconds is not None and timer.duration_seconds >= 0:
            fire_at = now + timer.duration_seconds
        else:
            raise InvalidWorkerAnswer(
                "a timer command needs durationSeconds or firingUnixTimestampSeconds"
            )
        timers.append(Timer(command_id=timer.command_id or "", fire_at=fire_at))
    channels = [
        ChannelWait(command_id=c.command_id or "", channel=c.signal_channel_name, internal=False)
        for c in request.signal_commands or []
    ] + [
        ChannelWait(command_id=c.command_id or "", channel=c.channel_name, internal=True)
        for c in request.inter_state_channel_commands or []
    ]
    combinations = [list(c.command_ids) for c in request.command_combinations or []]
    if waiting_type is CommandWaitingType.ANY_COMBINATION_COMPLETED and not combinations:
        raise InvalidWorkerAnswer(
            "ANY_COMBINATION_COMPLETED needs at least one command combination"
        )
    return Waiting(
        waiting_type=waiting_type, timers=timers, channels=channels, combinations=combinations
    )


def is_complete(waiting: Waiting) -> bool:
    """Whether the state may go on to execute."""
    done = [t.fired for t in waiting.timers] + [c.received for c in waiting.channels]
    if not done:
        return True
    if waiting.waiting_type is CommandWaitingType.ALL_COMPLETED:
        return all(done)
    if waiting.waiting_type is CommandWaitingType.ANY_COMPLETED:
        return any(done)
    completed = [t.command_id for t in waiting.timers if t.fired]
    completed += [c.command_id for c in waiting.channels if c.received]
    return any(_covers(completed, combination) for combination in waiting.combinations)


def _covers(completed: list[str], combination: list[str]) -> bool:
    # A combination may name a command id more than once: it then needs that many.
    remaining = list(completed)
    for command_id in combination:
        if command_id not in remaining:
            return False
        remaining.remove(command_id)
    return True


def to_execute(state: StateExecution, now: float) -> None:
    """The wait is over: the state's next worker call is execute, attempt 1."""
    state.phase = Phase.EXECUTE
    state.attempt, state.first_attempt_at = 1, now
    state.next_call_at, state.last_error = None, None
