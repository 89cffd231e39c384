"""Process definitions, checked once when registered rather than failing at run time."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, get_type_hints

from pydantic import ValidationError

from xdb.model import wire
from xdb.sdk.decision import RESERVED, state_id_of
from xdb.sdk.encoding import adapter
from xdb.sdk.errors import DefinitionError
from xdb.sdk.process import (
    GlobalAttributes,
    Process,
    RpcOptions,
    StateSchema,
    rpc_options,
)
from xdb.sdk.state import AsyncState, RetryPolicy


@dataclass(frozen=True)
class RpcDefinition:
    name: str
    function: Callable[..., Any]  # unbound: called with the registered process instance
    input_type: Any
    output_type: Any
    options: RpcOptions


@dataclass(frozen=True)
class ProcessDefinition:
    """A process class, resolved and checked: what workers and clients work from."""

    process_type: str
    states: dict[str, AsyncState[Any]]
    starting_state: AsyncState[Any] | None
    next_states: dict[str, frozenset[str]]
    local_attributes: dict[str, Any]
    global_attributes: GlobalAttributes | None
    queues: dict[str, Any]
    rpcs: dict[str, RpcDefinition]
    options: dict[str, wire.WorkflowStateOptions]

    def state(self, state_id: str) -> AsyncState[Any]:
        try:
            return self.states[state_id]
        except KeyError:
            raise DefinitionError(
                [f"{self.process_type} has no state {state_id!r} (it has {sorted(self.states)})"]
            ) from None

    def state_options(self, state_id: str) -> wire.WorkflowStateOptions:
        """The engine's options for a state (built once, when the process was defined)."""
        self.state(state_id)
        return self.options[state_id]


def _options(
    states: dict[str, AsyncState[Any]], state_id: str, seen: frozenset[str] = frozenset()
) -> wire.WorkflowStateOptions:
    """A state's options as the engine takes them: its own, plus skipping ``wait_until``
    when it has none, and the options of the state it proceeds to on failure."""
    state = states[state_id]
    options = state.options
    fields: dict[str, Any] = {"skip_wait_until": True} if not state.waits() else {}
    if options is not None:
        if options.wait_until_timeout is not None:
            fields["wait_until_api_timeout_seconds"] = _seconds(options.wait_until_timeout)
        if options.execute_timeout is not None:
            fields["execute_api_timeout_seconds"] = _seconds(options.execute_timeout)
        if options.wait_until_retry is not None:
            fields["wait_until_api_retry_policy"] = _retry(options.wait_until_retry)
        if options.execute_retry is not None:
            fields["execute_api_retry_policy"] = _retry(options.execute_retry)
        if options.proceed_on_wait_until_failure:
            fields["wait_until_api_failure_policy"] = (
                wire.WaitUntilApiFailurePolicy.PROCEED_ON_FAILURE
            )
        proceed = options.execute_failure_proceeds_to
        if proceed is not None:
            target = state_id_of(proceed)
            fields["execute_api_failure_policy"] = (
                wire.ExecuteApiFailurePolicy.PROCEED_TO_CONFIGURED_STATE
            )
            fields["execute_api_failure_proceed_state_id"] = target
            if target not in seen | {state_id}:
                fields["execute_api_failure_proceed_state_options"] = _options(
                    states, target, seen | {state_id}
                )
    return wire.WorkflowStateOptions(**fields)


def _seconds(duration: Any) -> int:
    return max(1, int(duration.total_seconds()))


def _retry(policy: RetryPolicy) -> wire.RetryPolicy:
    return wire.RetryPolicy(
        initial_interval_seconds=int(policy.initial_interval.total_seconds()),
        backoff_coefficient=policy.backoff_coefficient,
        maximum_interval_seconds=int(policy.maximum_interval.total_seconds()),
        maximum_attempts=policy.maximum_attempts,
        maximum_attempts_duration_seconds=(
            0 if policy.maximum_duration is None else int(policy.maximum_duration.total_seconds())
        ),
    )


_defined: dict[type[Process], ProcessDefinition] = {}


def define(process: type[Process]) -> ProcessDefinition:
    """Resolve and check a process class (once); :class:`DefinitionError` lists every
    problem."""
    if process not in _defined:
        _defined[process] = _define(process)
    return _defined[process]


def _define(process: type[Process]) -> ProcessDefinition:
    problems: list[str] = []
    name = getattr(process, "__name__", repr(process))
    if not (isinstance(process, type) and issubclass(process, Process)):
        raise DefinitionError([f"{name} is not a subclass of xdb.sdk.Process"])
    schema = getattr(process, "states", None)
    if not isinstance(schema, StateSchema):
        problems.append(f"{name}.states must be a StateSchema(...) of its states")
        schema = StateSchema.without_starting_state()
    states = _states(name, schema.states, problems)
    next_states = {
        state_id: frozenset(_next_states(name, state, states, problems))
        for state_id, state in states.items()
    }
    persistence = process.persistence
    local = _typed(
        f"{name} local attribute",
        ((a.key, a.type) for a in persistence.local_attributes),
        problems,
    )
    global_attributes = persistence.global_attributes
    if global_attributes is not None:
        _check_global(name, global_attributes, problems)
    queues = _typed(
        f"{name} local queue",
        ((q.name, q.type) for q in process.communication.local_queues),
        problems,
    )
    rpcs = _rpcs(name, process, problems)
    if problems:
        raise DefinitionError(problems)
    options: dict[str, wire.WorkflowStateOptions] = {}
    for state_id in states:  # checked now, not when a decision first needs them
        try:
            options[state_id] = _options(states, state_id)
        except ValidationError as error:
            problems.append(f"{name}: options of state {state_id}: {error.errors()[0]['msg']}")
    if problems:
        raise DefinitionError(problems)
    return ProcessDefinition(
        process_type=process.process_type(),
        states=states,
        starting_state=schema.starting_state,
        next_states=next_states,
        local_attributes=local,
        global_attributes=global_attributes,
        queues=queues,
        rpcs=rpcs,
        options=options,
    )


def _states(
    name: str, declared: Iterable[object], problems: list[str]
) -> dict[str, AsyncState[Any]]:
    states: dict[str, AsyncState[Any]] = {}
    for state in declared:
        if not isinstance(state, AsyncState):
            problems.append(
                f"{name}: list an instance of state {state.__name__}, i.e. {state.__name__}()"
                if isinstance(state, type)
                else f"{name}: {state!r} is not an AsyncState instance"
            )
            continue
        kind = type(state)
        state_id = kind.state_id()
        if state_id in states:
            problems.append(f"{name}: two states have the id {state_id!r}")
        if state_id in RESERVED or state_id.startswith("_SYS_"):
            problems.append(f"{name}: state id {state_id!r} is reserved")
        if kind.execute is AsyncState.execute:
            problems.append(f"{name}: state {state_id} does not define execute()")
        input_type = kind.input_type()
        if input_type is None:
            problems.append(
                f"{name}: state {state_id} must declare its input type, "
                f"e.g. class {state_id}(AsyncState[None]) or AsyncState[MyInput]"
            )
        else:
            _check_type(f"{name}: input of state {state_id}", input_type, problems)
        states[state_id] = state
    return states


def _next_states(
    name: str, state: AsyncState[Any], states: dict[str, AsyncState[Any]], problems: list[str]
) -> list[str]:
    kind = type(state)
    targets = [state_id_of(s) for s in kind.next_states]
    proceed = kind.options.execute_failure_proceeds_to if kind.options else None
    for target in [*targets, *([state_id_of(proceed)] if proceed is not None else [])]:
        if target not in states:
            problems.append(
                f"{name}: state {kind.state_id()} may go to {target!r}, which is not one of "
                f"its states ({', '.join(states) or 'none'})"
            )
    return targets


def _typed(what: str, pairs: Iterable[tuple[str, Any]], problems: list[str]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, kind in pairs:
        if not isinstance(key, str) or not key:
            problems.append(f"{what} needs a name, not {key!r}")
            continue
        if key in found:
            problems.append(f"{what} {key!r} is declared twice")
        _check_type(f"{what} {key!r}", kind, problems)
        found[key] = kind
    return found


def _check_global(name: str, table: GlobalAttributes, problems: list[str]) -> None:
    if not table.table or not table.primary_key:
        problems.append(f"{name}: global attributes need a table and a primary key")
    if not table.columns:
        problems.append(f"{name}: global attributes of table {table.table!r} list no columns")
    if table.primary_key in table.columns:
        problems.append(
            f"{name}: the primary key {table.primary_key!r} cannot be a global attribute column "
            "(it is set by global_attribute_pk_value when the process starts)"
        )
    for column, kind in table.columns.items():
        _check_type(f"{name}: global attribute {column!r}", kind, problems)


def _check_type(what: str, kind: Any, problems: list[str]) -> None:
    try:
        adapter(kind)
    except Exception as error:  # pydantic raises several kinds for unusable types
        problems.append(f"{what}: type {kind!r} cannot be checked or encoded ({error})")


def _rpcs(name: str, process: type[Process], problems: list[str]) -> dict[str, RpcDefinition]:
    rpcs: dict[str, RpcDefinition] = {}
    for attribute, function in inspect.getmembers(process, inspect.isfunction):
        options = rpc_options(function)
        if options is None:
            continue
        parameters = list(inspect.signature(function).parameters)
        if len(parameters) != 5:
            problems.append(
                f"{name}.{attribute}: an RPC takes (self, ctx, input, persistence, communication), "
                f"not ({', '.join(parameters)})"
            )
            continue
        try:
            hints = get_type_hints(function)
        except Exception as error:  # an annotation that does not resolve
            problems.append(f"{name}.{attribute}: cannot read its annotations ({error})")
            continue
        input_type = hints.get(parameters[2], Any)
        output_type = hints.get("return", Any)
        _check_type(f"{name}.{attribute} input", input_type, problems)
        _check_type(f"{name}.{attribute} output", output_type, problems)
        rpcs[attribute] = RpcDefinition(attribute, function, input_type, output_type, options)
    return rpcs


class Registry:
    """The processes a worker serves. Adding one checks it; a bad definition fails here,
    at start-up, with every problem listed."""

    def __init__(self, *processes: Process | type[Process]) -> None:
        self._processes: dict[str, tuple[ProcessDefinition, Process]] = {}
        for process in processes:
            self.add(process)

    def add(self, process: Process | type[Process]) -> ProcessDefinition:
        """Register a process (a class, or an instance whose RPCs need constructor
        arguments)."""
        definition = define(process if isinstance(process, type) else type(process))
        instance = process() if isinstance(process, type) else process
        if definition.process_type in self._processes:
            raise DefinitionError([f"process type {definition.process_type!r} is registered twice"])
        self._processes[definition.process_type] = (definition, instance)
        return definition

    def get(self, process_type: str) -> tuple[ProcessDefinition, Process]:
        try:
            return self._processes[process_type]
        except KeyError:
            raise KeyError(
                f"process type {process_type!r} is not registered with this worker "
                f"(it serves {sorted(self._processes) or 'none'})"
            ) from None

    def __iter__(self) -> Any:
        return (definition for definition, _ in self._processes.values())
