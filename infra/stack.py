"""The XDB stack: one table with a stream, a task queue with a DLQ, three functions, an HTTP API.

The table's keys and stream, the task queue's settings and both triggers come from
:mod:`xdb.store.table`, the same definition the local runtime builds from.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import CfnOutput, Duration, RemovalPolicy, Stack
from aws_cdk import aws_apigatewayv2 as apigw
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.bundling import code_asset, dependencies_asset
from xdb.store import table as schema

RUNTIME = lambda_.Runtime.PYTHON_3_12
MAX_API_TIMEOUT_SECONDS = schema.MAX_API_TIMEOUT_SECONDS
TASK_TIMEOUT = Duration.seconds(schema.TASK_FUNCTION_TIMEOUT_SECONDS)
# API Gateway ends a request at 29 s; long polls end at 25 s (see Settings).
API_TIMEOUT = Duration.seconds(29)
STREAM_TIMEOUT = Duration.seconds(60)


class XdbStack(Stack):
    """``global_attribute_tables``: names of your DynamoDB tables that processes may bind
    global attributes to. The engine gets read and write access to those, nothing else."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        global_attribute_tables: Sequence[str] = (),
        **kwargs: object,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)  # type: ignore[arg-type]

        self.table = dynamodb.Table(
            self,
            "Executions",
            partition_key=_key(schema.PK),
            sort_key=_key(schema.SK),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            stream=dynamodb.StreamViewType(schema.STREAM_VIEW),
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            time_to_live_attribute=schema.TTL_ATTRIBUTE,
            removal_policy=RemovalPolicy.RETAIN,
        )
        for index in schema.TABLE["GlobalSecondaryIndexes"]:
            keys = {k["KeyType"]: _key(k["AttributeName"]) for k in index["KeySchema"]}
            self.table.add_global_secondary_index(
                index_name=index["IndexName"],
                partition_key=keys["HASH"],
                sort_key=keys.get("RANGE"),
                projection_type=dynamodb.ProjectionType(index["Projection"]["ProjectionType"]),
                non_key_attributes=index["Projection"].get("NonKeyAttributes"),
            )
        settings = schema.TASK_QUEUE
        self.dlq = sqs.Queue(
            self,
            "TasksDlq",
            retention_period=Duration.seconds(settings["DeadLetterRetentionSeconds"]),
            enforce_ssl=True,
        )
        self.queue = sqs.Queue(
            self,
            "Tasks",
            visibility_timeout=Duration.seconds(settings["VisibilityTimeout"]),
            dead_letter_queue=sqs.DeadLetterQueue(
                queue=self.dlq, max_receive_count=settings["MaxReceiveCount"]
            ),
            enforce_ssl=True,
        )

        deps = lambda_.LayerVersion(
            self,
            "Dependencies",
            code=dependencies_asset(),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[lambda_.Architecture.ARM_64],
            description="pydantic and aws-lambda-powertools for the XDB functions",
        )
        # Timers beyond SQS's 15 minutes: one-time schedules in this group, sent to the
        # task queue with this role.
        self.schedule_group = scheduler.CfnScheduleGroup(
            self, "Timers", name=f"{construct_id}-timers"
        )
        self.scheduler_role = iam.Role(
            self,
            "SchedulerRole",
            assumed_by=iam.ServicePrincipal("scheduler.amazonaws.com"),
            description="lets EventBridge Scheduler send due XDB timers to the task queue",
        )
        self.queue.grant_send_messages(self.scheduler_role)
        environment = {
            "XDB_TABLE_NAME": self.table.table_name,
            "XDB_QUEUE_URL": self.queue.queue_url,
            "XDB_QUEUE_ARN": self.queue.queue_arn,
            "XDB_SCHEDULE_GROUP": self.schedule_group.ref,
            "XDB_SCHEDULER_ROLE_ARN": self.scheduler_role.role_arn,
            "XDB_MAX_API_TIMEOUT_SECONDS": str(MAX_API_TIMEOUT_SECONDS),
            "XDB_GLOBAL_ATTRIBUTE_TABLES": ",".join(global_attribute_tables),
            "POWERTOOLS_SERVICE_NAME": "xdb",
        }

        def function(name: str, module: str, timeout: Duration, memory: int) -> lambda_.Function:
            return lambda_.Function(
                self,
                name,
                runtime=RUNTIME,
                architecture=lambda_.Architecture.ARM_64,
                handler=f"functions.{module}.lambda_handler",
                code=code_asset(),
                layers=[deps],
                timeout=timeout,
                memory_size=memory,
                environment=environment,
            )

        self.api_function = function("ApiFunction", "api_http", API_TIMEOUT, 512)
        self.stream_function = function("StreamFunction", "stream_ddb", STREAM_TIMEOUT, 256)
        self.task_function = function("TaskFunction", "task_sqs", TASK_TIMEOUT, 512)

        self.table.grant_read_write_data(self.api_function)
        self.table.grant_read_write_data(self.task_function)
        self.table.grant_write_data(self.stream_function)  # history items
        if global_attribute_tables:
            rows = iam.PolicyStatement(
                # Read a bound row; write it in the commit's transaction.
                actions=["dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:ConditionCheckItem"],
                resources=[
                    self.format_arn(service="dynamodb", resource="table", resource_name=name)
                    for name in global_attribute_tables
                ],
            )
            for function_ in (self.api_function, self.task_function):
                function_.add_to_role_policy(rows)
        self.queue.grant_send_messages(self.stream_function)
        self.queue.grant_send_messages(self.task_function)  # tasks due after 15 minutes
        schedules = self.format_arn(
            service="scheduler", resource="schedule", resource_name=f"{self.schedule_group.ref}/*"
        )
        for function_ in (self.stream_function, self.task_function):
            function_.add_to_role_policy(
                iam.PolicyStatement(
                    actions=["scheduler:CreateSchedule", "scheduler:DeleteSchedule"],
                    resources=[schedules],
                )
            )
            self.scheduler_role.grant_pass_role(function_)

        stream, task = schema.STREAM_TRIGGER, schema.TASK_TRIGGER
        self.stream_function.add_event_source(
            sources.DynamoEventSource(
                self.table,
                starting_position=lambda_.StartingPosition.TRIM_HORIZON,
                batch_size=stream["BatchSize"],
                bisect_batch_on_error=stream["BisectBatchOnFunctionError"],
                retry_attempts=stream["MaximumRetryAttempts"],
                report_batch_item_failures=True,
                filters=[lambda_.FilterCriteria.filter(stream["Filter"])],
            )
        )
        self.task_function.add_event_source(
            sources.SqsEventSource(
                self.queue, batch_size=task["BatchSize"], report_batch_item_failures=True
            )
        )

        self.http_api = apigw.HttpApi(
            self,
            "Api",
            default_integration=integrations.HttpLambdaIntegration(
                "ApiIntegration", self.api_function
            ),
        )
        CfnOutput(
            self,
            "ApiUrl",
            value=self.http_api.api_endpoint,
            description="the XDB API (iWF server URL)",
        )
        CfnOutput(self, "TableName", value=self.table.table_name)
        CfnOutput(self, "TaskQueueUrl", value=self.queue.queue_url)


def _key(name: str) -> dynamodb.Attribute:
    definition = next(d for d in schema.TABLE["AttributeDefinitions"] if d["AttributeName"] == name)
    return dynamodb.Attribute(name=name, type=_TYPES[definition["AttributeType"]])


_TYPES = {
    "S": dynamodb.AttributeType.STRING,
    "N": dynamodb.AttributeType.NUMBER,
    "B": dynamodb.AttributeType.BINARY,
}
