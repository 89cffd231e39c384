"""An async state: the unit of work of a process, run by the engine through a worker."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, get_args, get_origin

from xdb.sdk.commands import CommandRequest, CommandResults
from xdb.sdk.decision import StateDecision

if TYPE_CHECKING:
    from xdb.model import wire
    from xdb.sdk.persistence import Communication, Persistence

Input = TypeVar("Input")


@dataclass(frozen=True)
class Context:
    """Where a call of user code stands: which process execution, state execution, attempt."""

    process_id: str
    process_execution_id: str
    started_at: datetime
    state_execution_id: str | None = None
    attempt: int | None = None
    first_attempt_at: datetime | None = None

    @classmethod
    def of(cls, context: wire.Context) -> Context:
        return cls(
            process_id=context.workflow_id,
            process_execution_id=context.workflow_run_id,
            started_at=_time(context.workflow_started_timestamp),
            state_execution_id=context.state_execution_id,
            attempt=context.attempt,
            first_attempt_at=(
                None
                if context.first_attempt_timestamp is None
                else _time(context.first_attempt_timestamp)
            ),
        )


def _time(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


@dataclass(frozen=True)
class RetryPolicy:
    """How the engine retries a failing ``wait_until`` or ``execute`` call (exponential
    backoff). ``maximum_attempts=0`` and ``maximum_duration=None`` retry until the
    process times out."""

    initial_interval: timedelta = timedelta(seconds=1)
    backoff_coefficient: float = 2.0
    maximum_interval: timedelta = timedelta(seconds=100)
    maximum_attempts: int = 0
    maximum_duration: timedelta | None = None


@dataclass(frozen=True)
class StateOptions:
    """How the engine runs a state. Unset fields keep the engine's defaults.

    ``proceed_on_wait_until_failure``: once ``wait_until``'s retries are used up, run
    ``execute`` anyway (``CommandResults`` then says it failed) instead of failing the
    process. ``execute_failure_proceeds_to``: once ``execute``'s retries are used up, go to
    this state instead of failing the process.
    """

    wait_until_timeout: timedelta | None = None
    execute_timeout: timedelta | None = None
    wait_until_retry: RetryPolicy | None = None
    execute_retry: RetryPolicy | None = None
    proceed_on_wait_until_failure: bool = False
    execute_failure_proceeds_to: type[AsyncState[Any]] | str | None = None


class AsyncState(Generic[Input]):
    """Subclass with the input type as parameter, e.g. ``class Verify(AsyncState[Form])``.

    The engine calls ``wait_until`` first, if the state defines one, and waits for the
    commands it returns; then ``execute``, whose :class:`StateDecision` says what comes
    next. Every state a decision may move to must be listed in ``next_states`` (classes,
    or ids for states defined later): the registry checks the graph at start-up.
    """

    next_states: ClassVar[Sequence[type[AsyncState[Any]] | str]] = ()
    options: ClassVar[StateOptions | None] = None

    @classmethod
    def state_id(cls) -> str:
        """The state's id on the wire: its class name."""
        return cls.__name__

    @classmethod
    def input_type(cls) -> Any:
        """The ``Input`` of ``AsyncState[Input]`` (``None``: not declared)."""
        for base in getattr(cls, "__orig_bases__", ()):
            if get_origin(base) is AsyncState:
                (kind,) = get_args(base)
                return type(None) if kind is None else kind
        for parent in cls.__mro__[1:]:
            if issubclass(parent, AsyncState) and parent is not AsyncState:
                return parent.input_type()
        return None

    @classmethod
    def waits(cls) -> bool:
        """Whether the state defines ``wait_until`` (if not, the engine skips it)."""
        return cls.wait_until is not AsyncState.wait_until

    def wait_until(
        self, ctx: Context, input: Input, persistence: Persistence, communication: Communication
    ) -> CommandRequest:
        raise NotImplementedError  # optional: not called unless a subclass defines it

    def execute(
        self,
        ctx: Context,
        input: Input,
        results: CommandResults,
        persistence: Persistence,
        communication: Communication,
    ) -> StateDecision:
        raise NotImplementedError(f"{type(self).__name__} must define execute()")
