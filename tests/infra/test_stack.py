"""The CDK stack synthesizes, with the resources and settings the engine relies on."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match, Template

from infra.stack import MAX_API_TIMEOUT_SECONDS, XdbStack
from xdb.store import table as schema


@pytest.fixture(scope="module")
def template() -> Template:
    app = cdk.App()
    return Template.from_stack(XdbStack(app, "Test"))


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
    template.resource_count_is("AWS::SQS::Queue", 2)
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
    template = Template.from_stack(
        XdbStack(cdk.App(), "WithUsers", global_attribute_tables=["user"])
    )
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
