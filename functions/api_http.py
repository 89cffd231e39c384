"""API Gateway HTTP API -> the engine API (iWF server protocol)."""

from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from xdb.api.app import app

logger = Logger(service="xdb-api")
# Off outside Lambda; on Lambda it traces the handler and, patched, its AWS and HTTP calls.
tracer = Tracer(service="xdb-api")


@logger.inject_lambda_context
# Responses carry process data: they stay out of the traces.
@tracer.capture_lambda_handler(capture_response=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
