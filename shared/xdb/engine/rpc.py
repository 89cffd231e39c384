"""Use case of ``POST /api/v1/workflow/rpc``: call the worker's RPC, commit what it returns.

The worker sees the data attributes its loading policy asks for and the size of each
channel's queue; its upserts, publishes and states to start are committed in one write,
and only then is its output answered. A worker error comes back as 420 with its detail.
Locking loading policies load like their non-locking forms for now (issue "RPC").
"""

from __future__ import annotations

from xdb.aws.worker_client import RPC_PATH
from xdb.core import commands
from xdb.core import options as state_options
from xdb.core.errors import InvalidWorkerAnswer
from xdb.engine.commit import commit, load
from xdb.engine.runtime import Engine
from xdb.model.execution import Execution, Message
from xdb.model.wire import (
    ChannelInfo,
    Context,
    WorkflowRpcRequest,
    WorkflowRpcResponse,
    WorkflowWorkerRpcRequest,
    WorkflowWorkerRpcResponse,
)

DEFAULT_TIMEOUT_SECONDS = 10


def rpc(engine: Engine, request: WorkflowRpcRequest) -> WorkflowRpcResponse:
    # A closed process still answers read-only RPCs (as in iWF); one that writes is refused
    # when its answer is committed.
    execution = load(engine, request.workflow_id, request.workflow_run_id)
    call = WorkflowWorkerRpcRequest(
        context=Context(
            workflow_id=execution.workflow_id,
            workflow_run_id=execution.run_id,
            workflow_started_timestamp=int(execution.started_at),
        ),
        workflow_type=execution.workflow_type,
        rpc_name=request.rpc_name,
        input=request.input,
        search_attributes=state_options.loaded_search_attributes(
            execution, state_options.loading(request.search_attributes_loading_policy)
        ),
        data_attributes=state_options.loaded_attributes(
            execution, state_options.loading(request.data_attributes_loading_policy)
        ),
        signal_channel_infos=_sizes(execution.signals),
        internal_channel_infos=_sizes(execution.channels),
    )
    timeout = min(
        float(request.timeout_seconds or DEFAULT_TIMEOUT_SECONDS), engine.settings.max_api_timeout
    )
    raw = engine.worker.post(execution.worker_url, RPC_PATH, call.dump(), timeout=timeout)
    try:
        answer = WorkflowWorkerRpcResponse.model_validate(raw)
    except ValueError as error:
        raise InvalidWorkerAnswer(
            f"the worker's RPC answer does not match the iWF protocol: {error}"
        ) from None
    max_timeout = engine.settings.max_api_timeout

    def apply(current: Execution) -> Execution | None:
        return commands.on_rpc_answer(
            current, answer, now=engine.clock(), max_api_timeout=max_timeout
        )

    commit(engine, request.workflow_id, request.workflow_run_id, apply, read=execution)
    return WorkflowRpcResponse(output=answer.output)


def _sizes(queues: dict[str, list[Message]]) -> dict[str, ChannelInfo]:
    return {name: ChannelInfo(size=len(messages)) for name, messages in queues.items()}
