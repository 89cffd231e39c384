"""The XDB SDK: write processes in Python, host them as a worker, and drive them with a client.

A process is a class with async states (``wait_until`` → ``execute``), attributes it keeps
(local ones, and global ones that are columns of a row in your own DynamoDB table), local
queues, and RPCs. See ``docs/sdk.md``; ``examples/user_signup.py`` is a whole one.

Everything public is importable from here; the submodules are implementation.
"""

from xdb.sdk.client import (
    Client,
    GlobalAttributeConflictMode,
    IdReusePolicy,
    ProcessDescription,
    ProcessStartOptions,
    ProcessStatus,
    SigV4Transport,
    StateOutput,
)
from xdb.sdk.commands import (
    CommandRequest,
    CommandResults,
    LocalQueueCommand,
    LocalQueueResult,
    TimerCommand,
    TimerResult,
)
from xdb.sdk.decision import StateDecision, StateMovement
from xdb.sdk.errors import (
    ClientError,
    DefinitionError,
    EngineUnavailable,
    InvalidRequest,
    LockConflict,
    MultipleOutputs,
    ProcessAlreadyStarted,
    ProcessClosed,
    ProcessFailed,
    ProcessNotCompleted,
    ProcessNotFound,
    ProcessStopped,
    ProcessTimedOut,
    RpcFailed,
    WaitTimedOut,
    XdbError,
)
from xdb.sdk.persistence import Communication, Persistence
from xdb.sdk.process import (
    CommunicationSchema,
    GlobalAttributes,
    LocalAttribute,
    LocalQueue,
    PersistenceSchema,
    Process,
    StateSchema,
    rpc,
)
from xdb.sdk.registry import Registry
from xdb.sdk.state import AsyncState, Context, RetryPolicy, StateOptions
from xdb.sdk.worker import WorkerService

__all__ = [
    "AsyncState",
    "Client",
    "ClientError",
    "CommandRequest",
    "CommandResults",
    "Communication",
    "CommunicationSchema",
    "Context",
    "DefinitionError",
    "EngineUnavailable",
    "GlobalAttributeConflictMode",
    "GlobalAttributes",
    "IdReusePolicy",
    "InvalidRequest",
    "LocalAttribute",
    "LocalQueue",
    "LocalQueueCommand",
    "LocalQueueResult",
    "LockConflict",
    "MultipleOutputs",
    "Persistence",
    "PersistenceSchema",
    "Process",
    "ProcessAlreadyStarted",
    "ProcessClosed",
    "ProcessDescription",
    "ProcessFailed",
    "ProcessNotCompleted",
    "ProcessNotFound",
    "ProcessStartOptions",
    "ProcessStatus",
    "ProcessStopped",
    "ProcessTimedOut",
    "Registry",
    "RetryPolicy",
    "RpcFailed",
    "SigV4Transport",
    "StateDecision",
    "StateMovement",
    "StateOptions",
    "StateOutput",
    "StateSchema",
    "TimerCommand",
    "TimerResult",
    "WaitTimedOut",
    "WorkerService",
    "XdbError",
    "rpc",
]
