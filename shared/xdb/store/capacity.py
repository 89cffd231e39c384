"""DynamoDB's size rules: how big an item is, and how many write units writing it costs.

The store uses them to keep a snapshot within the write units it needs anyway; the local
runtime's cost model (:mod:`xdb.local.meter`) prices every request with them.
"""

from __future__ import annotations

import math
from typing import Any


def item_size(item: dict[str, Any]) -> int:
    """The size DynamoDB bills for an item: names plus values, in bytes."""
    return sum(len(name.encode()) + _value_size(value) for name, value in item.items())


def write_units(item: dict[str, Any]) -> int:
    """Write units of one standard write of the item: one per KB, rounded up."""
    return math.ceil(item_size(item) / 1024) or 1


def _value_size(value: dict[str, Any]) -> int:
    (kind, data), *_ = value.items()
    if kind in ("S", "B"):
        return len(data.encode() if isinstance(data, str) else data)
    if kind == "N":
        return 1 + math.ceil(len(data.lstrip("-").replace(".", "")) / 2)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "M":
        return 3 + sum(len(k.encode()) + _value_size(v) + 1 for k, v in data.items())
    if kind == "L":
        return 3 + sum(_value_size(v) + 1 for v in data)
    return 3 + sum(len(str(v)) for v in data)  # SS, NS, BS
