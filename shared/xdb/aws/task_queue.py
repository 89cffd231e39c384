"""The task queue: SQS with a delay up to its 15-minute maximum, EventBridge Scheduler beyond."""

from __future__ import annotations

from typing import Any

from xdb.aws.timer_scheduler import TimerScheduler
from xdb.model.task import Task

MAX_DELAY_SECONDS = 900  # SQS's limit; a task due later is re-sent when it arrives early


class TaskQueue:
    def __init__(
        self, client: Any, queue_url: str, scheduler: TimerScheduler | None = None
    ) -> None:
        self._sqs = client
        self._url = queue_url
        self._scheduler = scheduler

    def send(self, tasks: list[Task], *, now: float) -> None:
        """Send tasks, each delayed until it is due: by SQS up to 15 minutes, by a schedule
        beyond (without a scheduler, SQS delays are chained instead)."""
        if self._scheduler is not None:
            for task in tasks:
                if task.due_at - now > MAX_DELAY_SECONDS:
                    self._scheduler.schedule(task)
            tasks = [t for t in tasks if t.due_at - now <= MAX_DELAY_SECONDS]
        for start in range(0, len(tasks), 10):
            entries = [
                {
                    "Id": str(index),
                    "MessageBody": task.model_dump_json(exclude_none=True),
                    "DelaySeconds": delay_for(task, now=now),
                }
                for index, task in enumerate(tasks[start : start + 10])
            ]
            answer = self._sqs.send_message_batch(QueueUrl=self._url, Entries=entries)
            if answer.get("Failed"):
                failed = answer["Failed"][0]
                raise RuntimeError(
                    f"SQS refused {len(answer['Failed'])} task(s): {failed.get('Message')}"
                )

    def cancel(self, tasks: list[Task], *, now: float) -> None:
        """Forget tasks nobody needs any more: only schedules can be taken back."""
        if self._scheduler is None:
            return
        for task in tasks:
            if task.due_at - now > MAX_DELAY_SECONDS:
                self._scheduler.cancel(task)


def delay_for(task: Task, *, now: float) -> int:
    # Round up: a task that arrives a fraction early would only be re-sent.
    remaining = task.due_at - now
    if remaining <= 0:
        return 0
    return min(MAX_DELAY_SECONDS, int(remaining) + (0 if remaining.is_integer() else 1))
