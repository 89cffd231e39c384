"""The subset of iWF's search query language that one DynamoDB index answers.

iWF passes queries to Temporal's visibility store (SQL-like, over Elasticsearch). XDB
answers, from its ``by_type`` index, conjunctions of equalities within one process type::

    WorkflowType = 'Order'
    WorkflowType = 'Order' AND ExecutionStatus = 'Running'
    WorkflowType = 'Order' AND CustomKeywordField = 'vip' AND CustomIntField = 3

Anything else (OR, ranges, LIKE, ORDER BY, a query without a type) is refused with an
error that says what is supported, rather than answered slowly by a table scan.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from xdb.core.errors import NotSupported
from xdb.model.execution import Status

SUPPORTED = (
    "XDB answers WorkflowType = '<type>', optionally AND ExecutionStatus = '<status>' and "
    "AND <searchAttribute> = <value> (a 'string', a number, true or false)"
)
# Temporal's names for execution statuses, as iWF clients write them.
STATUSES = {
    "running": Status.RUNNING,
    "completed": Status.COMPLETED,
    "failed": Status.FAILED,
    "canceled": Status.CANCELED,
    "terminated": Status.TERMINATED,
    "timedout": Status.TIMEOUT,
    "timeout": Status.TIMEOUT,
}
_CONDITION = re.compile(
    r"""^\s*(?P<key>[A-Za-z_][A-Za-z0-9_\-]*)\s*=\s*
    (?:'(?P<single>[^']*)'|"(?P<double>[^"]*)"|(?P<number>-?\d+(?:\.\d+)?)|(?P<bool>true|false))\s*$""",
    re.VERBOSE | re.IGNORECASE,
)
_AND = re.compile(r"\s+AND\s+", re.IGNORECASE)
# Temporal's own attributes that iWF queries may name; XDB's index has none of them.
RESERVED = {
    "WorkflowId",
    "RunId",
    "StartTime",
    "CloseTime",
    "ExecutionTime",
    "ExecutionDuration",
    "HistoryLength",
    "HistorySizeBytes",
    "TaskQueue",
    "TemporalChangeVersion",
    "BuildIds",
}

Value = str | int | float | bool


@dataclass(frozen=True)
class SearchQuery:
    workflow_type: str
    status: Status | None = None
    equals: list[tuple[str, Value]] = field(default_factory=list)


def parse(query: str) -> SearchQuery:
    workflow_type: str | None = None
    status: Status | None = None
    equals: list[tuple[str, Value]] = []
    for part in _AND.split(query.strip()):
        match = _CONDITION.match(part)
        if match is None:
            raise NotSupported(f"cannot answer {part.strip()!r}: {SUPPORTED}")
        key, value = match["key"], _value(match)
        if key in RESERVED:
            raise NotSupported(f"cannot search by {key}: {SUPPORTED}")
        if key == "WorkflowType" and isinstance(value, str):
            if workflow_type is not None:
                raise NotSupported(f"a search names one WorkflowType: {SUPPORTED}")
            workflow_type = value
        elif key == "ExecutionStatus" and isinstance(value, str):
            if value.lower() not in STATUSES:
                raise NotSupported(f"unknown ExecutionStatus {value!r}: {', '.join(STATUSES)}")
            status = STATUSES[value.lower()]
        else:
            equals.append((key, value))
    if workflow_type is None:
        raise NotSupported(f"a search needs WorkflowType = '<type>': {SUPPORTED}")
    return SearchQuery(workflow_type, status, equals)


def _value(match: re.Match[str]) -> Value:
    if match["single"] is not None:
        return match["single"]
    if match["double"] is not None:
        return match["double"]
    if match["bool"] is not None:
        return match["bool"].lower() == "true"
    number = match["number"]
    return float(number) if "." in number else int(number)
