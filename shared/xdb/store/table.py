"""The one DynamoDB table, its stream trigger and the task queue, defined once.

The CDK stack and the local runtime both build the table from :data:`TABLE`, the task
queue from :data:`TASK_QUEUE`, and their triggers from :data:`STREAM_TRIGGER` and
:data:`TASK_TRIGGER`, so what is deployed and what runs locally cannot drift apart
(``tests/infra/test_definition.py`` compares the two).

Items (``pk`` / ``sk``)::

    WF#<workflowId> / RUN                      the current run's snapshot (streamed)
    WF#<workflowId> / RUN#<runId>              a replaced run, archived (read-only)
    WF#<workflowId> / H#<runId>#<ver>          a history page: events of versions ver, ver+1, ...
    WF#<workflowId> / A#<digest>               a large data attribute value, by its content

Run items (current and archived) also carry ``type``, ``status`` and ``sa`` (their search
attributes as a map): the sparse index :data:`SEARCH_INDEX` lists runs by process type
and status, for ``/api/v1/workflow/search``.
"""

from __future__ import annotations

from typing import Any

PK, SK = "pk", "sk"
CURRENT = "RUN"
TTL_ATTRIBUTE = "expires_at"
STREAM_VIEW = "NEW_AND_OLD_IMAGES"
SEARCH_INDEX = "by_type"
TYPE, STATUS, RUN_ID, SEARCH_ATTRIBUTES = "type", "status", "run_id", "sa"

TABLE: dict[str, Any] = {
    "KeySchema": [
        {"AttributeName": PK, "KeyType": "HASH"},
        {"AttributeName": SK, "KeyType": "RANGE"},
    ],
    "AttributeDefinitions": [
        {"AttributeName": PK, "AttributeType": "S"},
        {"AttributeName": SK, "AttributeType": "S"},
        {"AttributeName": TYPE, "AttributeType": "S"},
        {"AttributeName": STATUS, "AttributeType": "S"},
    ],
    # Only run items have a type: history items stay out of the index. It holds little
    # (keys, run id, search attributes), so an index write stays at one write unit.
    "GlobalSecondaryIndexes": [
        {
            "IndexName": SEARCH_INDEX,
            "KeySchema": [
                {"AttributeName": TYPE, "KeyType": "HASH"},
                {"AttributeName": STATUS, "KeyType": "RANGE"},
            ],
            "Projection": {
                "ProjectionType": "INCLUDE",
                "NonKeyAttributes": [RUN_ID, SEARCH_ATTRIBUTES],
            },
        }
    ],
    "BillingMode": "PAY_PER_REQUEST",
    "StreamSpecification": {"StreamEnabled": True, "StreamViewType": STREAM_VIEW},
}

# Only changes of a current-run snapshot are work for the stream handler; history and
# archive items are not. This is a Lambda event filter pattern (and the local pump's).
STREAM_FILTER: dict[str, Any] = {"dynamodb": {"Keys": {SK: {"S": [CURRENT]}}}}

# A worker call may take this long (Settings.max_api_timeout); the task function that
# makes it outlives it by a margin for the load before and the commit after.
MAX_API_TIMEOUT_SECONDS = 60
TASK_FUNCTION_TIMEOUT_SECONDS = MAX_API_TIMEOUT_SECONDS + 30

TASK_QUEUE: dict[str, int] = {
    # AWS's advice for a queue that triggers a function: at least 6 times the function's
    # timeout, so a batch Lambda retries after throttling is not redelivered meanwhile.
    # It is also how long a task whose handler died waits before it runs again.
    "VisibilityTimeout": 6 * TASK_FUNCTION_TIMEOUT_SECONDS,
    # Tasks are retried by the engine's own policies; SQS's count only catches poison
    # messages, which then wait in the dead-letter queue.
    "MaxReceiveCount": 10,
    # SQS's maximum: two weeks to look at a poison message before it is gone.
    "DeadLetterRetentionSeconds": 14 * 24 * 3600,
}

# The stream trigger (an event source mapping on AWS, the stream pump locally).
STREAM_TRIGGER: dict[str, Any] = {
    "BatchSize": 100,
    # The handler reports the first failed record; a batch that keeps failing is split
    # in two to isolate a poison record, which goes to the on-failure destination after
    # this many retries instead of blocking its shard.
    "MaximumRetryAttempts": 10,
    "BisectBatchOnFunctionError": True,
    "Filter": STREAM_FILTER,
}

# The task trigger: messages per invocation, each reported on its own when it fails.
TASK_TRIGGER: dict[str, Any] = {"BatchSize": 10}


def process_key(workflow_id: str) -> str:
    return f"WF#{workflow_id}"


def archive_key(run_id: str) -> str:
    return f"{CURRENT}#{run_id}"


HISTORY = "H#"


def history_prefix(run_id: str) -> str:
    return f"{HISTORY}{run_id}#"


def history_key(run_id: str, version: int) -> str:
    return f"{history_prefix(run_id)}{version:010d}"


def value_key(digest: str) -> str:
    return f"A#{digest}"
