"""Search attributes: typed values of an execution that clients can read and search by.

Each value travels as an iWF ``SearchAttribute``: a key, a value type and the one field
that type uses. Values are checked on the way in (a mismatch is the caller's error) and
datetimes are kept as iWF returns them: in UTC, with the caller's fraction of a second.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from xdb.core.errors import BadRequest
from xdb.model.wire import SearchAttribute, SearchAttributeKeyAndType, SearchAttributeValueType

# The field of SearchAttribute that holds a value of each type.
FIELD = {
    SearchAttributeValueType.KEYWORD: "string_value",
    SearchAttributeValueType.TEXT: "string_value",
    SearchAttributeValueType.DATETIME: "string_value",
    SearchAttributeValueType.INT: "integer_value",
    SearchAttributeValueType.DOUBLE: "double_value",
    SearchAttributeValueType.BOOL: "bool_value",
    SearchAttributeValueType.KEYWORD_ARRAY: "string_array_value",
}
_VALUE_FIELDS = set(FIELD.values())
_DATETIME = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$")


def upsert(
    attributes: dict[str, SearchAttribute], values: list[SearchAttribute] | None
) -> list[str]:
    """Check and store ``values``; a value with no field set removes its key.

    Returns the keys it changed. Raises :class:`BadRequest` before changing anything
    when a value does not match its type.
    """
    checked = [normalize(value) for value in values or []]
    for value in checked:
        if _value(value) is None:
            attributes.pop(value.key, None)
        else:
            attributes[value.key] = value
    return [value.key for value in checked]


def normalize(value: SearchAttribute) -> SearchAttribute:
    """``value`` with its type checked and a datetime turned to UTC."""
    if value.value_type is None:
        raise BadRequest(f"search attribute {value.key!r} has no valueType")
    field = FIELD[value.value_type]
    others = [f for f in _VALUE_FIELDS - {field} if getattr(value, f) is not None]
    if others:
        raise BadRequest(
            f"search attribute {value.key!r} is {value.value_type} but sets {', '.join(others)}"
        )
    if value.value_type is SearchAttributeValueType.DATETIME and value.string_value is not None:
        return value.model_copy(update={"string_value": to_utc(value.key, value.string_value)})
    return value


def to_utc(key: str, text: str) -> str:
    """An RFC 3339 time in UTC with ``Z``, keeping every digit of its fraction
    (iWF answers with nanoseconds, which :class:`datetime` cannot hold)."""
    match = _DATETIME.match(text)
    if match is None:
        raise BadRequest(f"search attribute {key!r}: {text!r} is not an RFC 3339 datetime")
    seconds, fraction, zone = match.groups()
    moment = datetime.fromisoformat(seconds)
    if zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        moment -= sign * timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6]))
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + (fraction or "") + "Z"


def select(
    attributes: dict[str, SearchAttribute], keys: list[SearchAttributeKeyAndType] | None
) -> list[SearchAttribute]:
    """The stored values of ``keys`` (all of them when no keys are given)."""
    if not keys:
        return list(attributes.values())
    return [attributes[k.key] for k in keys if k.key in attributes]


def _value(value: SearchAttribute) -> object:
    assert value.value_type is not None
    return getattr(value, FIELD[value.value_type])
