"""The CDK stack synthesizes, with the resources and settings the engine relies on."""

from __future__ import annotations

import json
import re
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match, Template

from infra.stack import MAX_API_TIMEOUT_SECONDS, XdbStack
from xdb.store import table as schema

WORKERS = ["https://workers.example.com/", "http://10.0.0.7:8802/iwf"]
HANDLERS = {"api": "api_http", "stream": "stream_ddb", "task": "task_sqs"}


def stack(name: str = "Test", **kwargs: Any) -> XdbStack:
    return XdbStack(cdk.App(), name, **{"worker_urls": WORKERS, **kwargs})


@pytest.fixture(scope="module")
def template() -> Template:
    return Template.from_stack(stack())


def function_id(template: Template, name: str) -> str:
    """The logical id of the api, stream or task function."""
    (logical_id,) = template.find_resources(
        "AWS::Lambda::Function",
        {"Properties": {"Handler": f"functions.{HANDLERS[name]}.lambda_handler"}},
    )
    return logical_id


def function_props(template: Template, name: str) -> dict[str, Any]:
    resources = template.find_resources("AWS::Lambda::Function")
    props: dict[str, Any] = resources[function_id(template, name)]["Properties"]
    return props


def construct_id(logical_id: str) -> str:
    """``TasksDlq`` of ``TasksDlq9F3A61B2`` (CDK appends a hash to top-level constructs)."""
    return re.sub("[0-9A-F]{8}$", "", logical_id)


def queue_id(template: Template, name: str) -> str:
    """The logical id of the queue whose construct id is ``name``."""
    queues = template.find_resources("AWS::SQS::Queue")
    (logical_id,) = (key for key in queues if construct_id(key) == name)
    return logical_id


def test_table_matches_the_shared_definition(template: Template) -> None:
    template.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "KeySchema": schema.TABLE["KeySchema"],
            "AttributeDefinitions": schema.TABLE["AttributeDefinitions"],
            "GlobalSecondaryIndexes": schema.TABLE["GlobalSecondaryIndexes"],
            "BillingMode": "PAY_PER_REQUEST",
            "StreamSpecification": {"StreamViewType": "NEW_AND_OLD_IMAGES"},
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
            "TimeToLiveSpecification": {"AttributeName": schema.TTL_ATTRIBUTE, "Enabled": True},
        },
    )


def test_task_queue_has_a_dlq_and_outlasts_the_task_function(template: Template) -> None:
    template.has_resource_properties(
        "AWS::SQS::Queue",
        {
            "RedrivePolicy": {"deadLetterTargetArn": Match.any_value(), "maxReceiveCount": 10},
            "VisibilityTimeout": (MAX_API_TIMEOUT_SECONDS + 30) * 6,
        },
    )


def test_three_arm64_functions_with_their_handlers(template: Template) -> None:
    for module in ("api_http", "stream_ddb", "task_sqs"):
        template.has_resource_properties(
            "AWS::Lambda::Function",
            {
                "Handler": f"functions.{module}.lambda_handler",
                "Runtime": "python3.12",
                "Architectures": ["arm64"],
                "Layers": Match.any_value(),
                "Environment": {
                    "Variables": Match.object_like({"XDB_TABLE_NAME": Match.any_value()})
                },
            },
        )


def test_stream_trigger_filters_partial_failures_and_bisects(template: Template) -> None:
    template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {
            "EventSourceArn": Match.any_value(),
            "BisectBatchOnFunctionError": True,
            "FunctionResponseTypes": ["ReportBatchItemFailures"],
            "MaximumRetryAttempts": 10,
            "FilterCriteria": {
                "Filters": [{"Pattern": '{"dynamodb":{"Keys":{"sk":{"S":["RUN"]}}}}'}]
            },
        },
    )


def test_task_trigger_reports_partial_failures(template: Template) -> None:
    template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {"BatchSize": 10, "FunctionResponseTypes": ["ReportBatchItemFailures"]},
    )


def test_http_api_routes_to_the_api_function(template: Template) -> None:
    template.resource_count_is("AWS::ApiGatewayV2::Api", 1)
    template.has_resource_properties(
        "AWS::ApiGatewayV2::Integration", {"IntegrationType": "AWS_PROXY"}
    )
    template.has_output("ApiUrl", {})


def test_long_timers_have_a_schedule_group_and_a_role_for_the_queue(template: Template) -> None:
    template.resource_count_is("AWS::Scheduler::ScheduleGroup", 1)
    template.has_resource_properties(
        "AWS::IAM::Role",
        {
            "AssumeRolePolicyDocument": Match.object_like(
                {
                    "Statement": [
                        Match.object_like({"Principal": {"Service": "scheduler.amazonaws.com"}})
                    ]
                }
            )
        },
    )
    template.has_resource_properties(
        "AWS::IAM::Policy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Action": ["scheduler:CreateSchedule", "scheduler:DeleteSchedule"],
                                "Effect": "Allow",
                            }
                        )
                    ]
                )
            }
        },
    )
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Environment": {
                "Variables": Match.object_like(
                    {
                        "XDB_SCHEDULE_GROUP": Match.any_value(),
                        "XDB_SCHEDULER_ROLE_ARN": Match.any_value(),
                    }
                )
            }
        },
    )


def test_global_attribute_tables_are_allowed_and_granted_and_nothing_else() -> None:
    template = Template.from_stack(stack("WithUsers", global_attribute_tables=["user"]))
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": "functions.task_sqs.lambda_handler",
            "Environment": {
                "Variables": Match.object_like({"XDB_GLOBAL_ATTRIBUTE_TABLES": "user"})
            },
        },
    )
    template.has_resource_properties(
        "AWS::IAM::Policy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Action": [
                                    "dynamodb:GetItem",
                                    "dynamodb:UpdateItem",
                                    "dynamodb:ConditionCheckItem",
                                ],
                                "Resource": {
                                    "Fn::Join": Match.array_with(
                                        [Match.array_with([":table/user"])]
                                    )
                                },
                            }
                        )
                    ]
                )
            }
        },
    )


# -- what fails, and where it goes ---------------------------------------------------------


def test_stream_trigger_sends_what_it_gives_up_on_to_a_queue(template: Template) -> None:
    template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {
            "FunctionName": {"Ref": function_id(template, "stream")},
            "DestinationConfig": {
                "OnFailure": {
                    "Destination": {"Fn::GetAtt": [queue_id(template, "StreamFailures"), "Arn"]}
                }
            },
        },
    )


def test_every_queue_is_encrypted_and_refuses_plain_http(template: Template) -> None:
    queues = template.find_resources("AWS::SQS::Queue")
    assert {construct_id(key) for key in queues} == {
        "Tasks",
        "TasksDlq",
        "StreamFailures",
    }
    for props in (queue["Properties"] for queue in queues.values()):
        assert props["SqsManagedSseEnabled"] is True
    for logical_id in queues:
        template.has_resource_properties(
            "AWS::SQS::QueuePolicy",
            {
                "Queues": [{"Ref": logical_id}],
                "PolicyDocument": {
                    "Statement": Match.array_with(
                        [
                            Match.object_like(
                                {
                                    "Effect": "Deny",
                                    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                                }
                            )
                        ]
                    )
                },
            },
        )


# -- alarms and the dashboard --------------------------------------------------------------


def alarm(template: Template, metric: str, dimensions: list[Any], threshold: float) -> None:
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "MetricName": metric,
            "Dimensions": dimensions,
            "Threshold": threshold,
            "ComparisonOperator": "GreaterThanThreshold",
            "TreatMissingData": "notBreaching",
        },
    )


def test_alarms_on_dead_letters_a_stream_falling_behind_and_function_errors(
    template: Template,
) -> None:
    template.resource_count_is("AWS::CloudWatch::Alarm", 6)
    for queue in ("TasksDlq", "StreamFailures"):
        name = {"Fn::GetAtt": [queue_id(template, queue), "QueueName"]}
        alarm(
            template,
            "ApproximateNumberOfMessagesVisible",
            [{"Name": "QueueName", "Value": name}],
            0,
        )
    stream = [{"Name": "FunctionName", "Value": {"Ref": function_id(template, "stream")}}]
    alarm(template, "IteratorAge", stream, 60_000)
    for function in HANDLERS:
        name = [{"Name": "FunctionName", "Value": {"Ref": function_id(template, function)}}]
        alarm(template, "Errors", name, 0)


def test_one_dashboard_shows_the_api_the_functions_and_the_queues(template: Template) -> None:
    (dashboard,) = template.find_resources("AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    for metric in (
        '\\"Count\\"',
        '\\"5xx\\"',
        '\\"Duration\\"',
        '\\"Errors\\"',
        '\\"IteratorAge\\"',
        '\\"ApproximateNumberOfMessagesVisible\\"',
        '\\"StreamRecordsFailed\\"',
        '\\"TaskRecordsFailed\\"',
    ):
        assert metric in body, metric
    assert "alarms" in body
    template.has_output("DashboardName", {"Value": {"Ref": Match.string_like_regexp("Dashboard")}})


def test_functions_are_traced_and_publish_metrics_in_the_xdb_namespace(template: Template) -> None:
    from functions import stream_ddb, task_sqs

    for function in HANDLERS:
        props = function_props(template, function)
        assert props["TracingConfig"] == {"Mode": "Active"}
        assert props["Environment"]["Variables"]["POWERTOOLS_METRICS_NAMESPACE"] == "XDB"
    assert stream_ddb.METRICS_NAMESPACE == task_sqs.METRICS_NAMESPACE == "XDB"


# -- who may call the API ------------------------------------------------------------------


def test_api_callers_need_iam_by_default(template: Template) -> None:
    template.has_resource_properties(
        "AWS::ApiGatewayV2::Route", {"RouteKey": "$default", "AuthorizationType": "AWS_IAM"}
    )
    template.resource_count_is("AWS::ApiGatewayV2::Authorizer", 0)


def test_api_callers_need_a_jwt_when_an_issuer_is_given() -> None:
    template = Template.from_stack(
        stack("Jwt", jwt_issuer="https://issuer.example.com/", jwt_audience=["xdb"])
    )
    template.has_resource_properties(
        "AWS::ApiGatewayV2::Authorizer",
        {
            "AuthorizerType": "JWT",
            "JwtConfiguration": {"Issuer": "https://issuer.example.com/", "Audience": ["xdb"]},
            "IdentitySource": ["$request.header.Authorization"],
        },
    )
    template.has_resource_properties(
        "AWS::ApiGatewayV2::Route",
        {"AuthorizationType": "JWT", "AuthorizerId": {"Ref": Match.any_value()}},
    )


def test_a_jwt_issuer_without_an_audience_is_refused() -> None:
    with pytest.raises(ValueError, match="both an issuer and an audience"):
        stack("HalfJwt", jwt_issuer="https://issuer.example.com/")


def test_api_requests_are_logged_by_the_default_stage(template: Template) -> None:
    template.has_resource_properties(
        "AWS::ApiGatewayV2::Stage",
        {
            "StageName": "$default",
            "AutoDeploy": True,
            "AccessLogSettings": {
                "DestinationArn": {"Fn::GetAtt": [Match.any_value(), "Arn"]},
                "Format": Match.string_like_regexp(r"\$context\.identity\.userArn"),
            },
        },
    )


# -- which workers, and how they know it is us ---------------------------------------------


def test_signing_secret_is_generated_and_its_arn_is_an_output(template: Template) -> None:
    (secret,) = template.find_resources(
        "AWS::SecretsManager::Secret",
        {
            "Properties": {
                "GenerateSecretString": {"PasswordLength": 64, "ExcludePunctuation": True}
            }
        },
    )
    template.has_output("SigningSecretArn", {"Value": {"Ref": secret}})


def test_only_the_functions_that_call_workers_know_the_secret_and_the_allowed_urls(
    template: Template,
) -> None:
    (secret,) = template.find_resources("AWS::SecretsManager::Secret")
    for function in ("api", "task"):
        variables = function_props(template, function)["Environment"]["Variables"]
        assert variables["XDB_SIGNING_SECRET_ARN"] == {"Ref": secret}
        assert variables["XDB_WORKER_URLS"] == ",".join(WORKERS)
    variables = function_props(template, "stream")["Environment"]["Variables"]
    assert "XDB_SIGNING_SECRET_ARN" not in variables
    assert "XDB_WORKER_URLS" not in variables

    readers = set()
    for policy in template.find_resources("AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if statement["Resource"] == {"Ref": secret}:
                assert "secretsmanager:GetSecretValue" in statement["Action"]
                readers.update(role["Ref"] for role in policy["Properties"]["Roles"])
    roles = {
        function: function_props(template, function)["Role"]["Fn::GetAtt"][0]
        for function in HANDLERS
    }
    assert readers == {roles["api"], roles["task"]}


@pytest.mark.parametrize("urls", [[], ()])
def test_without_worker_urls_synth_says_how_to_pass_them(urls: list[str]) -> None:
    with pytest.raises(ValueError, match="-c workerUrls=https://"):
        stack("NoWorkers", worker_urls=urls)


@pytest.mark.parametrize(
    "url", ["workers.example.com/", "ftp://workers.example.com/", "https:///path/"]
)
def test_a_worker_url_prefix_must_be_an_http_url_with_a_host(url: str) -> None:
    with pytest.raises(ValueError, match="must be http"):
        stack("BadWorkers", worker_urls=[url])
