"""What a committed change asks for: the tasks to enqueue for a new snapshot.

The stream handler calls :func:`tasks_for` with the old and new images of a changed
execution. A stream record may arrive twice: the tasks it yields are then enqueued twice,
and the task handler drops the copy that no longer matches the snapshot.
"""

from __future__ import annotations

from xdb.model.execution import Execution, Phase, StateExecution
from xdb.model.task import Task, TaskKind


def tasks_for(old: Execution | None, new: Execution) -> list[Task]:
    """The tasks that become due because ``old`` became ``new``."""
    if old is not None and old.run_id != new.run_id:
        old = None
    if new.status.closed:
        return []
    tasks = [_timeout_task(new)] if old is None and new.timeout_at is not None else []
    for state in new.states.values():
        before = old.states.get(state.id) if old else None
        if state.phase in (Phase.WAIT_UNTIL, Phase.EXECUTE):
            if before is None or (before.phase, before.attempt) != (state.phase, state.attempt):
                tasks.append(
                    Task(
                        kind=TaskKind.STATE,
                        workflow_id=new.workflow_id,
                        run_id=new.run_id,
                        state_execution_id=state.id,
                        attempt=state.attempt,
                        phase=state.phase,
                        due_at=state.next_call_at or 0.0,
                    )
                )
        elif state.phase is Phase.WAITING and (before is None or before.phase is not Phase.WAITING):
            tasks += _timer_tasks(new, state)
    return tasks


def cancelled_for(old: Execution | None, new: Execution) -> list[Task]:
    """Timer and timeout tasks of ``old`` that nothing waits for in ``new`` any more."""
    if old is None or old.run_id != new.run_id or old.status.closed:
        return []
    cancelled = [_timeout_task(old)] if new.status.closed and old.timeout_at is not None else []
    for state in old.states.values():
        after = new.states.get(state.id)
        if state.phase is Phase.WAITING and (after is None or after.phase is not Phase.WAITING):
            cancelled += _timer_tasks(old, state)
    return cancelled


def _timeout_task(execution: Execution) -> Task:
    assert execution.timeout_at is not None
    return Task(
        kind=TaskKind.TIMEOUT,
        workflow_id=execution.workflow_id,
        run_id=execution.run_id,
        due_at=execution.timeout_at,
    )


def _timer_tasks(execution: Execution, state: StateExecution) -> list[Task]:
    """A task per timer of a waiting state that has not fired."""
    timers = state.waiting.timers if state.waiting else []
    return [
        Task(
            kind=TaskKind.TIMER,
            workflow_id=execution.workflow_id,
            run_id=execution.run_id,
            state_execution_id=state.id,
            timer_index=index,
            due_at=timer.fire_at,
        )
        for index, timer in enumerate(timers)
        if not timer.fired
    ]
