"""The domain model: one process execution, as the engine keeps it.

A process execution is a single snapshot (:class:`Execution`) that holds its live state
executions, data attributes, completion outputs and the events of the transition that
produced it. Every change is a pure function from one snapshot to the next
(:mod:`xdb.core`), committed with one conditional write guarded by ``version``.
Closed state executions leave the snapshot; their story stays in the history.

No ``from __future__ import annotations``, for import time (see :mod:`xdb.model.wire`).
"""

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from xdb.model.wire import (
    CommandWaitingType,
    EncodedObject,
    GlobalAttributeConflictMode,
    KeyValue,
    PersistenceLoadingType,
    SearchAttribute,
)


class Domain(BaseModel):
    # Built on first use. Nested defaults are factories (``Field(default_factory=...)``):
    # pydantic deep-copies a model instance given as a default each time it is used.
    model_config = ConfigDict(extra="forbid", defer_build=True)


class Status(StrEnum):
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    TIMEOUT = "TIMEOUT"
    TERMINATED = "TERMINATED"
    CANCELED = "CANCELED"

    @property
    def closed(self) -> bool:
        return self is not Status.RUNNING


class Phase(StrEnum):
    """Where a state execution is. Only WAIT_UNTIL and EXECUTE call the worker."""

    WAIT_UNTIL = "WAIT_UNTIL"
    WAITING = "WAITING"
    EXECUTE = "EXECUTE"


class Api(StrEnum):
    WAIT_UNTIL = "wait_until"
    EXECUTE = "execute"


class Retry(Domain):
    """A retry policy with iWF's defaults filled in; 0 means unlimited."""

    initial_interval: float = 1.0
    backoff_coefficient: float = 2.0
    maximum_interval: float = 100.0
    maximum_attempts: int = 0
    maximum_duration: float = 0.0


class Loading(Domain):
    type: PersistenceLoadingType = PersistenceLoadingType.LOAD_ALL_WITHOUT_LOCKING
    keys: list[str] = []
    keys_are_prefixes: bool = False
    # Keys whose values must not change between the worker call and its commit.
    locking_keys: list[str] = []


class StateOptions(Domain):
    """The options of one state execution, resolved from the iWF wire options."""

    skip_wait_until: bool = False
    wait_until_timeout: float = 30.0
    execute_timeout: float = 30.0
    wait_until_retry: Retry = Field(default_factory=Retry)
    execute_retry: Retry = Field(default_factory=Retry)
    wait_until_loading: Loading = Field(default_factory=Loading)
    execute_loading: Loading = Field(default_factory=Loading)
    wait_until_search_loading: Loading = Field(default_factory=Loading)
    execute_search_loading: Loading = Field(default_factory=Loading)
    # When wait_until runs out of attempts: proceed to execute (True) or fail the process.
    proceed_on_wait_until_failure: bool = False
    # When execute runs out of attempts: go to this state with the same input, or fail.
    recovery_state_id: str | None = None
    recovery_options: "StateOptions | None" = None

    def timeout(self, api: Api) -> float:
        return self.wait_until_timeout if api is Api.WAIT_UNTIL else self.execute_timeout

    def retry(self, api: Api) -> Retry:
        return self.wait_until_retry if api is Api.WAIT_UNTIL else self.execute_retry

    def loading(self, api: Api) -> Loading:
        return self.wait_until_loading if api is Api.WAIT_UNTIL else self.execute_loading

    def search_loading(self, api: Api) -> Loading:
        if api is Api.WAIT_UNTIL:
            return self.wait_until_search_loading
        return self.execute_search_loading


class Timer(Domain):
    command_id: str
    fire_at: float
    fired: bool = False


class ChannelWait(Domain):
    """A command waiting for one message of a signal or internal channel."""

    command_id: str
    channel: str
    internal: bool
    value: EncodedObject | None = None
    received: bool = False


class Waiting(Domain):
    """What a state waits for between wait_until and execute."""

    waiting_type: CommandWaitingType = CommandWaitingType.ALL_COMPLETED
    timers: list[Timer] = []
    channels: list[ChannelWait] = []
    combinations: list[list[str]] = []


class Message(Domain):
    """A message in a channel (a signal channel or an internal channel / local queue)."""

    value: EncodedObject | None = None


class StateExecution(Domain):
    id: str  # "<stateId>-<n>"
    state_id: str
    wait_for_key: str | None = None
    input: EncodedObject | None = None
    options: StateOptions = Field(default_factory=StateOptions)
    phase: Phase
    attempt: int = 1
    first_attempt_at: float
    # The earliest time of the next worker call: a retry's backoff, or a delayed start.
    next_call_at: float | None = None
    last_error: str | None = None
    waiting: Waiting | None = None
    wait_until_failed: bool = False
    locals: list[KeyValue] = []

    @property
    def api(self) -> Api:
        return Api.WAIT_UNTIL if self.phase is Phase.WAIT_UNTIL else Api.EXECUTE


class Completion(Domain):
    state_id: str
    state_execution_id: str
    output: EncodedObject | None = None


class EventKind(StrEnum):
    PROCESS_STARTED = "PROCESS_STARTED"
    STATE_STARTED = "STATE_STARTED"
    WAIT_UNTIL_COMPLETED = "WAIT_UNTIL_COMPLETED"
    TIMER_FIRED = "TIMER_FIRED"
    EXECUTE_COMPLETED = "EXECUTE_COMPLETED"
    ATTEMPT_FAILED = "ATTEMPT_FAILED"
    STATE_FAILED = "STATE_FAILED"
    MESSAGE_RECEIVED = "MESSAGE_RECEIVED"
    TIMER_SKIPPED = "TIMER_SKIPPED"
    RPC_COMMITTED = "RPC_COMMITTED"
    DATA_ATTRIBUTES_SET = "DATA_ATTRIBUTES_SET"
    SEARCH_ATTRIBUTES_SET = "SEARCH_ATTRIBUTES_SET"
    # An event the worker asked to record (iWF's recordEvents).
    RECORDED = "RECORDED"
    PROCESS_CLOSED = "PROCESS_CLOSED"


class Event(Domain):
    """One thing that happened to an execution, for its history and the log."""

    at: float
    kind: EventKind
    state_execution_id: str | None = None
    detail: str = ""
    # STATE_STARTED only: what the state began with, so a reset can begin it again.
    input: EncodedObject | None = None
    options: StateOptions | None = None
    wait_for_key: str | None = None


class VersionEvents(Domain):
    """The events of one earlier version, carried in the snapshot until a history page
    takes them (see :mod:`xdb.store.dynamodb_store`)."""

    version: int
    events: list[Event]


class GlobalBinding(Domain):
    """XDB: the row of a user table that holds this process's global attributes."""

    table: str
    key_name: str
    key_value: str
    attributes: list[str]


class GlobalWrite(Domain):
    """Global attribute changes of one transition, written in the same transaction as the
    snapshot. ``None`` removes a column. ``create_mode`` is set only by a start's initial
    write, and says what to do when the row already exists."""

    values: dict[str, EncodedObject | None] = {}
    create_mode: GlobalAttributeConflictMode | None = None


class Execution(Domain):
    workflow_id: str
    run_id: str
    workflow_type: str
    worker_url: str
    status: Status = Status.RUNNING
    version: int = 1
    started_at: float
    timeout_at: float | None = None
    closed_at: float | None = None
    request_id: str | None = None
    data_attributes: dict[str, EncodedObject] = {}
    # Data attributes whose (large) value the store keeps in an item of its own, by the
    # digest of the value (see xdb.store.dynamodb_store); the store's reads fill them in.
    stored_values: dict[str, str] = {}
    search_attributes: dict[str, SearchAttribute] = {}
    global_binding: GlobalBinding | None = None
    # This version's writes to the bound row (cleared by the next transition, like events).
    global_write: GlobalWrite | None = None
    # The last execution number used per state id: the next one is "<stateId>-<n+1>".
    counters: dict[str, int] = {}
    states: dict[str, StateExecution] = {}
    graceful_complete_requested: bool = False
    # Messages nobody has consumed yet, first in first out, per channel name.
    signals: dict[str, list[Message]] = {}
    channels: dict[str, list[Message]] = {}
    # Dedup ids of local-queue messages already accepted, per channel (XDB extension).
    dedup_ids: dict[str, list[str]] = {}
    # Timers skipped before their state asked for them: "<stateExecutionId>#<commandId or index>".
    skipped_timers: list[str] = []
    # What waitForStateCompletion may wait for, as declared at start, and what completed.
    wait_for_state_ids: list[str] = []
    wait_for_state_execution_ids: list[str] = []
    state_completions: dict[str, Completion] = {}
    results: list[Completion] = []
    error_type: str | None = None
    error_message: str | None = None
    # The events of the transition that produced this version (the stream function logs
    # them), and those of earlier versions not yet written to a history page: they ride
    # in the snapshot while it has room in the write units it needs anyway.
    events: list[Event] = []
    earlier_events: list[VersionEvents] = []
    # The first version of the history page the last left-out events went to: until the
    # stream function has written it, the history is not whole (see ExecutionStore.history).
    owed_page: int | None = None
