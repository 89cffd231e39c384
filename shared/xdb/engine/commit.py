"""Apply a pure transition to the stored snapshot, retrying on concurrent writes."""

from __future__ import annotations

from collections.abc import Callable

from xdb.core.errors import ProcessNotFound, VersionConflict
from xdb.engine.runtime import Engine
from xdb.model.execution import Execution
from xdb.model.wire import KeyValue

MAX_CONFLICTS = 20


def commit(
    engine: Engine,
    workflow_id: str,
    run_id: str | None,
    transition: Callable[[Execution], Execution | None],
    *,
    read: Execution | None = None,
) -> Execution | None:
    """Load the current run, apply ``transition``, write it conditionally.

    On a version conflict the snapshot is read again and the transition applied again:
    transitions are guarded by what they expect to find, so a retry either applies to
    the newer snapshot or becomes a no-op. Returns the committed snapshot, or None when
    the transition found nothing to do. ``read`` is a snapshot the caller just read: the
    first try uses it instead of reading again (the conditional write still checks it).
    """
    for _ in range(MAX_CONFLICTS):
        current, read = read or engine.store.current(workflow_id), None
        if current is None or (run_id and current.run_id != run_id):
            return None
        nxt = transition(current)
        if nxt is None:
            return None
        try:
            engine.store.save(nxt)
        except VersionConflict:
            continue
        return nxt
    raise VersionConflict(
        f"process {workflow_id!r} kept changing; gave up after {MAX_CONFLICTS} tries",
        workflow_id=workflow_id,
    )


def load(engine: Engine, workflow_id: str, run_id: str | None) -> Execution:
    execution = engine.store.run(workflow_id, run_id)
    if execution is None:
        which = f"run {run_id!r} of process" if run_id else "process"
        raise ProcessNotFound(
            f"{which} {workflow_id!r} does not exist", workflow_id=workflow_id, run_id=run_id
        )
    return execution


def read_globals(engine: Engine, execution: Execution) -> list[KeyValue] | None:
    """The bound row's columns a worker call sees (None for a process without a binding)."""
    if execution.global_binding is None:
        return None
    return engine.store.read_globals(execution.global_binding)
