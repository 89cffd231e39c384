"""Execution snapshots in DynamoDB: one item per process id, one conditional write per change.

A snapshot is stored as zlib-compressed JSON (``doc``), which keeps a typical one under the
1 KB of a single write unit.

A data attribute value of ``OFFLOAD_BYTES`` or more lives in an item of its own, keyed by
the digest of its content and written before the snapshot that points at it: a transition
that does not change the value does not write it again, and the value item of a write that
then loses its condition is an unused item, never a wrong value.

History is kept cheaply: each version's events stay in the snapshot (``earlier_events``)
while they fit in the write units the snapshot needs anyway; when they no longer fit, the
next version is written without them and the stream function writes them as one history
page (:meth:`ExecutionStore.write_history`). The history of a run is its pages, then the
events its snapshot still carries.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import threading
import time
import zlib
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

from botocore.exceptions import ClientError
from pydantic import TypeAdapter

from xdb.core.errors import (
    BadRequest,
    GlobalRowExists,
    HistoryBehind,
    PayloadTooLarge,
    VersionConflict,
)
from xdb.core.search_query import SearchQuery
from xdb.model.execution import Event, Execution, GlobalBinding, VersionEvents
from xdb.model.wire import (
    EncodedObject,
    GlobalAttributeConflictMode,
    KeyValue,
    SearchAttribute,
    SearchAttributeValueType,
)
from xdb.store import user_rows
from xdb.store.capacity import write_units
from xdb.store.table import (
    CURRENT,
    HISTORY,
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
    value_key,
)

# DynamoDB's item limit is 400 KB; keep headroom for keys and attribute names.
MAX_SNAPSHOT_BYTES = 380_000
# Data attribute values this long or longer are kept in items of their own: half a write
# unit that a transition would otherwise write again each time.
OFFLOAD_BYTES = 512
# How long a history read waits for the page the stream function is about to write.
HISTORY_TRIES, HISTORY_WAIT = 30, 0.1
# How much of those values a store keeps in memory (they never change: no invalidation).
CACHED_VALUE_BYTES = 32 * 1024 * 1024


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
        self._values: OrderedDict[str, EncodedObject] = OrderedDict()
        self._values_bytes = 0
        self._lock = threading.Lock()

    def current(self, workflow_id: str) -> Execution | None:
        item = self._get(process_key(workflow_id), CURRENT)
        execution = self._read(item) if item else None
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
        return self._read(item) if item else None

    def _read(self, item: dict[str, Any]) -> Execution:
        """A stored snapshot, whole: with its earlier events, and the values kept in their
        own items filled in."""
        execution = decode(item, with_tail=True)
        digests = set(execution.stored_values.values())
        found = {d: v for d in digests if (v := self._value(d)) is not None}
        keys = [{PK: item[PK], SK: {"S": value_key(d)}} for d in sorted(digests - set(found))]
        for start in range(0, len(keys), 100):
            pending: dict[str, Any] = {
                self._table: {"Keys": keys[start : start + 100], "ConsistentRead": True}
            }
            while pending:
                answer = self._ddb.batch_get_item(RequestItems=pending)
                for got in answer.get("Responses", {}).get(self._table, []):
                    digest = got[SK]["S"].removeprefix(value_key(""))
                    found[digest] = EncodedObject.model_validate_json(_unpack(got["value"]))
                    self._remember_value(digest, found[digest])
                pending = answer.get("UnprocessedKeys") or {}
        for name, digest in execution.stored_values.items():
            if digest not in found:
                raise LookupError(f"{execution.workflow_id}: no stored value {digest} of {name!r}")
            execution.data_attributes[name] = found[digest]
        return execution

    def _store_values(self, execution: Execution) -> None:
        """Write the large values of ``execution`` that are not stored yet, and point it at
        every stored one (before its snapshot is written: see the module docstring)."""
        stored: dict[str, str] = {}
        new: dict[str, EncodedObject] = {}  # by digest: two attributes may hold one value
        for name, value in execution.data_attributes.items():
            if len(value.data or "") < OFFLOAD_BYTES:
                continue
            stored[name] = digest = _digest(value)
            if execution.stored_values.get(name) != digest:
                new[digest] = value
        self._batch_put([_value_item(execution.workflow_id, d, v) for d, v in new.items()])
        for digest, value in new.items():
            self._remember_value(digest, value)
        execution.stored_values = stored

    def _value(self, digest: str) -> EncodedObject | None:
        with self._lock:
            value = self._values.get(digest)
            if value is not None:
                self._values.move_to_end(digest)
            return value

    def _remember_value(self, digest: str, value: EncodedObject) -> None:
        with self._lock:
            if digest not in self._values:
                self._values[digest] = value
                self._values_bytes += len(value.data or "")
            while self._values_bytes > CACHED_VALUE_BYTES:
                _, dropped = self._values.popitem(last=False)
                self._values_bytes -= len(dropped.data or "")

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
        self._store_values(execution)
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "Item": _current_item(execution),
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

    def write_history(self, images: list[tuple[dict[str, Any] | None, dict[str, Any]]]) -> None:
        """Write the history pages these stream records (old and new image) call for: one
        when a new version left out the events its old version carried. A page has a fixed
        key, so writing one twice is harmless."""
        pages = (_page_item(old) for old, new in images if old is not None and _paged(old, new))
        self._batch_put([page for page in pages if page is not None])

    def _batch_put(self, items: list[dict[str, Any]]) -> None:
        requests = [{"PutRequest": {"Item": item}} for item in items]
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

    def history(self, execution: Execution) -> list[Event]:
        """Every event of this run so far: its history pages, then its snapshot's.

        The page a version's left-out events go to is written by the stream function a
        moment after that version: until it is there, this waits (a few seconds at most),
        then fails rather than answer with a history that misses events."""
        key = process_key(execution.workflow_id)
        for _ in range(HISTORY_TRIES):
            pages = {
                item[SK]["S"]: item for item in self._query(key, history_prefix(execution.run_id))
            }
            owed = execution.owed_page
            if owed is None or history_key(execution.run_id, owed) in pages:
                break
            time.sleep(HISTORY_WAIT)
        else:
            raise HistoryBehind(
                f"the history of {execution.workflow_id!r} is still being written; try again",
                workflow_id=execution.workflow_id,
            )
        return _merged([v for sk in sorted(pages) for v in _page_versions(pages[sk])], execution)

    def all_history(self) -> dict[tuple[str, str], list[Event]]:
        """The history of every run, by (workflow id, run id), in one pass over the table.
        For tools (the soak), not for the engine: it reads the whole table."""
        pages: dict[tuple[str, str], list[tuple[str, list[VersionEvents]]]] = {}
        runs: dict[tuple[str, str], Execution] = {}
        kwargs: dict[str, Any] = {"TableName": self._table}
        while True:
            page = self._ddb.scan(**kwargs)
            for item in page.get("Items", []):
                workflow_id, sk = item[PK]["S"].removeprefix(process_key("")), item[SK]["S"]
                if sk.startswith(HISTORY):
                    key = (workflow_id, sk.split("#")[1])
                    pages.setdefault(key, []).append((sk, _page_versions(item)))
                elif "doc" in item:
                    execution = decode(item, with_tail=True)
                    key = (workflow_id, execution.run_id)
                    # The current item wins over an archive of the same run left by a
                    # replacement whose conditional write then failed.
                    if key not in runs or sk == CURRENT:
                        runs[key] = execution
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return {
            key: _merged([v for _, vs in sorted(pages.get(key, [])) for v in vs], execution)
            for key, execution in runs.items()
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
            "ConsistentRead": True,
        }
        while True:
            page = self._ddb.query(**kwargs)
            yield from page.get("Items", [])
            if "LastEvaluatedKey" not in page:
                return
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _current_item(execution: Execution) -> dict[str, Any]:
    """The item of a current run: with the events of earlier versions (``tail``) while they
    cost no extra write unit, else without them (and ``execution`` then drops them too: the
    stream function writes them as a page, see :func:`_paged`)."""
    item = encode(execution, sk=CURRENT)
    if "tail" in item:
        lean = {k: v for k, v in item.items() if k != "tail"}
        if write_units(item) > write_units(lean):
            execution.owed_page = execution.earlier_events[0].version
            execution.earlier_events = []
            return encode(execution, sk=CURRENT)
    return item


def _paged(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether the new image of a run left out the earlier events its old image carried."""
    return "tail" not in new and old.get(RUN_ID) == new.get(RUN_ID)


def _carried(execution: Execution) -> list[VersionEvents]:
    """The events a snapshot carries, by version: earlier versions' not yet paged, then its own."""
    own = [VersionEvents(version=execution.version, events=execution.events)]
    return execution.earlier_events + (own if execution.events else [])


def _merged(paged: list[VersionEvents], execution: Execution) -> list[Event]:
    """A run's events in version order, each version once: a page written between reading
    the snapshot and its pages holds versions the snapshot still carries."""
    by_version = {v.version: v.events for v in paged + _carried(execution)}
    return [event for version in sorted(by_version) for event in by_version[version]]


def _page_item(old: dict[str, Any]) -> dict[str, Any] | None:
    """The page of the events an old image carried (None if it carried none)."""
    execution = decode(old, with_tail=True)
    versions = _carried(execution)
    if not versions:
        return None
    return {
        PK: {"S": process_key(execution.workflow_id)},
        SK: {"S": history_key(execution.run_id, versions[0].version)},
        "events": _pack(_tail().dump_json(versions, exclude_defaults=True)),
    }


def _page_versions(item: dict[str, Any]) -> list[VersionEvents]:
    return _tail().validate_json(_unpack(item["events"]))


def _digest(value: EncodedObject) -> str:
    """The digest of exactly what a value item stores."""
    return hashlib.sha256(value.model_dump_json(exclude_none=True).encode()).hexdigest()[:32]


def _value_item(workflow_id: str, digest: str, value: EncodedObject) -> dict[str, Any]:
    packed = _pack(value.model_dump_json(exclude_none=True).encode())
    if len(packed["B"]) > MAX_SNAPSHOT_BYTES:
        raise PayloadTooLarge(
            f"a data attribute of process {workflow_id!r} is {len(packed['B'])} bytes "
            f"(compressed), over the {MAX_SNAPSHOT_BYTES}-byte limit of one DynamoDB item",
            workflow_id=workflow_id,
        )
    return {PK: {"S": process_key(workflow_id)}, SK: {"S": value_key(digest)}, "value": packed}


def _pack(data: bytes) -> dict[str, Any]:
    return {"B": zlib.compress(data)}


def _unpack(value: dict[str, Any]) -> bytes:
    if "S" in value:  # plain JSON: hand-written items, the sample events
        return str(value["S"]).encode()
    data = value["B"]
    if isinstance(data, str):  # a Lambda event carries binary values in base64
        data = base64.b64decode(data)
    return zlib.decompress(data)


def encode(execution: Execution, *, sk: str) -> dict[str, Any]:
    """The stored item of a snapshot. The snapshot is one compressed JSON attribute (fast
    to read and write); a few fields are copied to top-level attributes for conditions and
    filters."""
    left_out: dict[str, Any] = {"earlier_events": True}
    if execution.stored_values:
        left_out["data_attributes"] = set(execution.stored_values)
    doc = _pack(execution.model_dump_json(exclude_defaults=True, exclude=left_out).encode())
    if len(doc["B"]) > MAX_SNAPSHOT_BYTES:
        raise PayloadTooLarge(
            f"process {execution.workflow_id!r} would grow to {len(doc['B'])} bytes "
            f"(compressed), over the {MAX_SNAPSHOT_BYTES}-byte limit of one DynamoDB item",
            workflow_id=execution.workflow_id,
        )
    item: dict[str, Any] = {
        PK: {"S": process_key(execution.workflow_id)},
        SK: {"S": sk},
        "ver": {"N": str(execution.version)},
        RUN_ID: {"S": execution.run_id},
        STATUS: {"S": execution.status.value},
        TYPE: {"S": execution.workflow_type},
        "doc": doc,
    }
    if execution.earlier_events:
        item["tail"] = _pack(_tail().dump_json(execution.earlier_events, exclude_defaults=True))
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


def decode(item: dict[str, Any], *, with_tail: bool = False) -> Execution:
    """The snapshot an item holds, without the values kept in their own items (the
    store's reads fill them in) and, unless asked, without the events of earlier versions:
    the stream function needs neither, and they are most of the work of reading it."""
    execution = Execution.model_validate_json(_unpack(item["doc"]))
    if with_tail and "tail" in item:
        execution.earlier_events = _tail().validate_json(_unpack(item["tail"]))
    return execution


@functools.cache
def _tail() -> TypeAdapter[list[VersionEvents]]:
    return TypeAdapter(list[VersionEvents])
