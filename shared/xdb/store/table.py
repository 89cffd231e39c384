"""The one DynamoDB table: its keys and stream, defined once.

The CDK stack and the local runtime both build the table from :data:`TABLE`, so what
is deployed and what runs locally cannot drift apart.

Items (``pk`` / ``sk``)::

    WF#<workflowId> / RUN                      the current run's snapshot (streamed)
    WF#<workflowId> / RUN#<runId>              a replaced run, archived (read-only)
    WF#<workflowId> / H#<runId>#<ver>#<n>      history: the n-th event of version ver

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


def process_key(workflow_id: str) -> str:
    return f"WF#{workflow_id}"


def archive_key(run_id: str) -> str:
    return f"{CURRENT}#{run_id}"


def history_prefix(run_id: str) -> str:
    return f"H#{run_id}#"


def history_key(run_id: str, version: int, index: int) -> str:
    return f"{history_prefix(run_id)}{version:010d}#{index:03d}"
