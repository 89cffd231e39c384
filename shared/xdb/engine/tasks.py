"""Use case of the task handler: run one task from the task queue.

A state task calls the worker, then commits its answer with one conditional write. The
worker's answer counts only once committed: if this process dies between the call and
the commit, the task comes back (SQS visibility timeout) and the call is made again.
"""

from __future__ import annotations

import logging

from pydantic import ValidationError

from xdb.core import persistence, transitions
from xdb.core.errors import InvalidWorkerAnswer, LockConflict, PayloadTooLarge, WorkerCallFailed
from xdb.core.options import loaded_attributes, loaded_search_attributes
from xdb.engine.commit import commit, read_globals
from xdb.engine.runtime import Engine
from xdb.model.execution import Api, Execution, Phase, StateExecution
from xdb.model.task import Task, TaskKind
from xdb.model.wire import (
    EXECUTE_PATH,
    WAIT_UNTIL_PATH,
    CommandResults,
    Context,
    InterStateChannelResult,
    SignalResult,
    TimerResult,
    WorkflowStateExecuteRequest,
    WorkflowStateExecuteResponse,
    WorkflowStateWaitUntilRequest,
    WorkflowStateWaitUntilResponse,
)

logger = logging.getLogger(__name__)

# How many times a state task calls the worker again when a locked attribute changed
# under it, before it queues itself again.
LOCK_TRIES = 5


def handle(engine: Engine, task: Task) -> None:
    """Run a task. Stale tasks (duplicates, late arrivals) change nothing.

    An exception leaves the task in the queue: it comes back after the visibility timeout.
    """
    try:
        _handle(engine, task)
    except Exception:
        logger.exception("task failed; SQS will deliver it again: %s", task.model_dump_json())
        raise


def _handle(engine: Engine, task: Task) -> None:
    now = engine.clock()
    if task.due_at > now:
        # Due beyond SQS's 15-minute delay: send it on for the remaining time.
        engine.queue.send([task], now=now)
        return
    if task.kind is TaskKind.TIMEOUT:
        commit(
            engine,
            task.workflow_id,
            task.run_id,
            lambda e: transitions.on_process_timeout(e, now=engine.clock()),
        )
    elif task.kind is TaskKind.TIMER:
        assert task.state_execution_id is not None and task.timer_index is not None
        sx, index = task.state_execution_id, task.timer_index
        commit(
            engine,
            task.workflow_id,
            task.run_id,
            lambda e: transitions.on_timer(e, sx, index, now=engine.clock()),
        )
    else:
        _run_state(engine, task)


def _run_state(engine: Engine, task: Task) -> None:
    # The store's recent snapshot saves a read when it matches the task; a stale one only
    # costs a version conflict at commit. A mismatch is checked against a fresh read, so
    # a stale snapshot never makes us drop a task that is due.
    execution = engine.store.recent(task.workflow_id)
    state = _due_state(execution, task)
    for tries in range(1, LOCK_TRIES + 1):
        if state is None:
            execution = engine.store.current(task.workflow_id)
            state = _due_state(execution, task)
        if execution is None or state is None:
            return
        try:
            _call_and_commit(engine, task, execution, state)
            return
        except LockConflict:
            if tries == LOCK_TRIES:
                # Not an error: the locked keys are busy. Queue the task again now rather
                # than wait out the visibility timeout.
                engine.queue.send([task], now=engine.clock())
                return
            execution = state = None  # read again, call the worker again


def _call_and_commit(
    engine: Engine, task: Task, execution: Execution, state: StateExecution
) -> None:
    api, attempt, sx = state.api, state.attempt, state.id
    held = persistence.hold(
        execution, state.options.loading(api), state.options.search_loading(api)
    )
    try:
        answer = _call_worker(engine, execution, state)
    except (WorkerCallFailed, ValidationError) as error:
        _fail_attempt(engine, task, api, attempt, _reason(error))
        return
    max_timeout = engine.settings.max_api_timeout

    def apply(current: Execution) -> Execution | None:
        now = engine.clock()
        if isinstance(answer, WorkflowStateWaitUntilResponse):
            nxt = transitions.on_wait_until(current, sx, attempt, answer, now=now)
        else:
            nxt = transitions.on_execute(
                current, sx, attempt, answer, now=now, max_api_timeout=max_timeout
            )
        if nxt is not None:
            persistence.check_held(current, held)
        return nxt

    try:
        commit(engine, task.workflow_id, task.run_id, apply, read=execution)
    except (InvalidWorkerAnswer, PayloadTooLarge) as error:
        _fail_attempt(engine, task, api, attempt, error.message)


def _due_state(execution: Execution | None, task: Task) -> StateExecution | None:
    """The state execution ``task`` asks to run, if ``execution`` still waits for it."""
    if execution is None or execution.run_id != task.run_id or execution.status.closed:
        return None
    state = execution.states.get(task.state_execution_id or "")
    if state is None or state.attempt != task.attempt or state.phase is Phase.WAITING:
        return None
    if task.phase is not None and state.phase is not task.phase:
        return None
    return state


def _fail_attempt(engine: Engine, task: Task, api: Api, attempt: int, reason: str) -> None:
    sx = task.state_execution_id or ""
    logger.info(
        "worker call failed",
        extra={"workflow_id": task.workflow_id, "state_execution_id": sx, "reason": reason},
    )
    commit(
        engine,
        task.workflow_id,
        task.run_id,
        lambda e: transitions.on_api_failure(e, sx, api, attempt, reason, now=engine.clock()),
    )


def _reason(error: Exception) -> str:
    if isinstance(error, ValidationError):
        return (
            f"the worker's answer does not match the iWF protocol: {error.errors()[0].get('msg')}"
        )
    return str(error)


def _call_worker(
    engine: Engine, execution: Execution, state: StateExecution
) -> WorkflowStateWaitUntilResponse | WorkflowStateExecuteResponse:
    context = Context(
        workflow_id=execution.workflow_id,
        workflow_run_id=execution.run_id,
        workflow_started_timestamp=int(execution.started_at),
        state_execution_id=state.id,
        first_attempt_timestamp=int(state.first_attempt_at),
        attempt=state.attempt,
    )
    attributes = loaded_attributes(execution, state.options.loading(state.api))
    search = loaded_search_attributes(execution, state.options.search_loading(state.api))
    globals_ = read_globals(engine, execution)
    timeout = state.options.timeout(state.api)
    if state.api is Api.WAIT_UNTIL:
        request = WorkflowStateWaitUntilRequest(
            context=context,
            workflow_type=execution.workflow_type,
            workflow_state_id=state.state_id,
            state_input=state.input,
            search_attributes=search,
            data_objects=attributes,
            global_attributes=globals_,
        )
        answer = engine.worker.post(
            execution.worker_url, WAIT_UNTIL_PATH, request.dump(), timeout=timeout
        )
        return WorkflowStateWaitUntilResponse.model_validate(answer)
    execute = WorkflowStateExecuteRequest(
        context=context,
        workflow_type=execution.workflow_type,
        workflow_state_id=state.state_id,
        state_input=state.input,
        search_attributes=search,
        data_objects=attributes,
        global_attributes=globals_,
        state_locals=state.locals,
        command_results=command_results(state),
    )
    answer = engine.worker.post(execution.worker_url, EXECUTE_PATH, execute.dump(), timeout=timeout)
    return WorkflowStateExecuteResponse.model_validate(answer)


def command_results(state: StateExecution) -> CommandResults:
    """What execute learns about the commands wait_until asked for, in command order."""
    waiting = state.waiting
    timers = [
        TimerResult(command_id=t.command_id, timer_status="FIRED" if t.fired else "SCHEDULED")
        for t in (waiting.timers if waiting else [])
    ]
    channels = waiting.channels if waiting else []
    signals = [
        SignalResult(
            command_id=c.command_id,
            signal_channel_name=c.channel,
            signal_request_status="RECEIVED" if c.received else "WAITING",
            signal_value=c.value,
        )
        for c in channels
        if not c.internal
    ]
    internal = [
        InterStateChannelResult(
            command_id=c.command_id,
            channel_name=c.channel,
            request_status="RECEIVED" if c.received else "WAITING",
            value=c.value,
        )
        for c in channels
        if c.internal
    ]
    return CommandResults(
        timer_results=timers,
        signal_results=signals,
        inter_state_channel_results=internal,
        state_start_api_succeeded=not state.wait_until_failed,
        state_wait_until_failed=state.wait_until_failed,
    )
