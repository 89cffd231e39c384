"""What a committed change asks for: the tasks to enqueue for a new snapshot.

The stream handler calls :func:`tasks_for` with the old and new images of a changed
execution. A stream record may arrive twice: the tasks it yields are then enqueued twice,
and the task handler drops the copy that no longer matches the snapshot.
"""

from __future__ import annotations

from xdb.model.execution import Execution, Phase
from xdb.model.task import Task, TaskKind


def tasks_for(old: Execution | None, new: Execution) -> list[Task]:
    """The tasks that become due because ``old`` became ``new``."""
    if old is not None and old.run_id != new.run_id:
        old = None
    if new.status.closed:
        return []
    tasks: list[Task] = []
    if old is None and new.timeout_at is not None:
        tasks.append(
            Task(
                kind=TaskKind.TIMEOUT,
                workflow_id=new.workflow_id,
                run_id=new.run_id,
                due_at=new.timeout_at,
            )
        )
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
                        due_at=state.retry_at or 0.0,
                    )
                )
        elif state.phase is Phase.WAITING and state.waiting is not None:
            was_waiting = before is not None and before.phase is Phase.WAITING
            if was_waiting:
                continue
            for index, timer in enumerate(state.waiting.timers):
                tasks.append(
                    Task(
                        kind=TaskKind.TIMER,
                        workflow_id=new.workflow_id,
                        run_id=new.run_id,
                        state_execution_id=state.id,
                        timer_index=index,
                        due_at=timer.fire_at,
                    )
                )
    return tasks


def cancelled_for(old: Execution | None, new: Execution) -> list[Task]:
    """Timer and timeout tasks of ``old`` that nothing waits for in ``new`` any more."""
    if old is None or old.run_id != new.run_id or old.status.closed:
        return []
    cancelled: list[Task] = []
    if new.status.closed and old.timeout_at is not None:
        cancelled.append(
            Task(
                kind=TaskKind.TIMEOUT,
                workflow_id=old.workflow_id,
                run_id=old.run_id,
                due_at=old.timeout_at,
            )
        )
    for state in old.states.values():
        if state.phase is not Phase.WAITING or state.waiting is None:
            continue
        after = new.states.get(state.id)
        if after is not None and after.phase is Phase.WAITING:
            continue
        cancelled += [
            Task(
                kind=TaskKind.TIMER,
                workflow_id=old.workflow_id,
                run_id=old.run_id,
                state_execution_id=state.id,
                timer_index=index,
                due_at=timer.fire_at,
            )
            for index, timer in enumerate(state.waiting.timers)
            if not timer.fired
        ]
    return cancelled
