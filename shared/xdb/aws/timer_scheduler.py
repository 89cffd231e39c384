"""EventBridge Scheduler for tasks due beyond SQS's 15-minute delay.

A one-time schedule (``at(...)``) sends the task to the task queue a minute before it is
due; the task handler then finishes the wait with an SQS delay. Schedules delete
themselves after they fire; a schedule that fires for a timer nobody waits for any more
changes nothing, and the stream handler deletes those it can.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from typing import Any

from botocore.exceptions import ClientError

from xdb.model.task import Task

# Scheduler fires within the minute; sending a minute early leaves the rest to SQS.
LEAD_SECONDS = 60


class TimerScheduler:
    def __init__(self, client: Any, *, group: str, queue_arn: str, role_arn: str) -> None:
        self._scheduler = client
        self._group = group
        self._queue_arn = queue_arn
        self._role_arn = role_arn

    def schedule(self, task: Task) -> None:
        """Create the task's schedule; creating it twice is a no-op."""
        at = dt.datetime.fromtimestamp(task.due_at - LEAD_SECONDS, tz=dt.UTC).replace(
            second=0, microsecond=0
        )
        try:
            self._scheduler.create_schedule(
                Name=schedule_name(task),
                GroupName=self._group,
                ScheduleExpression=f"at({at:%Y-%m-%dT%H:%M:%S})",
                ScheduleExpressionTimezone="UTC",
                FlexibleTimeWindow={"Mode": "OFF"},
                ActionAfterCompletion="DELETE",
                Target={
                    "Arn": self._queue_arn,
                    "RoleArn": self._role_arn,
                    "Input": task.model_dump_json(exclude_none=True),
                },
            )
        except ClientError as error:
            if error.response["Error"]["Code"] != "ConflictException":
                raise

    def cancel(self, task: Task) -> None:
        """Delete the task's schedule if it is still there."""
        try:
            self._scheduler.delete_schedule(Name=schedule_name(task), GroupName=self._group)
        except ClientError as error:
            if error.response["Error"]["Code"] != "ResourceNotFoundException":
                raise


def schedule_name(task: Task) -> str:
    """A name per task, within Scheduler's 64 characters: the same task, the same schedule."""
    return "xdb-" + hashlib.sha256(task.dedup_key.encode()).hexdigest()[:40]
