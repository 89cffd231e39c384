"""Values on the wire: JSON inside an iWF ``EncodedObject``, checked against declared types.

Types are anything pydantic can validate (``str``, ``int``, ``list[str]``, a ``BaseModel``,
a dataclass, ``Any``...). The encoding is the one the iWF SDKs use (``"json"``), so
values written by an iWF SDK worker read back here and the other way round.
"""

from __future__ import annotations

import functools
from typing import Any

from pydantic import TypeAdapter, ValidationError

from xdb.model.wire import EncodedObject

JSON = "json"


@functools.cache
def adapter(kind: Any) -> TypeAdapter[Any]:
    """The (cached) pydantic adapter for a declared type; raises if pydantic cannot build one."""
    return TypeAdapter(kind)


def encode(value: Any, kind: Any = Any) -> EncodedObject:
    """``value`` as JSON, after checking it is a ``kind`` (``ValueError`` if not)."""
    checked = check(value, kind)
    data = "null" if checked is None else adapter(kind).dump_json(checked).decode()
    return EncodedObject(encoding=JSON, data=data)


def decode(value: EncodedObject | None, kind: Any = Any) -> Any:
    """The ``kind`` stored in ``value``; ``None`` when there is no value."""
    if value is None or value.data is None or value.data == "null":
        return None
    try:
        return adapter(kind).validate_json(value.data)
    except ValidationError as error:
        raise ValueError(
            f"stored value does not fit type {_name(kind)}: {_problems(error)}"
        ) from None


def check(value: Any, kind: Any) -> Any:
    """``value`` validated as a ``kind`` (``None`` always passes: it means "no value")."""
    if value is None:
        return None
    try:
        return adapter(kind).validate_python(value)
    except ValidationError as error:
        raise ValueError(f"{value!r} does not fit type {_name(kind)}: {_problems(error)}") from None


def _name(kind: Any) -> str:
    return getattr(kind, "__name__", None) or str(kind)


def _problems(error: ValidationError) -> str:
    return "; ".join(e["msg"] for e in error.errors()[:3])
