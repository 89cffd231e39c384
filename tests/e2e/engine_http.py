"""Plain HTTP calls to the local runtime's engine API, for tests that need no SDK."""

from __future__ import annotations

import json
from typing import Any

import urllib3

from xdb.local import runtime

API = f"http://127.0.0.1:{runtime.DEFAULT_PORT}/api/v1/workflow"

# Enough connections for the tests that send 50 requests at once.
http = urllib3.PoolManager(maxsize=64)


def post(path: str, body: dict[str, Any]) -> tuple[int, Any]:
    answer = http.request("POST", f"{API}/{path}", json=body, timeout=60)
    return answer.status, json.loads(answer.data or b"null")
