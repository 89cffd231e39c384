"""Execution snapshots in DynamoDB: one item per process id, one conditional write per change."""

from __future__ import annotations

import base64
import functools
import json
import threading
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

from botocore.exceptions import ClientError
from pydantic import TypeAdapter

from xdb.core.errors import BadRequest, GlobalRowExists, PayloadTooLarge, VersionConflict
from xdb.core.search_query import SearchQuery
from xdb.model.execution import Event, Execution, GlobalBinding
from xdb.model.wire import (
    GlobalAttributeConflictMode,
    KeyValue,
    SearchAttribute,
    SearchAttributeValueType,
)
from xdb.store import user_rows
from xdb.store.table import (
    CURRENT,
    PK,
    RUN_ID,
    SEARCH_ATTRIBUTES,
    SEARCH_INDEX,
    SK,
    STATUS,
    TYPE,
    archive_key,
    history_key,
    history_prefix,
    process_key,
)

# DynamoDB's item limit is 400 KB; keep headroom for keys and attribute names.
MAX_SNAPSHOT_BYTES = 380_000


class ExecutionStore:
    """Reads and writes execution snapshots. Every write is conditional on ``ver``.

    It also remembers the snapshots it last read or wrote (a bounded LRU), so the task
    handler can skip a read before calling the worker: see :meth:`recent`.
    """

    def __init__(self, client: Any, table_name: str, *, remember: int = 10_000) -> None:
        self._ddb = client
        self._table = table_name
        self._recent: OrderedDict[str, Execution] = OrderedDict()
        self._remember = remember
        self._lock = threading.Lock()

    def current(self, workflow_id: str) -> Execution | None:
        item = self._get(process_key(workflow_id), CURRENT)
        execution = decode(item) if item else None
        if execution is not None:
            self._note(execution)
        return execution

    def recent(self, workflow_id: str) -> Execution | None:
        """The last snapshot this store saw of the current run, without I/O; may be stale.

        Only for callers whose next write is conditional on the version they read, and
        who read again (:meth:`current`) before concluding that something is missing.
        """
        with self._lock:
            return self._recent.get(workflow_id)

    def _note(self, execution: Execution) -> None:
        with self._lock:
            known = self._recent.get(execution.workflow_id)
            if (
                known is None
                or known.run_id != execution.run_id
                or known.version <= execution.version
            ):
                self._recent[execution.workflow_id] = execution
                self._recent.move_to_end(execution.workflow_id)
            while len(self._recent) > self._remember:
                self._recent.popitem(last=False)

    def run(self, workflow_id: str, run_id: str | None) -> Execution | None:
        """The given run (the current one when ``run_id`` is empty), or None."""
        current = self.current(workflow_id)
        if not run_id or (current is not None and current.run_id == run_id):
            return current
        item = self._get(process_key(workflow_id), archive_key(run_id))
        return decode(item) if item else None

    def create(
        self, execution: Execution, *, replacing: Execution | None, read_version: int | None
    ) -> None:
        """Write a new current run.

        Without ``replacing``, no run may exist yet. With it, the run it replaces is
        archived first (immutable and keyed by run id, so writing it twice is harmless),
        then the new run is written only if that run is still current at ``read_version``.
        """
        if replacing is None:
            self._put(execution, f"attribute_not_exists({PK})", {})
            return
        self._ddb.put_item(
            TableName=self._table, Item=encode(replacing, sk=archive_key(replacing.run_id))
        )
        self._put(
            execution,
            "run_id = :run AND ver = :expected",
            {":run": {"S": replacing.run_id}, ":expected": {"N": str(read_version)}},
        )

    def save(self, execution: Execution) -> None:
        """Write the next version of the current run, if nobody wrote another first."""
        self._put(
            execution,
            "run_id = :run AND ver = :expected",
            {":run": {"S": execution.run_id}, ":expected": {"N": str(execution.version - 1)}},
        )

    def _put(self, execution: Execution, condition: str, values: dict[str, Any]) -> None:
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "Item": encode(execution, sk=CURRENT),
            "ConditionExpression": condition,
        }
        if values:
            kwargs["ExpressionAttributeValues"] = values
        write, binding = execution.global_write, execution.global_binding
        try:
            if write and write.values and binding:
                self._put_with_row(execution, kwargs, user_rows.update(binding, write))
            else:
                self._ddb.put_item(**kwargs)
        except ClientError as error:
            if error.response["Error"]["Code"] in (
                "ConditionalCheckFailedException",
                "TransactionConflictException",
            ):
                raise self._conflict(execution) from None
            raise
        self._note(execution)

    def _put_with_row(self, execution: Execution, put: dict[str, Any], row: dict[str, Any]) -> None:
        """The snapshot and its global attribute writes, in one transaction: both or neither."""
        try:
            self._ddb.transact_write_items(TransactItems=[{"Put": put}, {"Update": row}])
        except ClientError as error:
            if error.response["Error"]["Code"] != "TransactionCanceledException":
                raise
            reasons = [r.get("Code") for r in error.response.get("CancellationReasons", [])]
            if reasons[:1] == ["ConditionalCheckFailed"] or "TransactionConflict" in reasons:
                # A newer snapshot, or another transaction on the row: read again, retry.
                raise self._conflict(execution) from None
            if reasons[1:2] != ["ConditionalCheckFailed"]:
                raise
            # The bound row exists and the start's initial write may not create it.
            write = execution.global_write
            assert write is not None and execution.global_binding is not None
            if write.create_mode is GlobalAttributeConflictMode.IGNORE:
                self._ddb.put_item(**put)
                return
            binding = execution.global_binding
            raise GlobalRowExists(
                f"table {binding.table!r} already has the row {binding.key_name} = "
                f"{binding.key_value!r}; start with conflictMode IGNORE or OVERRIDE to keep "
                "or overwrite it",
                workflow_id=execution.workflow_id,
            ) from None

    def read_globals(self, binding: GlobalBinding) -> list[KeyValue]:
        return user_rows.read(self._ddb, binding)

    @staticmethod
    def _conflict(execution: Execution) -> VersionConflict:
        return VersionConflict(
            f"process {execution.workflow_id!r} changed concurrently",
            workflow_id=execution.workflow_id,
        )

    def append_history_of(self, executions: list[Execution]) -> None:
        """Write the events of these versions as history, one item per version (fixed
        keys: writing one twice is harmless)."""
        requests = [
            {"PutRequest": {"Item": _history_item(execution)}}
            for execution in executions
            if execution.events
        ]
        for start in range(0, len(requests), 25):
            pending: dict[str, Any] = {self._table: requests[start : start + 25]}
            while pending:
                answer = self._ddb.batch_write_item(RequestItems=pending)
                pending = answer.get("UnprocessedItems") or {}

    def search(
        self, query: SearchQuery, *, page_size: int, page_token: str | None
    ) -> tuple[list[tuple[str, str]], str | None]:
        """Runs (workflow id, run id) of ``query``'s type that match it, a page at a time.

        A page may hold fewer than ``page_size`` runs when the filter drops some; the
        token goes on from where this page's read stopped.
        """
        names = {"#t": TYPE}
        values: dict[str, Any] = {":t": {"S": query.workflow_type}}
        key_condition = "#t = :t"
        if query.status is not None:
            names["#s"] = STATUS
            values[":s"] = {"S": query.status.value}
            key_condition += " AND #s = :s"
        filters = []
        for i, (key, literal) in enumerate(query.equals):
            names["#sa"], names[f"#k{i}"] = SEARCH_ATTRIBUTES, key
            values[f":v{i}"] = _literal(literal)
            path = f"#sa.#k{i}"
            if isinstance(literal, str):
                # A keyword array matches when it holds the value (as in Temporal).
                values[":list"] = {"S": "L"}
                filters.append(
                    f"({path} = :v{i} OR (attribute_type({path}, :list) AND contains({path}, :v{i})))"
                )
            else:
                filters.append(f"{path} = :v{i}")
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": SEARCH_INDEX,
            "KeyConditionExpression": key_condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
            "Limit": page_size,
        }
        if filters:
            kwargs["FilterExpression"] = " AND ".join(filters)
        if page_token:
            kwargs["ExclusiveStartKey"] = _start_key(page_token, query)
        page = self._ddb.query(**kwargs)
        runs = [
            (item[PK]["S"].removeprefix(process_key("")), item[RUN_ID]["S"])
            for item in page.get("Items", [])
        ]
        last = page.get("LastEvaluatedKey")
        token = base64.urlsafe_b64encode(json.dumps(last).encode()).decode() if last else None
        return runs, token

    def history(self, workflow_id: str, run_id: str) -> list[Event]:
        return [
            event
            for item in self._query(process_key(workflow_id), history_prefix(run_id))
            for event in _events().validate_json(item["events"]["S"])
        ]

    def all_history(self) -> dict[tuple[str, str], list[Event]]:
        """The history of every run, by (workflow id, run id), in one pass over the table.
        For tools (the soak), not for the engine: it reads the whole table."""
        versions: dict[tuple[str, str], list[tuple[str, str]]] = {}
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "FilterExpression": f"begins_with({SK}, :h)",
            "ExpressionAttributeValues": {":h": {"S": history_prefix("")[:2]}},
        }
        while True:
            page = self._ddb.scan(**kwargs)
            for item in page.get("Items", []):
                sk = item[SK]["S"]
                key = (item[PK]["S"].removeprefix(process_key("")), sk.split("#")[1])
                versions.setdefault(key, []).append((sk, item["events"]["S"]))
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return {
            key: [event for _, doc in sorted(items) for event in _events().validate_json(doc)]
            for key, items in versions.items()
        }

    def _get(self, pk: str, sk: str) -> dict[str, Any] | None:
        answer = self._ddb.get_item(
            TableName=self._table, Key={PK: {"S": pk}, SK: {"S": sk}}, ConsistentRead=True
        )
        return answer.get("Item")

    def _query(self, pk: str, prefix: str) -> Iterator[dict[str, Any]]:
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": f"{PK} = :pk AND begins_with({SK}, :prefix)",
            "ExpressionAttributeValues": {":pk": {"S": pk}, ":prefix": {"S": prefix}},
        }
        while True:
            page = self._ddb.query(**kwargs)
            yield from page.get("Items", [])
            if "LastEvaluatedKey" not in page:
                return
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def encode(execution: Execution, *, sk: str) -> dict[str, Any]:
    """The stored item of a snapshot. The snapshot is one JSON attribute (fast to read and
    write); a few fields are copied to top-level attributes for conditions and filters."""
    doc = execution.model_dump_json(exclude_defaults=True)
    if len(doc.encode()) > MAX_SNAPSHOT_BYTES:
        raise PayloadTooLarge(
            f"process {execution.workflow_id!r} would grow to {len(doc.encode())} bytes, over the "
            f"{MAX_SNAPSHOT_BYTES}-byte limit of one DynamoDB item",
            workflow_id=execution.workflow_id,
        )
    item: dict[str, Any] = {
        PK: {"S": process_key(execution.workflow_id)},
        SK: {"S": sk},
        "ver": {"N": str(execution.version)},
        RUN_ID: {"S": execution.run_id},
        STATUS: {"S": execution.status.value},
        TYPE: {"S": execution.workflow_type},
        "doc": {"S": doc},
    }
    if execution.search_attributes:
        item[SEARCH_ATTRIBUTES] = {
            "M": {k: _indexed(v) for k, v in execution.search_attributes.items()}
        }
    return item


def _indexed(value: SearchAttribute) -> dict[str, Any]:
    """A search attribute as the DynamoDB value a search filter compares with."""
    kind = value.value_type
    if kind is SearchAttributeValueType.KEYWORD_ARRAY:
        return {"L": [{"S": s} for s in value.string_array_value or []]}
    if kind is SearchAttributeValueType.BOOL:
        return {"BOOL": bool(value.bool_value)}
    if kind is SearchAttributeValueType.INT:
        return {"N": str(value.integer_value)}
    if kind is SearchAttributeValueType.DOUBLE:
        return {"N": repr(value.double_value)}
    return {"S": value.string_value or ""}


def _start_key(token: str, query: SearchQuery) -> dict[str, Any]:
    """The index key a page token stands for, if it is one this query's pages gave."""
    try:
        key = json.loads(base64.urlsafe_b64decode(token))
    except ValueError:
        key = None
    if (
        not isinstance(key, dict)
        or set(key) != {PK, SK, TYPE, STATUS}
        or not all(isinstance(v, dict) and isinstance(v.get("S"), str) for v in key.values())
        or key[TYPE]["S"] != query.workflow_type
    ):
        raise BadRequest("nextPageToken is not one this API gave for this query")
    return key


def _literal(value: str | int | float | bool) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"BOOL": value}
    if isinstance(value, str):
        return {"S": value}
    return {"N": repr(value)}


def decode(item: dict[str, Any]) -> Execution:
    return Execution.model_validate_json(item["doc"]["S"])


def _history_item(execution: Execution) -> dict[str, Any]:
    return {
        PK: {"S": process_key(execution.workflow_id)},
        SK: {"S": history_key(execution.run_id, execution.version)},
        "events": {"S": _events().dump_json(execution.events, exclude_defaults=True).decode()},
    }


@functools.cache
def _events() -> TypeAdapter[list[Event]]:
    # Built on first use, not at import: a schema costs a Lambda cold start ~10 ms.
    return TypeAdapter(list[Event])
