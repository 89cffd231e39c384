"""The iWF wire protocol, as pydantic models.

Field names follow the iWF IDL (``iwf.yaml`` of indeedeng/iwf-idl), which the public
``iwf-python-sdk`` is generated from. Two families live here:

* **Engine API** requests (``/api/v1/workflow/...``): inbound from clients, so they
  reject unknown fields (``Inbound``): a typo is an error, not a silent no-op.
* **Worker protocol** (``/api/v1/workflowState/start|decide``): we send requests and
  read responses. Responses tolerate unknown fields (``Tolerant``), because workers of
  newer SDK versions may add fields we do not know yet.

XDB extensions are extra optional fields only; none changes the meaning of an iWF field.

No ``from __future__ import annotations`` here: pydantic would then evaluate every
annotation string when each class is created, a third of this module's import time (a
Lambda cold start); only forward references are quoted.
"""

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


class _Wire(BaseModel):
    # Schemas are built on first use, not at import: a Lambda handler needs a handful of
    # these models, and building all of them would add ~100 ms to every cold start.
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, defer_build=True
    )

    def dump(self) -> dict[str, Any]:
        """The JSON-ready dict with wire names, leaving out unset fields."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


class Inbound(_Wire):
    """A request a client sends us: unknown fields are rejected."""

    model_config = ConfigDict(extra="forbid")


class Tolerant(_Wire):
    """A shape a worker or SDK sends us where unknown fields are ignored."""

    model_config = ConfigDict(extra="ignore")


# ---------------------------------------------------------------- shared shapes


class EncodedObject(Tolerant):
    """An opaque value: the engine stores and forwards it, never decodes it."""

    encoding: str | None = None
    data: str | None = None
    ext_store_id: str | None = None
    ext_path: str | None = None


class KeyValue(Tolerant):
    key: str
    value: EncodedObject | None = None


class InterStateChannelPublishing(Tolerant):
    channel_name: str = Field(min_length=1)
    value: EncodedObject | None = None
    # XDB extension: the same dedup id twice on one channel is stored once.
    dedup_id: str | None = Field(default=None, min_length=1, max_length=256)


class SearchAttributeValueType(StrEnum):
    KEYWORD = "KEYWORD"
    TEXT = "TEXT"
    DATETIME = "DATETIME"
    INT = "INT"
    DOUBLE = "DOUBLE"
    BOOL = "BOOL"
    KEYWORD_ARRAY = "KEYWORD_ARRAY"


class SearchAttribute(Tolerant):
    """A typed, indexed value. Which field holds it depends on ``value_type``;
    :mod:`xdb.core.search_attributes` checks that they agree."""

    key: str = Field(min_length=1)
    value_type: SearchAttributeValueType | None = None
    string_value: str | None = None
    integer_value: int | None = None
    double_value: float | None = Field(default=None, allow_inf_nan=False)
    bool_value: bool | None = None
    string_array_value: list[str] | None = None


class SearchAttributeKeyAndType(Tolerant):
    key: str = Field(min_length=1)
    value_type: SearchAttributeValueType | None = None


class RetryPolicy(Tolerant):
    initial_interval_seconds: int | None = Field(default=None, ge=0)
    backoff_coefficient: float | None = Field(default=None, ge=1)
    maximum_interval_seconds: int | None = Field(default=None, ge=0)
    maximum_attempts: int | None = Field(default=None, ge=0)
    maximum_attempts_duration_seconds: int | None = Field(default=None, ge=0)


class PersistenceLoadingType(StrEnum):
    LOAD_ALL_WITHOUT_LOCKING = "LOAD_ALL_WITHOUT_LOCKING"
    LOAD_PARTIAL_WITHOUT_LOCKING = "LOAD_PARTIAL_WITHOUT_LOCKING"
    LOAD_PARTIAL_WITH_EXCLUSIVE_LOCK = "LOAD_PARTIAL_WITH_EXCLUSIVE_LOCK"
    LOAD_NONE = "LOAD_NONE"
    LOAD_ALL_WITH_PARTIAL_LOCK = "LOAD_ALL_WITH_PARTIAL_LOCK"


class PersistenceLoadingPolicy(Tolerant):
    persistence_loading_type: PersistenceLoadingType | None = None
    partial_loading_keys: list[str] | None = None
    locking_keys: list[str] | None = None
    use_key_as_prefix: bool | None = None
    lazy_loading_large_data_attributes: bool | None = None


class WaitUntilApiFailurePolicy(StrEnum):
    FAIL_WORKFLOW_ON_FAILURE = "FAIL_WORKFLOW_ON_FAILURE"
    PROCEED_ON_FAILURE = "PROCEED_ON_FAILURE"


class ExecuteApiFailurePolicy(StrEnum):
    FAIL_WORKFLOW_ON_EXECUTE_API_FAILURE = "FAIL_WORKFLOW_ON_EXECUTE_API_FAILURE"
    PROCEED_TO_CONFIGURED_STATE = "PROCEED_TO_CONFIGURED_STATE"


class WorkflowStateOptions(Tolerant):
    """Per-state options. The iWF IDL keeps old (start/decide) and new
    (waitUntil/execute) names side by side; :mod:`xdb.core.options` resolves them."""

    search_attributes_loading_policy: PersistenceLoadingPolicy | None = None
    wait_until_api_search_attributes_loading_policy: PersistenceLoadingPolicy | None = None
    execute_api_search_attributes_loading_policy: PersistenceLoadingPolicy | None = None
    data_objects_loading_policy: PersistenceLoadingPolicy | None = None
    data_attributes_loading_policy: PersistenceLoadingPolicy | None = None
    wait_until_api_data_attributes_loading_policy: PersistenceLoadingPolicy | None = None
    execute_api_data_attributes_loading_policy: PersistenceLoadingPolicy | None = None
    start_api_timeout_seconds: int | None = Field(default=None, ge=1)
    decide_api_timeout_seconds: int | None = Field(default=None, ge=1)
    wait_until_api_timeout_seconds: int | None = Field(default=None, ge=1)
    execute_api_timeout_seconds: int | None = Field(default=None, ge=1)
    start_api_retry_policy: RetryPolicy | None = None
    decide_api_retry_policy: RetryPolicy | None = None
    wait_until_api_retry_policy: RetryPolicy | None = None
    execute_api_retry_policy: RetryPolicy | None = None
    start_api_failure_policy: str | None = None
    wait_until_api_failure_policy: WaitUntilApiFailurePolicy | None = None
    execute_api_failure_policy: ExecuteApiFailurePolicy | None = None
    execute_api_failure_proceed_state_id: str | None = None
    execute_api_failure_proceed_state_options: "WorkflowStateOptions | None" = None
    skip_start_api: bool | None = None
    skip_wait_until: bool | None = None


class IdReusePolicy(StrEnum):
    ALLOW_IF_PREVIOUS_EXISTS_ABNORMALLY = "ALLOW_IF_PREVIOUS_EXISTS_ABNORMALLY"  # iWF's typo, kept
    ALLOW_IF_PREVIOUS_EXITS_ABNORMALLY = "ALLOW_IF_PREVIOUS_EXITS_ABNORMALLY"
    ALLOW_IF_NO_RUNNING = "ALLOW_IF_NO_RUNNING"
    DISALLOW_REUSE = "DISALLOW_REUSE"
    ALLOW_TERMINATE_IF_RUNNING = "ALLOW_TERMINATE_IF_RUNNING"


class WorkflowAlreadyStartedOptions(Tolerant):
    ignore_already_started_error: bool
    request_id: str | None = None


class GlobalAttributeConflictMode(StrEnum):
    """XDB: what the initial write of a start does when the bound row already exists."""

    ERROR = "ERROR"  # refuse the start
    IGNORE = "IGNORE"  # keep the row as it is
    OVERRIDE = "OVERRIDE"  # write the initial values over it


class GlobalAttributeBinding(Inbound):
    """XDB: binds a process to one row of a user's DynamoDB table (its global attributes)."""

    table_name: str = Field(min_length=3, max_length=255)
    primary_key: str = Field(min_length=1, max_length=255)
    primary_key_value: str = Field(min_length=1, max_length=2048)
    # The columns of the row the process reads and writes.
    attributes: list[str] = Field(min_length=1)
    initial_upsert: list[KeyValue] | None = None
    conflict_mode: GlobalAttributeConflictMode = GlobalAttributeConflictMode.ERROR


class WorkflowStartOptions(Tolerant):
    workflow_id_reuse_policy: str | None = Field(default=None, alias="workflowIDReusePolicy")
    id_reuse_policy: IdReusePolicy | None = None
    cron_schedule: str | None = None
    workflow_start_delay_seconds: int | None = Field(default=None, ge=0)
    retry_policy: dict[str, Any] | None = None
    search_attributes: list[SearchAttribute] | None = None
    data_attributes: list[KeyValue] | None = None
    workflow_config_override: dict[str, Any] | None = None
    use_memo_for_data_attributes: bool | None = None
    workflow_already_started_options: WorkflowAlreadyStartedOptions | None = None
    global_attributes: GlobalAttributeBinding | None = None  # XDB


# ---------------------------------------------------------------- engine API


class WorkflowStartRequest(Inbound):
    workflow_id: str = Field(min_length=1, max_length=512)
    iwf_workflow_type: str = Field(min_length=1, max_length=512)
    workflow_timeout_seconds: int = Field(ge=0)
    iwf_worker_url: str = Field(min_length=1, max_length=2048)
    start_state_id: str | None = Field(default=None, min_length=1, max_length=512)
    wait_for_completion_state_ids: list[str] | None = None
    wait_for_completion_state_execution_ids: list[str] | None = None
    state_input: EncodedObject | None = None
    state_options: WorkflowStateOptions | None = None
    workflow_start_options: WorkflowStartOptions | None = None


class WorkflowStartResponse(_Wire):
    workflow_run_id: str


class WorkflowGetRequest(Inbound):
    workflow_id: str = Field(min_length=1)
    workflow_run_id: str | None = None
    needs_results: bool | None = None
    wait_time_seconds: int | None = Field(default=None, ge=0)


class WorkflowStatus(StrEnum):
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    TIMEOUT = "TIMEOUT"
    TERMINATED = "TERMINATED"
    CANCELED = "CANCELED"


class WorkflowErrorType(StrEnum):
    STATE_DECISION_FAILING_WORKFLOW_ERROR_TYPE = "STATE_DECISION_FAILING_WORKFLOW_ERROR_TYPE"
    CLIENT_API_FAILING_WORKFLOW_ERROR_TYPE = "CLIENT_API_FAILING_WORKFLOW_ERROR_TYPE"
    STATE_API_FAIL_ERROR_TYPE = "STATE_API_FAIL_ERROR_TYPE"
    INVALID_USER_WORKFLOW_CODE_ERROR_TYPE = "INVALID_USER_WORKFLOW_CODE_ERROR_TYPE"
    SERVER_INTERNAL_ERROR_TYPE = "SERVER_INTERNAL_ERROR_TYPE"


class StateCompletionOutput(_Wire):
    completed_state_id: str
    completed_state_execution_id: str
    completed_state_output: EncodedObject | None = None


class WorkflowGetResponse(_Wire):
    workflow_run_id: str
    workflow_status: WorkflowStatus
    results: list[StateCompletionOutput] | None = None
    error_type: WorkflowErrorType | None = None
    error_message: str | None = None


class WorkflowStopType(StrEnum):
    CANCEL = "CANCEL"
    TERMINATE = "TERMINATE"
    FAIL = "FAIL"


class WorkflowStopRequest(Inbound):
    workflow_id: str = Field(min_length=1)
    workflow_run_id: str | None = None
    reason: str | None = None
    stop_type: WorkflowStopType | None = None


class WorkflowGetDataObjectsRequest(Inbound):
    workflow_id: str = Field(min_length=1)
    workflow_run_id: str | None = None
    keys: list[str] | None = None
    use_memo_for_data_attributes: bool | None = None


class WorkflowGetDataObjectsResponse(_Wire):
    objects: list[KeyValue]


class WorkflowSetDataObjectsRequest(Inbound):
    workflow_id: str = Field(min_length=1)
    workflow_run_id: str | None = None
    objects: list[KeyValue] | None = None


class WorkflowSignalRequest(Inbound):
    workflow_id: str = Field(min_length=1)
    workflow_run_id: str | None = None
    signal_channel_name: str = Field(min_length=1)
    signal_value: EncodedObject | None = None


class PublishToInternalChannelRequest(Inbound):
    workflow_id: str = Field(min_length=1)
    workflow_run_id: str | None = None
    messages: list[InterStateChannelPublishing] | None = None


class WorkflowSkipTimerRequest(Inbound):
    workflow_id: str = Field(min_length=1)
    workflow_run_id: str | None = None
    workflow_state_execution_id: str = Field(min_length=1)
    timer_command_id: str | None = None
    timer_command_index: int | None = Field(default=None, ge=0)


class WorkflowWaitForStateCompletionRequest(Inbound):
    workflow_id: str = Field(min_length=1)
    state_execution_id: str | None = None
    state_id: str | None = None
    wait_for_key: str | None = None
    wait_time_seconds: int | None = Field(default=None, ge=0)


class WorkflowWaitForStateCompletionResponse(_Wire):
    state_completion_output: StateCompletionOutput | None = None


class WorkflowRpcRequest(Inbound):
    workflow_id: str = Field(min_length=1)
    workflow_run_id: str | None = None
    rpc_name: str = Field(min_length=1)
    input: EncodedObject | None = None
    search_attributes_loading_policy: PersistenceLoadingPolicy | None = None
    data_attributes_loading_policy: PersistenceLoadingPolicy | None = None
    timeout_seconds: int | None = Field(default=None, ge=0)
    use_memo_for_data_attributes: bool | None = None
    search_attributes: list[SearchAttributeKeyAndType] | None = None


class WorkflowRpcResponse(_Wire):
    output: EncodedObject | None = None


class WorkflowGetSearchAttributesRequest(Inbound):
    workflow_id: str = Field(min_length=1)
    workflow_run_id: str | None = None
    keys: list[SearchAttributeKeyAndType] | None = None


class WorkflowGetSearchAttributesResponse(_Wire):
    search_attributes: list[SearchAttribute]


class WorkflowSetSearchAttributesRequest(Inbound):
    workflow_id: str = Field(min_length=1)
    workflow_run_id: str | None = None
    search_attributes: list[SearchAttribute] | None = None


class WorkflowSearchRequest(Inbound):
    query: str = Field(min_length=1, max_length=4096)
    page_size: int | None = Field(default=None, ge=1, le=1000)
    next_page_token: str | None = None


class WorkflowSearchResponseEntry(_Wire):
    workflow_id: str
    workflow_run_id: str


class WorkflowSearchResponse(_Wire):
    workflow_executions: list[WorkflowSearchResponseEntry]
    next_page_token: str | None = None


class WorkflowResetType(StrEnum):
    HISTORY_EVENT_ID = "HISTORY_EVENT_ID"
    BEGINNING = "BEGINNING"
    HISTORY_EVENT_TIME = "HISTORY_EVENT_TIME"
    STATE_ID = "STATE_ID"
    STATE_EXECUTION_ID = "STATE_EXECUTION_ID"


class WorkflowResetRequest(Inbound):
    workflow_id: str = Field(min_length=1)
    workflow_run_id: str | None = None
    reset_type: WorkflowResetType
    history_event_id: int | None = None
    reason: str | None = None
    history_event_time: str | None = None
    state_id: str | None = None
    state_execution_id: str | None = None
    skip_signal_reapply: bool | None = None
    skip_update_reapply: bool | None = None


class WorkflowResetResponse(_Wire):
    workflow_run_id: str


class ErrorSubStatus(StrEnum):
    UNCATEGORIZED_SUB_STATUS = "UNCATEGORIZED_SUB_STATUS"
    WORKFLOW_ALREADY_STARTED_SUB_STATUS = "WORKFLOW_ALREADY_STARTED_SUB_STATUS"
    WORKFLOW_NOT_EXISTS_SUB_STATUS = "WORKFLOW_NOT_EXISTS_SUB_STATUS"
    WORKER_API_ERROR = "WORKER_API_ERROR"
    LONG_POLL_TIME_OUT_SUB_STATUS = "LONG_POLL_TIME_OUT_SUB_STATUS"


class ErrorResponse(_Wire):
    detail: str
    sub_status: ErrorSubStatus = ErrorSubStatus.UNCATEGORIZED_SUB_STATUS
    # XDB extension: the error's stable machine code (``xdb.core.errors``), which the
    # XDB SDK maps to its exceptions; iWF clients read ``subStatus`` as before.
    code: str | None = None
    original_worker_error_detail: str | None = None
    original_worker_error_type: str | None = None
    original_worker_error_status: int | None = None


class HealthInfo(_Wire):
    condition: str
    hostname: str
    duration: int


# ---------------------------------------------------------------- worker protocol

WAIT_UNTIL_PATH = "/api/v1/workflowState/start"
EXECUTE_PATH = "/api/v1/workflowState/decide"
RPC_PATH = "/api/v1/workflowWorker/rpc"


class Context(_Wire):
    workflow_id: str
    workflow_run_id: str
    workflow_started_timestamp: int
    state_execution_id: str | None = None
    first_attempt_timestamp: int | None = None
    attempt: int | None = None


class TimerCommand(Tolerant):
    command_id: str | None = None
    firing_unix_timestamp_seconds: int | None = None
    duration_seconds: int | None = None


class SignalCommand(Tolerant):
    command_id: str | None = None
    signal_channel_name: str
    at_least: int | None = None
    at_most: int | None = None


class InterStateChannelCommand(Tolerant):
    command_id: str | None = None
    channel_name: str
    at_least: int | None = None
    at_most: int | None = None


class CommandCombination(Tolerant):
    command_ids: list[str] = []


class CommandWaitingType(StrEnum):
    ALL_COMPLETED = "ALL_COMPLETED"
    ANY_COMPLETED = "ANY_COMPLETED"
    ANY_COMBINATION_COMPLETED = "ANY_COMBINATION_COMPLETED"


class CommandRequest(Tolerant):
    decider_trigger_type: str | None = None  # the IDL's older name for the waiting type
    command_waiting_type: CommandWaitingType | None = None
    timer_commands: list[TimerCommand] | None = None
    signal_commands: list[SignalCommand] | None = None
    inter_state_channel_commands: list[InterStateChannelCommand] | None = None
    command_combinations: list[CommandCombination] | None = None


class TimerResult(_Wire):
    command_id: str
    timer_status: str  # SCHEDULED | FIRED


class SignalResult(_Wire):
    command_id: str
    signal_channel_name: str
    signal_request_status: str  # WAITING | RECEIVED
    signal_value: EncodedObject | None = None


class InterStateChannelResult(_Wire):
    command_id: str
    channel_name: str
    request_status: str  # WAITING | RECEIVED
    value: EncodedObject | None = None


class CommandResults(_Wire):
    signal_results: list[SignalResult] | None = None
    inter_state_channel_results: list[InterStateChannelResult] | None = None
    timer_results: list[TimerResult] | None = None
    state_start_api_succeeded: bool | None = None
    state_wait_until_failed: bool | None = None


# Reserved state ids: moving to one closes the process or ends the thread.
GRACEFUL_COMPLETE = "_SYS_GRACEFUL_COMPLETING_WORKFLOW"
FORCE_COMPLETE = "_SYS_FORCE_COMPLETING_WORKFLOW"
FORCE_FAIL = "_SYS_FORCE_FAILING_WORKFLOW"
DEAD_END = "_SYS_DEAD_END"


class StateMovement(Tolerant):
    state_id: str
    state_input: EncodedObject | None = None
    state_options: WorkflowStateOptions | None = None
    wait_for_key: str | None = None


class WorkflowConditionalCloseType(StrEnum):
    FORCE_COMPLETE_ON_INTERNAL_CHANNEL_EMPTY = "FORCE_COMPLETE_ON_INTERNAL_CHANNEL_EMPTY"
    FORCE_COMPLETE_ON_SIGNAL_CHANNEL_EMPTY = "FORCE_COMPLETE_ON_SIGNAL_CHANNEL_EMPTY"
    GRACEFUL_COMPLETE_ON_ALL_CHANNELS_EMPTY = "GRACEFUL_COMPLETE_ON_ALL_CHANNELS_EMPTY"


class WorkflowConditionalClose(Tolerant):
    conditional_close_type: WorkflowConditionalCloseType
    channel_name: str | None = None
    close_input: EncodedObject | None = None


class StateDecision(Tolerant):
    next_states: list[StateMovement] | None = None
    conditional_close: WorkflowConditionalClose | None = None


class WorkflowStateWaitUntilRequest(_Wire):
    context: Context
    workflow_type: str
    workflow_state_id: str
    state_input: EncodedObject | None = None
    search_attributes: list[SearchAttribute] = []
    data_objects: list[KeyValue] = []
    global_attributes: list[KeyValue] | None = None  # XDB, only when bound


class WorkflowStateWaitUntilResponse(Tolerant):
    upsert_search_attributes: list[SearchAttribute] | None = None
    upsert_data_objects: list[KeyValue] | None = None
    command_request: CommandRequest | None = None
    upsert_state_locals: list[KeyValue] | None = None
    record_events: list[KeyValue] | None = None
    upsert_global_attributes: list[KeyValue] | None = None  # XDB
    publish_to_inter_state_channel: list[InterStateChannelPublishing] | None = None


class WorkflowStateExecuteRequest(_Wire):
    context: Context
    workflow_type: str
    workflow_state_id: str
    state_input: EncodedObject | None = None
    search_attributes: list[SearchAttribute] = []
    # The IDL spells this one with a capital D; the SDKs read it that way.
    data_objects: list[KeyValue] = Field(default=[], alias="DataObjects")
    global_attributes: list[KeyValue] | None = None  # XDB, only when bound
    state_locals: list[KeyValue] = []
    command_results: CommandResults


class WorkflowStateExecuteResponse(Tolerant):
    state_decision: StateDecision | None = None
    upsert_search_attributes: list[SearchAttribute] | None = None
    upsert_data_objects: list[KeyValue] | None = None
    record_events: list[KeyValue] | None = None
    upsert_state_locals: list[KeyValue] | None = None
    upsert_global_attributes: list[KeyValue] | None = None  # XDB
    publish_to_inter_state_channel: list[InterStateChannelPublishing] | None = None


class WorkerErrorResponse(Tolerant):
    detail: str | None = None
    error_type: str | None = None


class ChannelInfo(_Wire):
    size: int


class WorkflowWorkerRpcRequest(_Wire):
    context: Context
    workflow_type: str
    rpc_name: str
    input: EncodedObject | None = None
    search_attributes: list[SearchAttribute] = []
    data_attributes: list[KeyValue] = []
    global_attributes: list[KeyValue] | None = None  # XDB, only when bound
    signal_channel_infos: dict[str, ChannelInfo] = {}
    internal_channel_infos: dict[str, ChannelInfo] = {}


class WorkflowWorkerRpcResponse(Tolerant):
    output: EncodedObject | None = None
    state_decision: StateDecision | None = None
    upsert_search_attributes: list[SearchAttribute] | None = None
    upsert_data_attributes: list[KeyValue] | None = None
    record_events: list[KeyValue] | None = None
    upsert_state_locals: list[KeyValue] | None = None
    upsert_global_attributes: list[KeyValue] | None = None  # XDB
    publish_to_inter_state_channel: list[InterStateChannelPublishing] | None = None
