"""Use case of the stream handler: turn committed changes into tasks and history pages.

Stream records arrive at least once, in order per item. A batch is handled as a whole:
the tasks and history pages of all its records are sent in as few calls as SQS and
DynamoDB allow. When something fails, the batch reports its first record as failed, so the
whole batch is delivered again; that is safe because tasks derived twice are dropped by the
task handler and history pages have fixed keys.
"""

from __future__ import annotations

import logging
from typing import Any

from xdb.core.work import cancelled_for, tasks_for
from xdb.engine.runtime import Engine
from xdb.model.execution import Event, Execution
from xdb.model.task import Task
from xdb.store.dynamodb_store import decode

transitions_log = logging.getLogger("xdb.transitions")
logger = logging.getLogger(__name__)


def handle_batch(engine: Engine, records: list[dict[str, Any]]) -> list[str]:
    """Handle stream records; return the sequence numbers to report as failed."""
    tasks: list[Task] = []
    cancelled: list[Task] = []
    changed: list[Execution] = []
    images: list[tuple[dict[str, Any] | None, dict[str, Any]]] = []
    failed: list[str] = []
    for record in records:
        try:
            change = _decode(record)
        except ValueError:
            # Handle the records before it, and report it: Lambda retries from there
            # and, once out of retries, sends it to the on-failure destination.
            logger.exception("unreadable stream record %s", _sequence(record))
            failed = [_sequence(record)]
            break
        if change is None:
            continue
        old, new = change
        tasks += tasks_for(old, new)
        cancelled += cancelled_for(old, new)
        changed.append(new)
        dynamodb = record["dynamodb"]
        images.append((dynamodb["OldImage"] if old is not None else None, dynamodb["NewImage"]))
    try:
        engine.queue.send(tasks, now=engine.clock())
        engine.queue.cancel(cancelled, now=engine.clock())
        engine.store.write_history(images)
    except Exception:
        logger.exception("stream batch failed; it will be delivered again")
        return [_sequence(records[0])] if records else []
    for execution in changed:
        for event in execution.events:
            transitions_log.info(describe(execution, event))
    return failed


def _decode(record: dict[str, Any]) -> tuple[Execution | None, Execution] | None:
    images = record.get("dynamodb", {})
    new_image, old_image = images.get("NewImage"), images.get("OldImage")
    if not new_image or "doc" not in new_image:
        return None
    new = decode(new_image)
    old = decode(old_image) if old_image and "doc" in old_image else None
    return old, new


def _sequence(record: dict[str, Any]) -> str:
    return str(record.get("dynamodb", {}).get("SequenceNumber", ""))


def describe(execution: Execution, event: Event) -> str:
    """One readable line for an event of an execution."""
    where = f" {event.state_execution_id}" if event.state_execution_id else ""
    return f"{execution.workflow_type} {execution.workflow_id}{where}: {event.kind} {event.detail}".rstrip()
