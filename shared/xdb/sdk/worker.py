"""The worker side of the protocol, independent of any web framework.

:class:`WorkerService` turns one engine request (path, body, headers) into one answer. The
adapters — :func:`xdb.sdk.asgi.asgi_app` (uvicorn, Starlette, FastAPI) and
:func:`xdb.sdk.aws_lambda.lambda_handler` (a Lambda function URL) — only move bytes.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from pydantic import BaseModel, ValidationError

from xdb.model import wire
from xdb.sdk.commands import (
    CommandRequest,
    CommandResults,
    LocalQueueCommand,
    LocalQueueResult,
    TimerResult,
)
from xdb.sdk.decision import RESERVED, StateDecision, StateMovement
from xdb.sdk.encoding import decode, encode
from xdb.sdk.errors import DefinitionError
from xdb.sdk.persistence import Communication, Persistence
from xdb.sdk.process import Process
from xdb.sdk.registry import ProcessDefinition, Registry
from xdb.sdk.state import Context
from xdb.signing import SignatureError, verify
from xdb.transport import SERVER_TIMING, Reply, server_timing

logger = logging.getLogger("xdb.worker")

SIGNING_SECRET_ENV = "XDB_SIGNING_SECRET"


class WorkerService:
    """Serves the processes of ``registry`` to the engine.

    Every request must be signed by the engine (:mod:`xdb.signing`) with
    ``signing_secret`` (default: the ``XDB_SIGNING_SECRET`` environment variable).
    ``verify_signatures=False`` accepts unsigned calls: for tests only, never where the
    worker is reachable by anyone but the engine.
    """

    def __init__(
        self,
        registry: Registry,
        *,
        signing_secret: str | bytes | None = None,
        verify_signatures: bool = True,
    ) -> None:
        secret = signing_secret or os.environ.get(SIGNING_SECRET_ENV)
        if verify_signatures and not secret:
            raise ValueError(
                "a worker verifies the engine's signature: pass signing_secret= or set "
                f"{SIGNING_SECRET_ENV} (`xdb dev` prints it; on AWS it is the stack's "
                "SigningSecretArn)"
            )
        self._secret = (secret.encode() if isinstance(secret, str) else secret) or None
        self._verify = verify_signatures
        self._registry = registry
        self._routes: dict[str, tuple[type[BaseModel], Callable[[Any], BaseModel]]] = {
            wire.WAIT_UNTIL_PATH: (wire.WorkflowStateWaitUntilRequest, self._wait_until),
            wire.EXECUTE_PATH: (wire.WorkflowStateExecuteRequest, self._execute),
            wire.RPC_PATH: (wire.WorkflowWorkerRpcRequest, self._rpc),
        }

    def handle(self, path: str, body: bytes, headers: Mapping[str, str]) -> Reply:
        """Answer one engine request: 200 with the result, 401 if it is not signed by the
        engine, 400 if it is not a request this worker can serve, 500 if user code failed
        (the engine then retries per the state's retry policy). Every answer says how long
        the worker took in a ``Server-Timing`` header (milliseconds), so the time of a call
        can be told apart from the network's."""
        started = time.perf_counter()
        reply = self._handle(path, body, headers)
        elapsed_ms = (time.perf_counter() - started) * 1000
        return replace(reply, headers={**reply.headers, SERVER_TIMING: server_timing(elapsed_ms)})

    def _handle(self, path: str, body: bytes, headers: Mapping[str, str]) -> Reply:
        route = self._routes.get(path.rstrip("/"))
        if route is None:
            return _error(404, f"no such worker endpoint: {path}")
        if self._verify:
            assert self._secret is not None
            try:
                verify(self._secret, body, headers)
            except SignatureError as error:
                return _error(401, f"request not signed by the engine: {error}")
        model, call = route
        try:
            request = model.model_validate_json(body)
        except ValidationError as error:
            return _error(400, f"invalid request: {error.errors()[:3]}")
        try:
            answer = call(request)
        except _NotServed as error:
            return _error(400, str(error))
        except Exception as error:  # user code failed: the engine retries it
            logger.exception("%s failed", path)
            return _error(500, f"{type(error).__name__}: {error}", type(error).__name__)
        return Reply(
            200,
            json.dumps(answer.model_dump(by_alias=True, exclude_none=True, mode="json")).encode(),
        )

    # -- the three calls

    def _served(
        self, process_type: str, state_id: str | None = None
    ) -> tuple[ProcessDefinition, Process]:
        """The registered process (and that it has the state), or :class:`_NotServed`."""
        try:
            definition, process = self._registry.get(process_type)
        except KeyError as error:
            raise _NotServed(error.args[0]) from None
        if state_id is not None and state_id not in definition.states:
            raise _NotServed(f"{process_type} has no state {state_id!r}")
        return definition, process

    def _wait_until(self, request: wire.WorkflowStateWaitUntilRequest) -> BaseModel:
        definition, _ = self._served(request.workflow_type, request.workflow_state_id)
        state = definition.state(request.workflow_state_id)
        if not type(state).waits():  # called anyway (another client started it without
            # skipWaitUntil): wait for nothing rather than fail for ever
            empty = _command_request(definition, CommandRequest.empty())
            return wire.WorkflowStateWaitUntilResponse(command_request=empty)
        persistence = Persistence(definition, request.data_objects, request.global_attributes)
        communication = Communication(definition)
        commands = state.wait_until(
            Context.of(request.context),
            decode(request.state_input, type(state).input_type()),
            persistence,
            communication,
        )
        if not isinstance(commands, CommandRequest):
            raise TypeError(
                f"{request.workflow_state_id}.wait_until returned {commands!r}, not a CommandRequest"
            )
        return wire.WorkflowStateWaitUntilResponse(
            command_request=_command_request(definition, commands),
            upsert_data_objects=persistence.local_writes(),
            upsert_global_attributes=persistence.global_writes(),
            publish_to_inter_state_channel=communication.published(),
        )

    def _execute(self, request: wire.WorkflowStateExecuteRequest) -> BaseModel:
        state_id = request.workflow_state_id
        definition, _ = self._served(request.workflow_type, state_id)
        state = definition.state(state_id)
        persistence = Persistence(definition, request.data_objects, request.global_attributes)
        communication = Communication(definition)
        decision = state.execute(
            Context.of(request.context),
            decode(request.state_input, type(state).input_type()),
            _command_results(definition, request.command_results),
            persistence,
            communication,
        )
        if not isinstance(decision, StateDecision):
            raise TypeError(f"{state_id}.execute returned {decision!r}, not a StateDecision")
        for movement in decision.movements:
            target = movement.state_id
            if target not in RESERVED and target not in definition.next_states[state_id]:
                raise DefinitionError(
                    [
                        f"{state_id} decided to go to {target!r}, which is not in "
                        f"{state_id}.next_states ({sorted(definition.next_states[state_id])})"
                    ]
                )
        return wire.WorkflowStateExecuteResponse(
            state_decision=wire.StateDecision(
                next_states=[_movement(definition, m) for m in decision.movements]
            ),
            upsert_data_objects=persistence.local_writes(),
            upsert_global_attributes=persistence.global_writes(),
            publish_to_inter_state_channel=communication.published(),
        )

    def _rpc(self, request: wire.WorkflowWorkerRpcRequest) -> BaseModel:
        definition, process = self._served(request.workflow_type)
        rpc = definition.rpcs.get(request.rpc_name)
        if rpc is None:
            raise _NotServed(f"{definition.process_type} has no RPC {request.rpc_name!r}")
        persistence = Persistence(definition, request.data_attributes, request.global_attributes)
        communication = Communication(
            definition, {name: info.size for name, info in request.internal_channel_infos.items()}
        )
        output = rpc.function(
            process,
            Context.of(request.context),
            decode(request.input, rpc.input_type),
            persistence,
            communication,
        )
        triggered = communication.triggered()
        for movement in triggered:
            definition.state(movement.state_id)
        return wire.WorkflowWorkerRpcResponse(
            output=encode(output, rpc.output_type),
            state_decision=(
                wire.StateDecision(next_states=[_movement(definition, m) for m in triggered])
                if triggered
                else None
            ),
            upsert_data_attributes=persistence.local_writes(),
            upsert_global_attributes=persistence.global_writes(),
            publish_to_inter_state_channel=communication.published(),
        )


class _NotServed(Exception):
    """The request names a process, state or RPC this worker does not have (400)."""


def _command_request(definition: ProcessDefinition, request: CommandRequest) -> wire.CommandRequest:
    timers: list[wire.TimerCommand] = []
    queues: list[wire.InterStateChannelCommand] = []
    given = [c.command_id for c in request.commands if c.command_id]
    if len(given) != len(set(given)):
        raise DefinitionError([f"two commands of one request have the same id: {given}"])
    for index, command in enumerate(request.commands):
        # Every command gets an id, so its result can be found by it: its position, unless
        # another command took that id.
        command_id = command.command_id or (f"{index}" if f"{index}" not in given else f"_{index}")
        if isinstance(command, LocalQueueCommand):
            if command.queue not in definition.queues:
                raise DefinitionError(
                    [f"{definition.process_type} declares no local queue {command.queue!r}"]
                )
            queues.append(
                wire.InterStateChannelCommand(command_id=command_id, channel_name=command.queue)
            )
        else:
            timers.append(
                wire.TimerCommand(command_id=command_id, duration_seconds=command.seconds)
            )
    return wire.CommandRequest(
        command_waiting_type=wire.CommandWaitingType(request.waiting.value),
        timer_commands=timers,
        inter_state_channel_commands=queues,
    )


def _command_results(definition: ProcessDefinition, results: wire.CommandResults) -> CommandResults:
    return CommandResults(
        timers=tuple(
            TimerResult(r.command_id, r.timer_status == "FIRED")
            for r in results.timer_results or ()
        ),
        local_queues=tuple(
            LocalQueueResult(
                r.command_id,
                r.channel_name,
                r.request_status == "RECEIVED",
                functools.partial(decode, r.value, definition.queues.get(r.channel_name, Any)),
            )
            for r in results.inter_state_channel_results or ()
        ),
        wait_until_failed=bool(results.state_wait_until_failed),
    )


def _movement(definition: ProcessDefinition, movement: StateMovement) -> wire.StateMovement:
    target = movement.state_id
    if target in RESERVED:
        return wire.StateMovement(
            state_id=target,
            state_input=None if movement.input is None else encode(movement.input),
        )
    state = definition.state(target)
    return wire.StateMovement(
        state_id=target,
        state_input=encode(movement.input, type(state).input_type()),
        state_options=definition.state_options(target),
    )


def _error(status: int, detail: str, error_type: str | None = None) -> Reply:
    body = wire.WorkerErrorResponse(detail=detail, error_type=error_type).dump()
    return Reply(status, json.dumps(body).encode())
