"""Task messages: what the task queue carries from the stream to the task handler.

A task is a pointer to work in an execution snapshot, never the work itself: the task
handler reloads the snapshot and drops the task when it no longer matches (a duplicate
or late delivery).
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from xdb.model.execution import Phase


class TaskKind(StrEnum):
    STATE = "state"  # call the worker for a state execution's current phase
    TIMER = "timer"  # a timer command is due
    TIMEOUT = "timeout"  # the process timeout is due


class Task(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: TaskKind
    workflow_id: str
    run_id: str
    due_at: float
    state_execution_id: str | None = None
    attempt: int | None = None
    # Which worker call a state task is for: a snapshot at the same attempt but another
    # phase (a stale read, a late duplicate) must not make the handler call the other API.
    phase: Phase | None = None
    timer_index: int | None = None

    @property
    def dedup_key(self) -> str:
        return (
            f"{self.kind}:{self.run_id}:{self.state_execution_id}:{self.attempt}:{self.timer_index}"
        )
