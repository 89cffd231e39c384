"""The SQS task queue: tasks go in with a delay up to SQS's 15-minute maximum."""

from __future__ import annotations

from typing import Any

from xdb.model.task import Task

MAX_DELAY_SECONDS = 900  # SQS's limit; a task due later is re-sent when it arrives early


class TaskQueue:
    def __init__(self, client: Any, queue_url: str) -> None:
        self._sqs = client
        self._url = queue_url

    def send(self, tasks: list[Task], *, now: float) -> None:
        """Send tasks, each delayed until it is due (at most 15 minutes)."""
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


def delay_for(task: Task, *, now: float) -> int:
    # Round up: a task that arrives a fraction early would only be re-sent.
    remaining = task.due_at - now
    if remaining <= 0:
        return 0
    return min(MAX_DELAY_SECONDS, int(remaining) + (0 if remaining.is_integer() else 1))
