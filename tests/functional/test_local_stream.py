"""The local runtime's stream reader over moto, across a failed transaction (moto then puts
back a deep copy of the table: the reader once kept reading the old one and saw nothing)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from botocore.exceptions import ClientError

from xdb.local import aws


@pytest.fixture
def local() -> Iterator[aws.LocalAws]:
    started = aws.start(serve=False)
    yield started
    started.stop()


def test_records_after_a_failed_transaction_are_read(local: aws.LocalAws) -> None:
    table, ddb = local.settings.table_name, local.client("dynamodb")
    stream = local.stream()

    def put(key: str) -> None:
        ddb.put_item(TableName=table, Item={"pk": {"S": key}, "sk": {"S": "x"}})

    put("before")
    assert len(stream.read(10)) == 1
    with pytest.raises(ClientError, match="TransactionCanceled"):
        ddb.transact_write_items(
            TransactItems=[
                {
                    "Put": {
                        "TableName": table,
                        "Item": {"pk": {"S": "before"}, "sk": {"S": "x"}},
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                }
            ]
        )
    put("after")
    records = stream.read(10)
    assert [r["dynamodb"]["Keys"]["pk"]["S"] for r in records] == ["after"]
    assert stream.backlog() == 0
