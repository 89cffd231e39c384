"""What user code reads and writes during a call: attributes (``Persistence``) and messages
(``Communication``). Both only record intentions; the engine commits them atomically with
the call's result, or not at all."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from xdb.model import wire
from xdb.sdk.decision import StateMovement
from xdb.sdk.encoding import decode, encode
from xdb.sdk.errors import DefinitionError
from xdb.sdk.registry import ProcessDefinition


class Persistence:
    """Local attributes (kept with the process execution) and global attributes (columns of
    the bound row in your table). Values are checked against their declared types."""

    def __init__(
        self,
        definition: ProcessDefinition,
        local: Iterable[wire.KeyValue],
        global_: Iterable[wire.KeyValue] | None,
    ) -> None:
        self._definition = definition
        self._local = {kv.key: kv.value for kv in local}
        self._global = {kv.key: kv.value for kv in global_ or ()}
        self._local_writes: dict[str, wire.EncodedObject] = {}
        self._global_writes: dict[str, wire.EncodedObject] = {}

    def get_local(self, key: str) -> Any:
        kind = self._local_type(key)
        if key in self._local_writes:
            return decode(self._local_writes[key], kind)
        return decode(self._local.get(key), kind)

    def set_local(self, key: str, value: Any) -> None:
        self._local_writes[key] = encode(value, self._local_type(key))

    def get_global(self, key: str) -> Any:
        kind = self._global_type(key)
        if key in self._global_writes:
            return decode(self._global_writes[key], kind)
        return decode(self._global.get(key), kind)

    def set_global(self, key: str, value: Any) -> None:
        self._global_writes[key] = encode(value, self._global_type(key))

    def local_writes(self) -> list[wire.KeyValue] | None:
        return _key_values(self._local_writes)

    def global_writes(self) -> list[wire.KeyValue] | None:
        return _key_values(self._global_writes)

    def _local_type(self, key: str) -> Any:
        try:
            return self._definition.local_attributes[key]
        except KeyError:
            raise DefinitionError(
                [f"{self._definition.process_type} declares no local attribute {key!r}"]
            ) from None

    def _global_type(self, key: str) -> Any:
        table = self._definition.global_attributes
        if table is None:
            raise DefinitionError(
                [f"{self._definition.process_type} declares no global attributes"]
            )
        try:
            return table.columns[key]
        except KeyError:
            raise DefinitionError(
                [f"{self._definition.process_type} declares no global attribute {key!r}"]
            ) from None


class Communication:
    """Messages to local queues, and (from an RPC) new threads of states."""

    def __init__(
        self, definition: ProcessDefinition, queue_sizes: dict[str, int] | None = None
    ) -> None:
        self._definition = definition
        self._queue_sizes = queue_sizes
        self._published: list[wire.InterStateChannelPublishing] = []
        self._triggered: list[StateMovement] = []

    def publish_to_local_queue(
        self, queue: str, value: Any = None, *, dedup_id: str | None = None
    ) -> None:
        """Send a message; with ``dedup_id``, a second message with the same id on this
        queue is dropped (so a retried call publishes once)."""
        kind = self._queue_type(queue)
        self._published.append(
            wire.InterStateChannelPublishing(
                channel_name=queue,
                value=None if value is None else encode(value, kind),
                dedup_id=dedup_id,
            )
        )

    def local_queue_size(self, queue: str) -> int:
        """Messages waiting on a queue (RPCs only: states learn of messages by waiting)."""
        self._queue_type(queue)
        if self._queue_sizes is None:
            raise DefinitionError(["local_queue_size is known in RPCs only"])
        return self._queue_sizes.get(queue, 0)

    def trigger_state(self, state: Any, input: Any = None) -> None:
        """Start a new thread at ``state`` (RPCs only: a state returns a decision instead)."""
        if self._queue_sizes is None:
            raise DefinitionError(["trigger_state is for RPCs; a state returns a StateDecision"])
        self._triggered.append(StateMovement(state, input))

    def published(self) -> list[wire.InterStateChannelPublishing] | None:
        return self._published or None

    def triggered(self) -> list[StateMovement]:
        return self._triggered

    def _queue_type(self, queue: str) -> Any:
        try:
            return self._definition.queues[queue]
        except KeyError:
            raise DefinitionError(
                [f"{self._definition.process_type} declares no local queue {queue!r}"]
            ) from None


def _key_values(writes: dict[str, wire.EncodedObject]) -> list[wire.KeyValue] | None:
    return [wire.KeyValue(key=k, value=v) for k, v in writes.items()] or None
