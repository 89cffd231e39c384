"""Use case of ``POST /api/v1/workflow/rpc``: call the worker's RPC, commit what it returns.

The worker sees the data attributes its loading policy asks for and the size of each
channel's queue; its upserts, publishes and states to start are committed in one write,
and only then is its output answered. A worker error comes back as 420 with its detail.
With a locking loading policy the commit also requires the locked keys to be unchanged
since the read; if another writer changed them, the RPC reads again and calls the worker
again, until its timeout (then 450). See docs/persistence.md.
"""

from __future__ import annotations

import itertools
import random

from xdb.core import commands, persistence
from xdb.core import options as state_options
from xdb.core.errors import InvalidWorkerAnswer, LockConflict, ProcessClosed
from xdb.engine.commit import commit, load, read_globals
from xdb.engine.runtime import Engine
from xdb.model.execution import Execution, Message
from xdb.model.wire import (
    RPC_PATH,
    ChannelInfo,
    Context,
    WorkflowRpcRequest,
    WorkflowRpcResponse,
    WorkflowWorkerRpcRequest,
    WorkflowWorkerRpcResponse,
)

DEFAULT_TIMEOUT_SECONDS = 10
# A retried call still gets this long, even when the RPC's deadline is nearly spent.
MIN_CALL_SECONDS = 1.0


def rpc(engine: Engine, request: WorkflowRpcRequest) -> WorkflowRpcResponse:
    # Bounded by the API's own request limit too (API Gateway cuts at 29 s): an RPC that
    # committed after its caller gave up could be applied twice by the caller's retry.
    timeout = min(
        float(request.timeout_seconds or DEFAULT_TIMEOUT_SECONDS),
        engine.settings.max_api_timeout,
        engine.settings.long_poll_seconds,
    )
    deadline = engine.clock() + timeout
    for tries in itertools.count(1):
        # A closed process still answers read-only RPCs (as in iWF); one that writes is
        # refused when its answer is committed.
        execution = load(engine, request.workflow_id, request.workflow_run_id)
        try:
            return _call_and_commit(engine, request, execution, deadline - engine.clock())
        except LockConflict:
            # Another writer changed a key this RPC locks: read again, ask the worker again.
            if engine.clock() >= deadline:
                raise LockConflict(
                    f"RPC {request.rpc_name!r} could not hold its locked keys of process "
                    f"{request.workflow_id!r} within {timeout:g}s ({tries} tries)",
                    workflow_id=request.workflow_id,
                ) from None
            engine.sleep(random.uniform(0, min(0.2, 0.005 * 2**tries)))
    raise AssertionError("unreachable")


def _call_and_commit(
    engine: Engine, request: WorkflowRpcRequest, execution: Execution, timeout: float
) -> WorkflowRpcResponse:
    data_loading = state_options.loading(request.data_attributes_loading_policy)
    search_loading = state_options.loading(request.search_attributes_loading_policy)
    held = persistence.hold(execution, data_loading, search_loading)
    call = WorkflowWorkerRpcRequest(
        context=Context(
            workflow_id=execution.workflow_id,
            workflow_run_id=execution.run_id,
            workflow_started_timestamp=int(execution.started_at),
        ),
        workflow_type=execution.workflow_type,
        rpc_name=request.rpc_name,
        input=request.input,
        search_attributes=state_options.loaded_search_attributes(execution, search_loading),
        data_attributes=state_options.loaded_attributes(execution, data_loading),
        global_attributes=read_globals(engine, execution),
        signal_channel_infos=_sizes(execution.signals),
        internal_channel_infos=_sizes(execution.channels),
    )
    raw = engine.worker.post(
        execution.worker_url, RPC_PATH, call.dump(), timeout=max(timeout, MIN_CALL_SECONDS)
    )
    try:
        answer = WorkflowWorkerRpcResponse.model_validate(raw)
    except ValueError as error:
        raise InvalidWorkerAnswer(
            f"the worker's RPC answer does not match the iWF protocol: {error}"
        ) from None
    max_timeout = engine.settings.max_api_timeout

    def apply(current: Execution) -> Execution | None:
        persistence.check_held(current, held)
        return commands.on_rpc_answer(
            current, answer, now=engine.clock(), max_api_timeout=max_timeout
        )

    # On the run that answered: a reset or a new run meanwhile must not take this answer.
    committed = commit(engine, request.workflow_id, execution.run_id, apply, read=execution)
    if committed is None and commands.rpc_writes(answer):
        raise ProcessClosed(
            f"process {request.workflow_id!r} started another run while RPC "
            f"{request.rpc_name!r} ran; its answer was not applied",
            workflow_id=request.workflow_id,
        )
    return WorkflowRpcResponse(output=answer.output)


def _sizes(queues: dict[str, list[Message]]) -> dict[str, ChannelInfo]:
    return {name: ChannelInfo(size=len(messages)) for name, messages in queues.items()}
