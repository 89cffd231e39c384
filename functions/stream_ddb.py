"""DynamoDB stream of the executions table -> task messages and history."""

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from xdb.engine import stream
from xdb.engine.runtime import engine

logger = Logger(service="xdb-stream")


@logger.inject_lambda_context
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # Partial batch response: Lambda retries from the first sequence number reported.
    failed = stream.handle_batch(engine(), event.get("Records", []))
    return {"batchItemFailures": [{"itemIdentifier": sequence} for sequence in failed]}
