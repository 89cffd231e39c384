"""The XDB stack: one table with a stream, a task queue with a DLQ, three functions, an HTTP API.

The table's keys and stream, the task queue's settings and both triggers come from
:mod:`xdb.store.table`, the same definition the local runtime builds from.

Secure by default: the API needs IAM (SigV4) callers unless a JWT issuer is given;
the engine calls only the worker URL prefixes the stack is given, and signs each call
with a secret kept in Secrets Manager. Alarms watch what would otherwise fail silently
(dead letters, a stream falling behind, function errors); one dashboard shows them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from urllib.parse import urlsplit

import jsii
from aws_cdk import Acknowledgment, CfnOutput, Duration, RemovalPolicy, Stack, Validations
from aws_cdk import aws_apigateway as apigw_v1
from aws_cdk import aws_apigatewayv2 as apigw
from aws_cdk import aws_apigatewayv2_authorizers as authorizers
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_logs as logs
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sqs as sqs
from constructs import Construct, IConstruct

from infra.bundling import code_asset, dependencies_asset
from xdb.store import table as schema

RUNTIME = lambda_.Runtime.PYTHON_3_12
MAX_API_TIMEOUT_SECONDS = schema.MAX_API_TIMEOUT_SECONDS
TASK_TIMEOUT = Duration.seconds(schema.TASK_FUNCTION_TIMEOUT_SECONDS)
# API Gateway ends a request at 29 s; long polls end at 25 s (see Settings).
API_TIMEOUT = Duration.seconds(29)
STREAM_TIMEOUT = Duration.seconds(60)
METRICS_NAMESPACE = "XDB"
# The stream may fall this far behind (its oldest unread record's age) before it alarms.
MAX_ITERATOR_AGE = Duration.minutes(1)
MINUTE = Duration.minutes(1)


class XdbStack(Stack):
    """The engine, deployable as it is.

    Args:
        worker_urls: URL prefixes of the workers the engine may call, each
            ``http(s)://host[:port][/path]`` (scheme, host and port must match exactly, the
            path by whole segments: see ``xdb.core.workers``). Required: a start naming
            any other worker URL is refused.
        global_attribute_tables: names of your DynamoDB tables that processes may bind
            global attributes to. The engine gets read and write access to those, nothing else.
        jwt_issuer, jwt_audience: authorize API callers by a JWT from this issuer for
            one of these audiences instead of by IAM (SigV4). Both or neither.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        worker_urls: Sequence[str],
        global_attribute_tables: Sequence[str] = (),
        jwt_issuer: str | None = None,
        jwt_audience: Sequence[str] = (),
        **kwargs: object,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)  # type: ignore[arg-type]
        worker_urls = checked_worker_urls(worker_urls)
        if bool(jwt_issuer) != bool(jwt_audience):
            raise ValueError(
                "JWT authorization needs both an issuer and an audience "
                "(-c jwtIssuer=https://issuer.example.com/ -c jwtAudience=xdb)"
            )

        self.table = self._table()
        self._queues()
        deps = lambda_.LayerVersion(
            self,
            "Dependencies",
            code=dependencies_asset(),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[lambda_.Architecture.ARM_64],
            description="pydantic, aws-lambda-powertools and aws-xray-sdk for the XDB functions",
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
        # Workers verify each call's signature with this secret (see xdb.signing).
        self.signing_secret = secretsmanager.Secret(
            self,
            "SigningSecret",
            description="XDB signs each call to a worker with this (HMAC-SHA256); workers verify",
            generate_secret_string=secretsmanager.SecretStringGenerator(
                password_length=64, exclude_punctuation=True
            ),
        )
        environment = {
            "XDB_TABLE_NAME": self.table.table_name,
            "XDB_QUEUE_URL": self.queue.queue_url,
            "XDB_QUEUE_ARN": self.queue.queue_arn,
            "XDB_SCHEDULE_GROUP": self.schedule_group.ref,
            "XDB_SCHEDULER_ROLE_ARN": self.scheduler_role.role_arn,
            "XDB_MAX_API_TIMEOUT_SECONDS": str(MAX_API_TIMEOUT_SECONDS),
            "XDB_GLOBAL_ATTRIBUTE_TABLES": ",".join(global_attribute_tables),
            "POWERTOOLS_SERVICE_NAME": "xdb",
            "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
        }
        # Only the functions that call workers (the API for RPCs) know the secret and the
        # allowed URLs.
        calls_workers = {
            "XDB_SIGNING_SECRET_ARN": self.signing_secret.secret_arn,
            "XDB_WORKER_URLS": ",".join(worker_urls),
        }

        def function(
            name: str, module: str, timeout: Duration, memory: int, env: dict[str, str]
        ) -> lambda_.Function:
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
                environment=env,
                tracing=lambda_.Tracing.ACTIVE,
            )

        self.api_function = function(
            "ApiFunction", "api_http", API_TIMEOUT, 512, environment | calls_workers
        )
        self.stream_function = function(
            "StreamFunction", "stream_ddb", STREAM_TIMEOUT, 256, environment
        )
        self.task_function = function(
            "TaskFunction", "task_sqs", TASK_TIMEOUT, 512, environment | calls_workers
        )
        self.functions = (self.api_function, self.stream_function, self.task_function)
        self._grants(global_attribute_tables)
        self._triggers()
        self.http_api = self._api(jwt_issuer, jwt_audience)
        self.dashboard = self._monitoring()

        CfnOutput(
            self,
            "ApiUrl",
            value=self.http_api.api_endpoint,
            description="the XDB API (iWF server URL)",
        )
        CfnOutput(self, "TableName", value=self.table.table_name)
        CfnOutput(self, "TaskQueueUrl", value=self.queue.queue_url)
        CfnOutput(
            self,
            "SigningSecretArn",
            value=self.signing_secret.secret_arn,
            description="workers read this secret to verify that a call comes from XDB",
        )
        CfnOutput(self, "DashboardName", value=self.dashboard.dashboard_name)
        self._acknowledge_checks()

    def _table(self) -> dynamodb.Table:
        table = dynamodb.Table(
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
            table.add_global_secondary_index(
                index_name=index["IndexName"],
                partition_key=keys["HASH"],
                sort_key=keys.get("RANGE"),
                projection_type=dynamodb.ProjectionType(index["Projection"]["ProjectionType"]),
                non_key_attributes=index["Projection"].get("NonKeyAttributes"),
            )
        return table

    def _queues(self) -> None:
        settings = schema.TASK_QUEUE
        dead_letters = Duration.seconds(settings["DeadLetterRetentionSeconds"])
        self.dlq = _queue(self, "TasksDlq", retention_period=dead_letters)
        self.queue = _queue(
            self,
            "Tasks",
            visibility_timeout=Duration.seconds(settings["VisibilityTimeout"]),
            dead_letter_queue=sqs.DeadLetterQueue(
                queue=self.dlq, max_receive_count=settings["MaxReceiveCount"]
            ),
        )
        # Where the stream trigger leaves a batch it gave up on (which shard and sequence
        # numbers; the records stay in the stream for 24 hours): without it the records
        # would be skipped without a trace.
        self.stream_failures = _queue(self, "StreamFailures", retention_period=dead_letters)

    def _grants(self, global_attribute_tables: Sequence[str]) -> None:
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
        for function_ in (self.api_function, self.task_function):
            self.signing_secret.grant_read(function_)
        self.queue.grant_send_messages(self.stream_function)
        self.queue.grant_send_messages(self.task_function)  # tasks due after 15 minutes
        for function_ in (self.stream_function, self.task_function):
            function_.add_to_role_policy(
                iam.PolicyStatement(
                    actions=["scheduler:CreateSchedule", "scheduler:DeleteSchedule"],
                    resources=[self._schedules_arn()],
                )
            )
            self.scheduler_role.grant_pass_role(function_)

    def _schedules_arn(self) -> str:
        return self.format_arn(
            service="scheduler", resource="schedule", resource_name=f"{self.schedule_group.ref}/*"
        )

    def _triggers(self) -> None:
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
                on_failure=sources.SqsDlq(self.stream_failures),
            )
        )
        self.task_function.add_event_source(
            sources.SqsEventSource(
                self.queue, batch_size=task["BatchSize"], report_batch_item_failures=True
            )
        )

    def _api(self, jwt_issuer: str | None, jwt_audience: Sequence[str]) -> apigw.HttpApi:
        authorizer: apigw.IHttpRouteAuthorizer = (
            authorizers.HttpJwtAuthorizer("Jwt", jwt_issuer, jwt_audience=list(jwt_audience))
            if jwt_issuer
            else authorizers.HttpIamAuthorizer()
        )
        api = apigw.HttpApi(
            self,
            "Api",
            default_integration=integrations.HttpLambdaIntegration(
                "ApiIntegration", self.api_function
            ),
            default_authorizer=authorizer,
            # Created below, with access logs.
            create_default_stage=False,
        )
        access_logs = logs.LogGroup(
            self, "ApiAccessLogs", retention=logs.RetentionDays.THREE_MONTHS
        )
        api.add_stage(
            "DefaultStage",
            stage_name="$default",
            auto_deploy=True,
            access_log_settings=_AccessLogs(access_logs),
        )
        return api

    def _monitoring(self) -> cw.Dashboard:
        """Alarms on what would otherwise fail silently, and one dashboard."""
        dead_letters = {"task dead letters": self.dlq, "stream failures": self.stream_failures}
        depth = {
            name: queue.metric_approximate_number_of_messages_visible(
                period=MINUTE, statistic="Maximum"
            )
            for name, queue in dead_letters.items()
        }
        iterator_age = self.stream_function.metric(
            "IteratorAge", period=MINUTE, statistic="Maximum"
        )
        errors = {f: f.metric_errors(period=MINUTE, statistic="Sum") for f in self.functions}
        self.alarms = [
            _alarm(self, "TaskDeadLetters", depth["task dead letters"], 0, "a task was given up"),
            _alarm(
                self, "StreamFailures", depth["stream failures"], 0, "stream records were skipped"
            ),
            _alarm(
                self,
                "StreamIteratorAge",
                iterator_age,
                MAX_ITERATOR_AGE.to_milliseconds(),
                "the stream function is falling behind",
                periods=3,
            ),
            *(
                _alarm(self, f"{f.node.id}Errors", metric, 0, f"the {_name(f)} failed")
                for f, metric in errors.items()
            ),
        ]

        dashboard = cw.Dashboard(self, "Dashboard", dashboard_name=f"{self.stack_name}-xdb")
        api = self.http_api
        failed_records = [
            cw.Metric(
                namespace=METRICS_NAMESPACE,
                metric_name=name,
                dimensions_map={"service": service},
                statistic="Sum",
                period=MINUTE,
            )
            for name, service in (
                ("StreamRecordsFailed", "xdb-stream"),
                ("TaskRecordsFailed", "xdb-task"),
            )
        ]
        tasks = self.queue.metric_approximate_number_of_messages_visible(
            period=MINUTE, statistic="Maximum", label="tasks"
        )
        dashboard.add_widgets(cw.AlarmStatusWidget(title="Alarms", alarms=self.alarms, width=24))
        dashboard.add_widgets(
            _graph(
                "API requests",
                api.metric_count(period=MINUTE, label="requests"),
                api.metric_client_error(period=MINUTE, label="4xx"),
                api.metric_server_error(period=MINUTE, label="5xx"),
            ),
            _graph("API latency (p99, ms)", api.metric_latency(period=MINUTE, statistic="p99")),
        )
        dashboard.add_widgets(
            _graph("Function errors", *(m.with_(label=_name(f)) for f, m in errors.items())),
            _graph(
                "Function duration (p99, ms)",
                *(
                    f.metric_duration(period=MINUTE, statistic="p99", label=_name(f))
                    for f in self.functions
                ),
            ),
        )
        dashboard.add_widgets(
            _graph(
                "Queues (messages visible)",
                tasks,
                *(metric.with_(label=name) for name, metric in depth.items()),
            ),
            cw.GraphWidget(
                title="Stream iterator age (ms)",
                left=[iterator_age],
                left_annotations=[
                    cw.HorizontalAnnotation(value=MAX_ITERATOR_AGE.to_milliseconds())
                ],
            ),
            _graph("Records failed and retried", *failed_records),
        )
        return dashboard

    def _acknowledge_checks(self) -> None:
        """The cdk-nag AwsSolutions findings this stack accepts, each with its reason."""
        table = self.resolve(self.table.table_arn)["Fn::GetAtt"][0]
        timers = self.resolve(self.schedule_group.ref)["Ref"]
        for function_ in self.functions:
            role = function_.role
            assert role is not None
            policy = role.node.find_child("DefaultPolicy")
            _acknowledge(
                role,
                "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                "AWSLambdaBasicExecutionRole]",
                "AWS's managed policy for a function's own log group; it grants no data access",
            )
            _acknowledge(
                policy,
                "AwsSolutions-IAM5[Resource::*]",
                "X-Ray's PutTraceSegments/PutTelemetryRecords (and, for the stream trigger, "
                "dynamodb:ListStreams) take no resource",
            )
            _acknowledge(
                policy,
                f"AwsSolutions-IAM5[Resource::<{table}.Arn>/index/*]",
                "the indexes of the engine's own table (search); CDK's table grant adds them",
            )
            _acknowledge(
                function_,
                "AwsSolutions-L1",
                "Python 3.12 on purpose: the dependency layer is built from cp312 wheels "
                "(infra/bundling.py) and tested there; move the runtime and the layer together",
            )
        for function_ in (self.stream_function, self.task_function):
            assert function_.role is not None
            _acknowledge(
                function_.role.node.find_child("DefaultPolicy"),
                "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:scheduler:<AWS::Region>:"
                f"<AWS::AccountId>:schedule/<{timers}>/*]",
                "timers are schedules with generated names: any in the stack's own group only",
            )
        _acknowledge(
            self.stream_failures,
            "AwsSolutions-SQS3",
            "it is the stream trigger's on-failure destination, a dead-letter queue itself",
        )
        _acknowledge(
            self.signing_secret,
            "AwsSolutions-SMG4",
            "rotation needs workers to accept the old and the new secret for a while; until "
            "the engine signs with both, rotate by hand: update the secret, then the workers",
        )


@jsii.implements(apigw.IAccessLogSettings)
class _AccessLogs:
    """JSON access logs of HTTP API variables (who called, what, status, latency)."""

    def __init__(self, group: logs.ILogGroup) -> None:
        self._destination = apigw.LogGroupLogDestination(group)

    @property
    def destination(self) -> apigw.IAccessLogDestination:
        return self._destination

    @property
    def format(self) -> apigw_v1.AccessLogFormat:
        return apigw_v1.AccessLogFormat.custom(json.dumps(ACCESS_LOG_FIELDS))


ACCESS_LOG_FIELDS = {
    "requestId": "$context.requestId",
    "time": "$context.requestTime",
    "ip": "$context.identity.sourceIp",
    "caller": "$context.identity.userArn",
    "method": "$context.httpMethod",
    "path": "$context.path",
    "status": "$context.status",
    "latencyMs": "$context.responseLatency",
    "bytes": "$context.responseLength",
    "authorizerError": "$context.authorizer.error",
    "integrationError": "$context.integrationErrorMessage",
}


def checked_worker_urls(urls: Sequence[str]) -> list[str]:
    """The allowed worker URL prefixes, or a ValueError that says how to give them."""
    if not urls:
        raise ValueError(
            "no worker URLs: the engine calls only workers under the URL prefixes you allow. "
            "Pass them with -c workerUrls=https://workers.example.com/ "
            "(comma-separated for several)"
        )
    for url in urls:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                f"worker URL prefix {url!r} must be http(s)://host[:port][/path], "
                "e.g. https://workers.example.com/"
            )
    return list(urls)


def _queue(scope: Construct, name: str, **kwargs: object) -> sqs.Queue:
    return sqs.Queue(
        scope,
        name,
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        **kwargs,  # type: ignore[arg-type]
    )


def _alarm(
    scope: Construct,
    name: str,
    metric: cw.Metric,
    threshold: float,
    what: str,
    *,
    periods: int = 1,
) -> cw.Alarm:
    return metric.create_alarm(
        scope,
        f"{name}Alarm",
        alarm_description=f"XDB: {what}",
        threshold=threshold,
        evaluation_periods=periods,
        comparison_operator=cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
        treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
    )


def _graph(title: str, *metrics: cw.IMetric) -> cw.GraphWidget:
    return cw.GraphWidget(title=title, left=list(metrics))


def _name(function_: lambda_.Function) -> str:
    """``api function``, ``stream function``, ``task function``."""
    return function_.node.id.removesuffix("Function").lower() + " function"


def _acknowledge(scope: IConstruct, finding: str, reason: str) -> None:
    Validations.of(scope).acknowledge(Acknowledgment(id=finding, reason=reason))


def _key(name: str) -> dynamodb.Attribute:
    definition = next(d for d in schema.TABLE["AttributeDefinitions"] if d["AttributeName"] == name)
    return dynamodb.Attribute(name=name, type=_TYPES[definition["AttributeType"]])


_TYPES = {
    "S": dynamodb.AttributeType.STRING,
    "N": dynamodb.AttributeType.NUMBER,
    "B": dynamodb.AttributeType.BINARY,
}
