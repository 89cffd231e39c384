"""What is deployed and what runs locally come from one definition (``xdb.store.table``).

Each test reads the same setting twice, from the synthesized template and from the local
runtime (moto's resources as ``xdb.local.aws`` creates them, or the local pumps): a change
to either side alone fails here.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterator
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from infra.stack import XdbStack
from xdb.local import aws, pumps

LocalAws = aws.LocalAws


@pytest.fixture(scope="module")
def template() -> Template:
    app = cdk.App()
    return Template.from_stack(
        XdbStack(app, "Definition", worker_urls=["https://workers.example.com/"])
    )


@pytest.fixture(scope="module")
def local() -> Iterator[LocalAws]:
    local = aws.start()
    try:
        yield local
    finally:
        local.stop()


def only(template: Template, resource_type: str, props: dict[str, Any] | None = None) -> Any:
    """The properties of the one resource of this type (with these properties)."""
    found = template.find_resources(resource_type, {"Properties": props} if props else None)
    assert len(found) == 1, f"{len(found)} {resource_type} resources match {props}"
    return next(iter(found.values()))["Properties"]


def by_name(items: list[dict[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    return {item[key]: item for item in items}


def test_table_keys_indexes_and_stream(template: Template, local: LocalAws) -> None:
    deployed = only(template, "AWS::DynamoDB::Table")
    described = local.client("dynamodb").describe_table(TableName=local.settings.table_name)
    table = described["Table"]

    assert table["KeySchema"] == deployed["KeySchema"]
    assert by_name(table["AttributeDefinitions"], "AttributeName") == by_name(
        deployed["AttributeDefinitions"], "AttributeName"
    )
    indexes = {
        index["IndexName"]: {k: index[k] for k in ("IndexName", "KeySchema", "Projection")}
        for index in table.get("GlobalSecondaryIndexes", [])
    }
    assert indexes == by_name(deployed["GlobalSecondaryIndexes"], "IndexName")
    assert (
        table["StreamSpecification"]["StreamViewType"]
        == deployed["StreamSpecification"]["StreamViewType"]
    )


def test_task_queue_visibility_redrive_and_dead_letter_retention(
    template: Template, local: LocalAws
) -> None:
    deployed = only(template, "AWS::SQS::Queue", {"RedrivePolicy": {}})
    dead_letters_id = deployed["RedrivePolicy"]["deadLetterTargetArn"]["Fn::GetAtt"][0]
    deployed_dead_letters = template.find_resources("AWS::SQS::Queue")[dead_letters_id][
        "Properties"
    ]
    sqs = local.client("sqs")
    queue = sqs.get_queue_attributes(QueueUrl=local.settings.queue_url, AttributeNames=["All"])
    attributes = queue["Attributes"]
    redrive = json.loads(attributes["RedrivePolicy"])
    dead_letters = sqs.get_queue_attributes(
        QueueUrl=sqs.get_queue_url(QueueName=aws.DLQ_NAME)["QueueUrl"],
        AttributeNames=["MessageRetentionPeriod", "QueueArn"],
    )["Attributes"]

    assert int(attributes["VisibilityTimeout"]) == deployed["VisibilityTimeout"]
    assert int(redrive["maxReceiveCount"]) == deployed["RedrivePolicy"]["maxReceiveCount"]
    assert redrive["deadLetterTargetArn"] == dead_letters["QueueArn"]
    assert (
        int(dead_letters["MessageRetentionPeriod"])
        == deployed_dead_letters["MessageRetentionPeriod"]
    )


def test_task_queue_outlasts_the_task_function_six_times(template: Template) -> None:
    # AWS's advice for a queue that triggers a function; the shared definition keeps it.
    queue = only(template, "AWS::SQS::Queue", {"RedrivePolicy": {}})
    task = only(template, "AWS::Lambda::Function", {"Handler": "functions.task_sqs.lambda_handler"})
    assert queue["VisibilityTimeout"] >= 6 * task["Timeout"]


def stream_trigger(template: Template) -> Any:
    return only(template, "AWS::Lambda::EventSourceMapping", {"StartingPosition": "TRIM_HORIZON"})


def test_stream_trigger_filters_records_as_the_local_stream_pump_does(
    template: Template,
) -> None:
    (criteria,) = stream_trigger(template)["FilterCriteria"]["Filters"]
    deployed = json.loads(criteria["Pattern"])

    assert deployed == pumps.STREAM_FILTER
    # And with the same effect: current runs pass, history and archived runs do not.
    for sort_key, passes in (("RUN", True), ("H#r1#0000000002#000", False), ("RUN#r0", False)):
        record = {"dynamodb": {"Keys": {"pk": {"S": "WF#p"}, "sk": {"S": sort_key}}}}
        assert pumps.matches(record, deployed) is passes
        assert pumps.matches(record, pumps.STREAM_FILTER) is passes


def test_stream_trigger_batch_size_is_the_local_stream_pumps(template: Template) -> None:
    local_batch = inspect.signature(pumps.StreamPump).parameters["batch_size"].default
    assert stream_trigger(template)["BatchSize"] == local_batch
