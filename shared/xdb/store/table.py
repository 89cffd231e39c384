"""The one DynamoDB table: its keys and stream, defined once.

The CDK stack and the local runtime both build the table from :data:`TABLE`, so what
is deployed and what runs locally cannot drift apart.

Items (``pk`` / ``sk``)::

    WF#<workflowId> / RUN                      the current run's snapshot (streamed)
    WF#<workflowId> / RUN#<runId>              a replaced run, archived (read-only)
    WF#<workflowId> / H#<runId>#<ver>#<n>      history: the n-th event of version ver
"""

from __future__ import annotations

from typing import Any

PK, SK = "pk", "sk"
CURRENT = "RUN"
TTL_ATTRIBUTE = "expires_at"
STREAM_VIEW = "NEW_AND_OLD_IMAGES"

TABLE: dict[str, Any] = {
    "KeySchema": [
        {"AttributeName": PK, "KeyType": "HASH"},
        {"AttributeName": SK, "KeyType": "RANGE"},
    ],
    "AttributeDefinitions": [
        {"AttributeName": PK, "AttributeType": "S"},
        {"AttributeName": SK, "AttributeType": "S"},
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
