"""API Gateway HTTP API -> the engine API (iWF server protocol)."""

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from xdb.api.app import app

logger = Logger(service="xdb-api")


@logger.inject_lambda_context
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
