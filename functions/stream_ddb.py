"""DynamoDB stream of the executions table -> task messages and history."""

from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from xdb.engine import stream
from xdb.engine.runtime import engine

logger = Logger(service="xdb-stream")
tracer = Tracer(service="xdb-stream")
METRICS_NAMESPACE = "XDB"


@logger.inject_lambda_context
@tracer.capture_lambda_handler(capture_response=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # Partial batch response: Lambda retries from the first sequence number reported.
    failed = stream.handle_batch(engine(), event.get("Records", []))
    if failed:
        # Partial failures are no function error: without this count they would not show.
        # A metric set of its own, as the local runtime runs invocations side by side.
        metrics = EphemeralMetrics(namespace=METRICS_NAMESPACE, service="xdb-stream")
        metrics.add_metric(name="StreamRecordsFailed", unit=MetricUnit.Count, value=len(failed))
        metrics.flush_metrics()
    return {"batchItemFailures": [{"itemIdentifier": sequence} for sequence in failed]}
