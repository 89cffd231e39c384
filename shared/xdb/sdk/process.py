"""A process: its states, the data it keeps, its queues and its RPCs, declared on the class.

::

    class UserSignup(Process):
        states = StateSchema(Submit(), Verify())
        persistence = PersistenceSchema(
            LocalAttribute("reminders", int),
            global_attributes=GlobalAttributes(
                table="user", primary_key="user_id", columns={"form": Form, "status": str}
            ),
        )
        communication = CommunicationSchema(LocalQueue("verify"))

        @rpc
        def verify(self, ctx: Context, source: str, persistence: Persistence,
                   communication: Communication) -> str: ...

Declarations are checked when the process is added to a :class:`xdb.sdk.Registry`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, ClassVar, TypeVar

from xdb.sdk.state import AsyncState


class StateSchema:
    """The states of a process; the first one starts every execution, unless made with
    :meth:`without_starting_state` (then only RPCs start threads)."""

    def __init__(self, starting_state: AsyncState[Any], *states: AsyncState[Any]) -> None:
        self.starting_state: AsyncState[Any] | None = starting_state
        self.states: tuple[AsyncState[Any], ...] = (starting_state, *states)

    @classmethod
    def without_starting_state(cls, *states: AsyncState[Any]) -> StateSchema:
        schema = cls.__new__(cls)
        schema.starting_state = None
        schema.states = states
        return schema


@dataclass(frozen=True)
class LocalAttribute:
    """A value kept with one process execution (iWF: a data attribute)."""

    key: str
    type: Any = Any


@dataclass(frozen=True)
class GlobalAttributes:
    """Columns of a row in a DynamoDB table of yours, bound to each process execution.

    The row's key value is given when the process starts
    (``ProcessStartOptions.global_attribute_pk_value``); ``columns`` maps each column the
    process may read or write to its type. Writes commit atomically with the step.
    """

    table: str
    primary_key: str
    columns: Mapping[str, Any]


class PersistenceSchema:
    def __init__(
        self, *local_attributes: LocalAttribute, global_attributes: GlobalAttributes | None = None
    ) -> None:
        self.local_attributes = local_attributes
        self.global_attributes = global_attributes


@dataclass(frozen=True)
class LocalQueue:
    """A queue of messages to one process execution (iWF: an internal channel)."""

    name: str
    type: Any = Any


class CommunicationSchema:
    def __init__(self, *local_queues: LocalQueue) -> None:
        self.local_queues = local_queues


@dataclass(frozen=True)
class RpcOptions:
    timeout: timedelta | None = None


_RPC_MARK = "__xdb_rpc__"
Method = TypeVar("Method", bound=Callable[..., Any])


def rpc(method: Method | None = None, *, timeout: timedelta | None = None) -> Any:
    """Mark a method of a :class:`Process` as an RPC: ``@rpc`` or ``@rpc(timeout=...)``.

    Its signature is ``(self, ctx, input, persistence, communication) -> output``; the
    annotations of ``input`` and of the return value are the types checked on the wire.
    """

    def mark(function: Method) -> Method:
        setattr(function, _RPC_MARK, RpcOptions(timeout))
        return function

    return mark(method) if method is not None else mark


def rpc_options(function: Any) -> RpcOptions | None:
    return getattr(function, _RPC_MARK, None)


class Process:
    """Subclass and declare ``states``, ``persistence`` and ``communication``.

    The process type on the wire is the class name (override :meth:`process_type`).
    """

    states: ClassVar[StateSchema]
    persistence: ClassVar[PersistenceSchema] = PersistenceSchema()
    communication: ClassVar[CommunicationSchema] = CommunicationSchema()

    @classmethod
    def process_type(cls) -> str:
        return cls.__name__
