"""What a worker answer writes besides its decision, and the optimistic locks on what it read.

State APIs and RPCs answer with the same kinds of writes; they are applied here, in the
transition that commits the answer, so they land in the same write as the decision.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from xdb.core import search_attributes
from xdb.core.errors import BadRequest, InvalidWorkerAnswer, LockConflict
from xdb.core.snapshot import publish, upsert
from xdb.model.execution import Event, EventKind, Execution, GlobalWrite, Loading
from xdb.model.wire import (
    GlobalAttributeConflictMode,
    KeyValue,
    WorkflowStateExecuteResponse,
    WorkflowStateWaitUntilResponse,
    WorkflowWorkerRpcResponse,
)

# A recorded event is for people reading the history: keep each one short.
MAX_RECORDED_CHARS = 2_000


WorkerAnswer = (
    WorkflowStateWaitUntilResponse | WorkflowStateExecuteResponse | WorkflowWorkerRpcResponse
)


def apply_answer(
    execution: Execution,
    answer: WorkerAnswer,
    *,
    now: float,
    state_execution_id: str | None = None,
) -> None:
    """Apply a worker's writes to ``execution`` (a snapshot being made by a transition):
    data, search and global attribute upserts, published messages, recorded events."""
    if isinstance(answer, WorkflowWorkerRpcResponse):
        data = answer.upsert_data_attributes
    else:
        data = answer.upsert_data_objects
    try:
        search_attributes.upsert(execution.search_attributes, answer.upsert_search_attributes)
        write_globals(execution, answer.upsert_global_attributes)
    except BadRequest as error:
        raise InvalidWorkerAnswer(f"the worker's answer: {error.message}") from None
    upsert(execution.data_attributes, data)
    publish(execution, answer.publish_to_inter_state_channel)
    for record in answer.record_events or []:
        value = record.value.data if record.value and record.value.data is not None else ""
        execution.events.append(
            Event(
                at=now,
                kind=EventKind.RECORDED,
                state_execution_id=state_execution_id,
                detail=f"{record.key}: {value}"[:MAX_RECORDED_CHARS],
            )
        )


def write_globals(
    execution: Execution,
    values: list[KeyValue] | None,
    create_mode: GlobalAttributeConflictMode | None = None,
) -> None:
    """Queue writes to the process's bound row; they commit with this snapshot."""
    if not values:
        return
    binding = execution.global_binding
    if binding is None:
        raise BadRequest(
            "global attributes need a process bound to a table row "
            "(workflowStartOptions.globalAttributes at start)"
        )
    unknown = sorted({kv.key for kv in values} - set(binding.attributes))
    if unknown:
        raise BadRequest(
            f"{', '.join(unknown)} not among the bound attributes of table "
            f"{binding.table!r}: {', '.join(binding.attributes)}"
        )
    for kv in values:
        if kv.value is None:
            continue
        if kv.value.encoding not in (None, "json"):
            raise BadRequest(
                f"global attribute {kv.key!r} must be JSON-encoded to be stored as a column "
                f"(got encoding {kv.value.encoding!r})"
            )
        try:
            json.loads(kv.value.data or "null")
        except ValueError:
            raise BadRequest(f"global attribute {kv.key!r} is not valid JSON") from None
    write = execution.global_write or GlobalWrite(create_mode=create_mode)
    write.values.update({kv.key: kv.value for kv in values})
    execution.global_write = write


# What a worker call read of its locked keys: ("data" | "search", key) -> the value.
Held = dict[tuple[str, str], object]


def hold(execution: Execution, data: Loading, search: Loading) -> Held:
    """The values of the keys a worker call locks, as it reads them.

    Locking is optimistic (see docs/persistence.md): the call's answer commits only if
    none of these values changed meanwhile, checked by :func:`check_held` inside the
    conditional write's transition.
    """
    held: Held = {("data", k): execution.data_attributes.get(k) for k in data.locking_keys}
    held.update({("search", k): execution.search_attributes.get(k) for k in search.locking_keys})
    return held


def check_held(execution: Execution, held: Held) -> None:
    """Raise :class:`LockConflict` if a locked value changed since :func:`hold`."""
    stores: dict[str, Mapping[str, object]] = {
        "data": execution.data_attributes,
        "search": execution.search_attributes,
    }
    changed = [key for (kind, key), value in held.items() if stores[kind].get(key) != value]
    if changed:
        raise LockConflict(
            f"process {execution.workflow_id!r}: locked keys changed meanwhile: "
            + ", ".join(sorted(changed)),
            workflow_id=execution.workflow_id,
        )
