"""Search attribute values: type checks and UTC datetimes."""

from __future__ import annotations

import pytest

from xdb.core import search_attributes
from xdb.core.errors import BadRequest
from xdb.model.wire import SearchAttribute, SearchAttributeValueType

KEYWORD = SearchAttributeValueType.KEYWORD


def test_datetime_goes_to_utc_keeping_nanoseconds() -> None:
    assert (
        search_attributes.to_utc("k", "2024-11-09T16:00:01.731455544-08:00")
        == "2024-11-10T00:00:01.731455544Z"
    )
    assert search_attributes.to_utc("k", "2024-01-01T00:30:00+01:00") == "2023-12-31T23:30:00Z"


def test_a_value_in_the_wrong_field_is_refused_and_changes_nothing() -> None:
    stored = {"a": SearchAttribute(key="a", value_type=KEYWORD, string_value="x")}
    bad = [
        SearchAttribute(key="a", value_type=KEYWORD, string_value="y"),
        SearchAttribute(key="b", value_type=SearchAttributeValueType.INT, string_value="1"),
    ]
    with pytest.raises(BadRequest, match="is INT but sets string_value"):
        search_attributes.upsert(stored, bad)
    assert stored["a"].string_value == "x" and "b" not in stored


def test_a_value_with_no_field_removes_its_key() -> None:
    stored = {"a": SearchAttribute(key="a", value_type=KEYWORD, string_value="x")}
    assert search_attributes.upsert(stored, [SearchAttribute(key="a", value_type=KEYWORD)]) == ["a"]
    assert stored == {}


def test_a_malformed_datetime_is_refused() -> None:
    value = SearchAttribute(
        key="d", value_type=SearchAttributeValueType.DATETIME, string_value="yesterday"
    )
    with pytest.raises(BadRequest, match="not an RFC 3339 datetime"):
        search_attributes.upsert({}, [value])
