"""Use cases of the engine API: start, get, wait, stop, messages, timers, data attributes."""

from __future__ import annotations

import random
import socket
import time
from collections.abc import Callable
from typing import TypeVar

from xdb.core import commands, search_attributes, search_query, transitions
from xdb.core import options as state_options
from xdb.core.errors import (
    BadRequest,
    LongPollTimedOut,
    NotSupported,
    ProcessClosed,
    VersionConflict,
)
from xdb.core.workers import check_worker_url
from xdb.engine.commit import MAX_CONFLICTS, commit, load
from xdb.engine.runtime import Engine
from xdb.model.execution import Completion, Event, EventKind, Execution, GlobalBinding
from xdb.model.wire import (
    GlobalAttributeBinding,
    GlobalAttributeConflictMode,
    HealthInfo,
    IdReusePolicy,
    KeyValue,
    PublishToInternalChannelRequest,
    StateCompletionOutput,
    WorkflowErrorType,
    WorkflowGetDataObjectsRequest,
    WorkflowGetDataObjectsResponse,
    WorkflowGetRequest,
    WorkflowGetResponse,
    WorkflowGetSearchAttributesRequest,
    WorkflowGetSearchAttributesResponse,
    WorkflowResetRequest,
    WorkflowResetResponse,
    WorkflowResetType,
    WorkflowSearchRequest,
    WorkflowSearchResponse,
    WorkflowSearchResponseEntry,
    WorkflowSetDataObjectsRequest,
    WorkflowSetSearchAttributesRequest,
    WorkflowSignalRequest,
    WorkflowSkipTimerRequest,
    WorkflowStartRequest,
    WorkflowStartResponse,
    WorkflowStatus,
    WorkflowStopRequest,
    WorkflowStopType,
    WorkflowWaitForStateCompletionRequest,
    WorkflowWaitForStateCompletionResponse,
)

T = TypeVar("T")

_STARTED_AT = time.time()


def start(engine: Engine, request: WorkflowStartRequest) -> WorkflowStartResponse:
    spec = _start_spec(engine, request)
    for tries in range(1, MAX_CONFLICTS + 1):
        if tries > 1:
            engine.sleep(random.uniform(0, 0.01 * tries))
        current = engine.store.current(spec.workflow_id)
        outcome = commands.start(spec, current=current, run_id=engine.new_id(), now=engine.clock())
        if outcome.existing:
            return WorkflowStartResponse(workflow_run_id=outcome.execution.run_id)
        try:
            engine.store.create(
                outcome.execution,
                replacing=outcome.replaced,
                read_version=current.version if current else None,
            )
        except VersionConflict:
            continue  # someone started or changed this id meanwhile: decide again
        return WorkflowStartResponse(workflow_run_id=outcome.execution.run_id)
    raise VersionConflict(
        f"process {spec.workflow_id!r} is being started concurrently; gave up after "
        f"{MAX_CONFLICTS} tries: try again",
        workflow_id=spec.workflow_id,
    )


def _start_spec(engine: Engine, request: WorkflowStartRequest) -> commands.StartSpec:
    options = request.workflow_start_options
    unsupported = []
    if options is not None:
        for name, value in (
            ("cronSchedule", options.cron_schedule),
            ("retryPolicy", options.retry_policy),
            ("workflowIDReusePolicy", options.workflow_id_reuse_policy),
        ):
            if value:
                unsupported.append(name)
    if unsupported:
        raise NotSupported(
            f"not supported yet by XDB: {', '.join(unsupported)}", fields=unsupported
        )
    check_worker_url(request.iwf_worker_url, engine.settings.worker_urls)
    already = options.workflow_already_started_options if options else None
    binding = options.global_attributes if options else None
    if binding is not None:
        _check_binding(engine, binding)
    initial = (options.data_attributes if options else None) or []
    return commands.StartSpec(
        workflow_id=request.workflow_id,
        workflow_type=request.iwf_workflow_type,
        worker_url=request.iwf_worker_url,
        timeout_seconds=request.workflow_timeout_seconds,
        start_state_id=request.start_state_id,
        input=request.state_input,
        options=state_options.resolve(
            request.state_options, max_api_timeout=engine.settings.max_api_timeout
        ),
        data_attributes={kv.key: kv.value for kv in initial if kv.value is not None},
        search_attributes=(options.search_attributes if options else None) or [],
        global_binding=GlobalBinding(
            table=binding.table_name,
            key_name=binding.primary_key,
            key_value=binding.primary_key_value,
            attributes=binding.attributes,
        )
        if binding
        else None,
        global_initial=(binding.initial_upsert if binding else None) or [],
        global_conflict_mode=binding.conflict_mode
        if binding
        else GlobalAttributeConflictMode.ERROR,
        reuse_policy=(options.id_reuse_policy if options else None)
        or IdReusePolicy.ALLOW_IF_NO_RUNNING,
        request_id=already.request_id if already else None,
        ignore_already_started=bool(already and already.ignore_already_started_error),
        start_delay_seconds=(options.workflow_start_delay_seconds if options else None) or 0,
        wait_for_state_ids=request.wait_for_completion_state_ids or [],
        wait_for_state_execution_ids=request.wait_for_completion_state_execution_ids or [],
    )


def _check_binding(engine: Engine, binding: GlobalAttributeBinding) -> None:
    allowed = engine.settings.global_attribute_tables
    if binding.table_name not in allowed:
        raise BadRequest(
            f"table {binding.table_name!r} is not one this deployment may write global "
            f"attributes to (allowed: {', '.join(sorted(allowed)) or 'none'}; "
            "see XDB_GLOBAL_ATTRIBUTE_TABLES)"
        )
    if binding.primary_key in binding.attributes:
        raise BadRequest(f"the primary key {binding.primary_key!r} cannot be a global attribute")


def get(engine: Engine, request: WorkflowGetRequest) -> WorkflowGetResponse:
    return describe(
        load(engine, request.workflow_id, request.workflow_run_id), bool(request.needs_results)
    )


def get_with_wait(engine: Engine, request: WorkflowGetRequest) -> WorkflowGetResponse:
    """Like :func:`get`, waiting (polling the table) until the run closes or the wait ends."""

    def closed(execution: Execution) -> WorkflowGetResponse | None:
        return describe(execution, bool(request.needs_results)) if execution.status.closed else None

    return _long_poll(
        engine, request.workflow_id, request.workflow_run_id, request.wait_time_seconds, closed
    )


def wait_for_state_completion(
    engine: Engine, request: WorkflowWaitForStateCompletionRequest
) -> WorkflowWaitForStateCompletionResponse:
    """Wait until a state execution declared at start completes; answer its output."""
    if request.state_execution_id:
        key = request.state_execution_id
        state_id = key.rsplit("-", 1)[0]
    elif request.state_id and request.wait_for_key:
        key = transitions.wait_for_key(request.state_id, request.wait_for_key)
        state_id = request.state_id
    else:
        raise BadRequest("give stateExecutionId, or stateId and waitForKey")

    def completed(execution: Execution) -> WorkflowWaitForStateCompletionResponse | None:
        if (
            key not in execution.wait_for_state_execution_ids
            and state_id not in execution.wait_for_state_ids
        ):
            raise BadRequest(
                f"{key!r} was not declared when the process started (in "
                "waitForCompletionStateExecutionIds, or its state id in waitForCompletionStateIds)"
            )
        done = execution.state_completions.get(key)
        if done is not None:
            return WorkflowWaitForStateCompletionResponse(state_completion_output=_output(done))
        if execution.status.closed:
            raise ProcessClosed(
                f"process {execution.workflow_id!r} closed ({execution.status}) before {key!r} completed",
                workflow_id=execution.workflow_id,
            )
        return None

    return _long_poll(engine, request.workflow_id, None, request.wait_time_seconds, completed)


def _long_poll(
    engine: Engine,
    workflow_id: str,
    run_id: str | None,
    wait_time_seconds: int | None,
    answer: Callable[[Execution], T | None],
) -> T:
    """Poll the table until ``answer`` has one, for at most the long-poll time."""
    wait = engine.settings.long_poll_seconds
    if wait_time_seconds:
        wait = min(wait, float(wait_time_seconds))
    deadline = engine.clock() + wait
    while True:
        result = answer(load(engine, workflow_id, run_id))
        if result is not None:
            return result
        if engine.clock() >= deadline:
            raise LongPollTimedOut(
                f"process {workflow_id!r}: still waiting after {wait:g}s", workflow_id=workflow_id
            )
        engine.sleep(engine.settings.long_poll_interval)


def _output(completion: Completion) -> StateCompletionOutput:
    return StateCompletionOutput(
        completed_state_id=completion.state_id,
        completed_state_execution_id=completion.state_execution_id,
        completed_state_output=completion.output,
    )


def signal(engine: Engine, request: WorkflowSignalRequest) -> None:
    channel, value = request.signal_channel_name, request.signal_value
    _change(
        engine,
        request.workflow_id,
        request.workflow_run_id,
        lambda e, now: commands.receive_signal(e, channel, value, now=now),
    )


def publish_to_internal_channel(engine: Engine, request: PublishToInternalChannelRequest) -> None:
    messages = request.messages or []
    _change(
        engine,
        request.workflow_id,
        request.workflow_run_id,
        lambda e, now: commands.publish_messages(e, messages, now=now),
    )


def skip_timer(engine: Engine, request: WorkflowSkipTimerRequest) -> None:
    if request.timer_command_id is None and request.timer_command_index is None:
        raise BadRequest("give timerCommandId or timerCommandIndex")
    sx, command_id, index = (
        request.workflow_state_execution_id,
        request.timer_command_id,
        request.timer_command_index,
    )
    _change(
        engine,
        request.workflow_id,
        request.workflow_run_id,
        lambda e, now: commands.skip_timer(e, sx, command_id, index, now=now),
    )


def _change(
    engine: Engine,
    workflow_id: str,
    run_id: str | None,
    transition: Callable[[Execution, float], Execution | None],
) -> None:
    """Apply a client's change to a process; an unknown process is a clear 400.

    The snapshot read to check that is the one the first commit attempt uses. (An older
    run is read from its archive: changing it fails as a closed process should.)
    """
    execution = load(engine, workflow_id, run_id)
    commit(engine, workflow_id, run_id, lambda e: transition(e, engine.clock()), read=execution)


def describe(execution: Execution, needs_results: bool) -> WorkflowGetResponse:
    results = None
    if needs_results and execution.status.closed:
        results = [_output(c) for c in execution.results]
    return WorkflowGetResponse(
        workflow_run_id=execution.run_id,
        workflow_status=WorkflowStatus(execution.status.value),
        results=results,
        error_type=WorkflowErrorType(execution.error_type) if execution.error_type else None,
        error_message=execution.error_message,
    )


def stop(engine: Engine, request: WorkflowStopRequest) -> None:
    stop_type = request.stop_type or WorkflowStopType.CANCEL
    _change(
        engine,
        request.workflow_id,
        request.workflow_run_id,
        lambda e, now: commands.stop(e, stop_type, request.reason, now=now),
    )


def get_data_objects(
    engine: Engine, request: WorkflowGetDataObjectsRequest
) -> WorkflowGetDataObjectsResponse:
    execution = load(engine, request.workflow_id, request.workflow_run_id)
    attributes = execution.data_attributes
    keys = request.keys or list(attributes)
    return WorkflowGetDataObjectsResponse(
        objects=[KeyValue(key=key, value=attributes[key]) for key in keys if key in attributes]
    )


def set_data_objects(engine: Engine, request: WorkflowSetDataObjectsRequest) -> None:
    objects = request.objects or []
    _change(
        engine,
        request.workflow_id,
        request.workflow_run_id,
        lambda e, now: commands.set_data_attributes(e, objects, now=now),
    )


def get_search_attributes(
    engine: Engine, request: WorkflowGetSearchAttributesRequest
) -> WorkflowGetSearchAttributesResponse:
    execution = load(engine, request.workflow_id, request.workflow_run_id)
    return WorkflowGetSearchAttributesResponse(
        search_attributes=search_attributes.select(execution.search_attributes, request.keys)
    )


def set_search_attributes(engine: Engine, request: WorkflowSetSearchAttributesRequest) -> None:
    values = request.search_attributes or []
    _change(
        engine,
        request.workflow_id,
        request.workflow_run_id,
        lambda e, now: commands.set_search_attributes(e, values, now=now),
    )


def reset(engine: Engine, request: WorkflowResetRequest) -> WorkflowResetResponse:
    """A new run that begins again at a state execution of the current run."""
    for tries in range(1, MAX_CONFLICTS + 1):
        current = load(engine, request.workflow_id, None)
        if request.workflow_run_id and request.workflow_run_id != current.run_id:
            raise BadRequest(
                f"run {request.workflow_run_id!r} is not the current run of process "
                f"{request.workflow_id!r}; only the current run can be reset"
            )
        started = _reset_point(engine, current, request)
        outcome = commands.reset(
            current,
            started,
            run_id=engine.new_id(),
            now=engine.clock(),
            keep_signals=not request.skip_signal_reapply,
            reason=request.reason,
        )
        try:
            engine.store.create(
                outcome.execution, replacing=outcome.replaced, read_version=current.version
            )
        except VersionConflict:
            engine.sleep(random.uniform(0, 0.01 * tries))
            continue
        return WorkflowResetResponse(workflow_run_id=outcome.execution.run_id)
    raise VersionConflict(
        f"process {request.workflow_id!r} kept changing; reset gave up after {MAX_CONFLICTS} tries",
        workflow_id=request.workflow_id,
    )


def _reset_point(engine: Engine, execution: Execution, request: WorkflowResetRequest) -> Event:
    """The STATE_STARTED event a reset begins again from."""
    kind = request.reset_type
    if kind not in (
        WorkflowResetType.BEGINNING,
        WorkflowResetType.STATE_ID,
        WorkflowResetType.STATE_EXECUTION_ID,
    ):
        raise NotSupported(
            f"reset type {kind} is not supported by XDB (it has no Temporal history events); "
            "use BEGINNING, STATE_ID or STATE_EXECUTION_ID"
        )
    events = engine.store.history(execution)
    starts = [e for e in events if e.kind is EventKind.STATE_STARTED]
    if kind is WorkflowResetType.BEGINNING:
        found = starts[:1]
        wanted = "the first state"
    elif kind is WorkflowResetType.STATE_ID:
        if not request.state_id:
            raise BadRequest("reset type STATE_ID needs stateId")
        found = [
            e for e in starts if (e.state_execution_id or "").rsplit("-", 1)[0] == request.state_id
        ][-1:]
        wanted = f"state {request.state_id!r}"
    else:
        if not request.state_execution_id:
            raise BadRequest("reset type STATE_EXECUTION_ID needs stateExecutionId")
        found = [e for e in starts if e.state_execution_id == request.state_execution_id][:1]
        wanted = f"state execution {request.state_execution_id!r}"
    if not found:
        raise BadRequest(
            f"run {execution.run_id!r} of {execution.workflow_id!r} never started {wanted}"
        )
    return found[0]


DEFAULT_PAGE_SIZE = 100


def search(engine: Engine, request: WorkflowSearchRequest) -> WorkflowSearchResponse:
    """Runs matching a query the ``by_type`` index can answer (see xdb.core.search_query)."""
    runs, token = engine.store.search(
        search_query.parse(request.query),
        page_size=request.page_size or DEFAULT_PAGE_SIZE,
        page_token=request.next_page_token,
    )
    return WorkflowSearchResponse(
        workflow_executions=[
            WorkflowSearchResponseEntry(workflow_id=wf, workflow_run_id=run) for wf, run in runs
        ],
        next_page_token=token,
    )


def health(engine: Engine) -> HealthInfo:
    return HealthInfo(
        condition="OK", hostname=socket.gethostname(), duration=int(engine.clock() - _STARTED_AT)
    )
