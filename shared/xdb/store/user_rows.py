"""XDB global attributes: columns of a row in a user's own DynamoDB table.

A JSON-encoded value is stored as the native DynamoDB value it encodes (a string, a
number, a map...), so the row reads naturally in the user's own queries and console:
``status = "verified"``, not ``status = "\\"verified\\""``.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from xdb.model.execution import GlobalBinding, GlobalWrite
from xdb.model.wire import EncodedObject, GlobalAttributeConflictMode, KeyValue

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


def key(binding: GlobalBinding) -> dict[str, Any]:
    return {binding.key_name: {"S": binding.key_value}}


def read(client: Any, binding: GlobalBinding) -> list[KeyValue]:
    """The bound columns of the row, as JSON-encoded values (absent columns are left out)."""
    names = {f"#a{i}": name for i, name in enumerate(binding.attributes)}
    answer = client.get_item(
        TableName=binding.table,
        Key=key(binding),
        ProjectionExpression=", ".join(names),
        ExpressionAttributeNames=names,
        ConsistentRead=True,
    )
    item = answer.get("Item") or {}
    return [
        KeyValue(key=name, value=decode(item[name])) for name in binding.attributes if name in item
    ]


def update(binding: GlobalBinding, write: GlobalWrite) -> dict[str, Any]:
    """The ``Update`` of a ``TransactWriteItems`` that applies ``write`` to the row."""
    names: dict[str, str] = {}
    values: dict[str, Any] = {}
    sets, removes = [], []
    for i, (column, value) in enumerate(sorted(write.values.items())):
        names[f"#c{i}"] = column
        if value is None:
            removes.append(f"#c{i}")
        else:
            values[f":v{i}"] = encode(value)
            sets.append(f"#c{i} = :v{i}")
    expression = " ".join(
        part
        for part in (
            "SET " + ", ".join(sets) if sets else "",
            "REMOVE " + ", ".join(removes) if removes else "",
        )
        if part
    )
    request: dict[str, Any] = {
        "TableName": binding.table,
        "Key": key(binding),
        "UpdateExpression": expression,
        "ExpressionAttributeNames": names,
    }
    if values:
        request["ExpressionAttributeValues"] = values
    if write.create_mode in (
        GlobalAttributeConflictMode.ERROR,
        GlobalAttributeConflictMode.IGNORE,
    ):
        names["#pk"] = binding.key_name
        request["ConditionExpression"] = "attribute_not_exists(#pk)"
    return request


def encode(value: EncodedObject) -> dict[str, Any]:
    native = json.loads(value.data or "null", parse_float=Decimal)
    return dict(_serializer.serialize(native))


def decode(value: dict[str, Any]) -> EncodedObject:
    native = _deserializer.deserialize(value)  # type: ignore[arg-type]
    return EncodedObject(encoding="json", data=json.dumps(native, default=_number))


def _number(value: object) -> int | float:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    raise TypeError(f"cannot encode {type(value).__name__} as JSON")
