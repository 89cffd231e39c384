"""SQS task queue -> worker calls and their commits."""

from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from xdb.engine import tasks
from xdb.engine.runtime import engine
from xdb.model.task import Task

logger = Logger(service="xdb-task")
tracer = Tracer(service="xdb-task")
METRICS_NAMESPACE = "XDB"


def record_handler(record: SQSRecord) -> None:
    tasks.handle(engine(), Task.model_validate_json(record.body))


@logger.inject_lambda_context
@tracer.capture_lambda_handler(capture_response=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # A processor per invocation: it holds per-batch state, and the local runtime runs
    # invocations side by side in one process.
    response = process_partial_response(
        event=event,
        record_handler=record_handler,
        processor=BatchProcessor(event_type=EventType.SQS),
        context=context,
    )
    if failed := len(response.get("batchItemFailures", [])):
        # Partial failures are no function error (a batch that fails whole is): without
        # this count they would not show. A metric set of its own, as above.
        metrics = EphemeralMetrics(namespace=METRICS_NAMESPACE, service="xdb-task")
        metrics.add_metric(name="TaskRecordsFailed", unit=MetricUnit.Count, value=failed)
        metrics.flush_metrics()
    return response
