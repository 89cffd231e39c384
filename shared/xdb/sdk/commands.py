"""What ``wait_until`` asks the engine to wait for, and what ``execute`` learns of it."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from enum import StrEnum
from typing import Any


@dataclass(frozen=True)
class TimerCommand:
    """A durable timer: it fires ``seconds`` after the engine starts waiting."""

    seconds: int
    command_id: str | None = None

    @classmethod
    def by_duration(cls, duration: timedelta, command_id: str | None = None) -> TimerCommand:
        # Whole seconds, rounded up: a timer never fires early.
        return cls.by_seconds(math.ceil(duration.total_seconds()), command_id)

    @classmethod
    def by_seconds(cls, seconds: int, command_id: str | None = None) -> TimerCommand:
        if seconds < 0:
            raise ValueError(f"a timer cannot fire in the past ({seconds} s)")
        return cls(seconds, command_id)


@dataclass(frozen=True)
class LocalQueueCommand:
    """Wait for one message on a local queue of this process execution."""

    queue: str
    command_id: str | None = None

    @classmethod
    def by_name(cls, queue: str, command_id: str | None = None) -> LocalQueueCommand:
        return cls(queue, command_id)


Command = TimerCommand | LocalQueueCommand


class WaitingType(StrEnum):
    ALL = "ALL_COMPLETED"
    ANY = "ANY_COMPLETED"


@dataclass(frozen=True)
class CommandRequest:
    """The commands a state waits for, and whether it needs all of them or any one."""

    commands: tuple[Command, ...] = ()
    waiting: WaitingType = WaitingType.ALL

    @classmethod
    def for_all_command_completed(cls, *commands: Command) -> CommandRequest:
        return cls(tuple(commands), WaitingType.ALL)

    @classmethod
    def for_any_command_completed(cls, *commands: Command) -> CommandRequest:
        return cls(tuple(commands), WaitingType.ANY)

    @classmethod
    def empty(cls) -> CommandRequest:
        """Wait for nothing: ``execute`` runs at once."""
        return cls()


@dataclass(frozen=True)
class TimerResult:
    command_id: str
    fired: bool


@dataclass(frozen=True)
class LocalQueueResult:
    """A local queue command's result; ``value`` is the message, read as the queue's type
    when first asked for (a message that does not fit fails only the code that reads it)."""

    command_id: str
    queue: str
    received: bool
    read: Callable[[], Any] = field(default=lambda: None, repr=False, compare=False)

    @property
    def value(self) -> Any:
        return self.read()


@dataclass(frozen=True)
class CommandResults:
    """How each command of ``wait_until`` ended, in the order they were given."""

    timers: Sequence[TimerResult] = ()
    local_queues: Sequence[LocalQueueResult] = ()
    # True when wait_until failed and the state's options said to proceed to execute.
    wait_until_failed: bool = False

    def timer(self, command_id: str) -> TimerResult:
        return _find(self.timers, command_id)

    def local_queue(self, queue_or_command_id: str) -> LocalQueueResult:
        """The result of the (first) command on this queue, or with this command id."""
        for result in self.local_queues:
            if queue_or_command_id in (result.queue, result.command_id):
                return result
        raise KeyError(f"no local queue command {queue_or_command_id!r} in these results")


def _find(results: Sequence[TimerResult], command_id: str) -> TimerResult:
    for result in results:
        if result.command_id == command_id:
            return result
    raise KeyError(f"no command {command_id!r} in these results")
