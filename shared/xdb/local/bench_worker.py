"""The benchmark's worker: a chain of N states, served over HTTP on 127.0.0.1.

State ``S1`` .. ``S<n>``: each execute moves to the next; the last completes the process.
State ``Wait``: wait_until asks for a 2-second timer; execute completes the process.
States ``C1`` .. ``C<n>``: like ``S``, and ``C1`` also writes 1 KB of attributes that the
process carries to its end (the cost model's reference workload).
It speaks the iWF worker protocol directly, and runs in its own process so the engine's
figures are not mixed with the worker's work.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import threading
from http.server import ThreadingHTTPServer
from typing import Any

from xdb.local.json_http import serve_json

_completed = 0
_calls = 0
_lock = threading.Lock()


TIMER_SECONDS = 2
# 1 KB of attributes, as JSON: random text, which compression cannot shrink much (the
# engine stores snapshots compressed; repeated characters would flatter it).
PROFILE = json.dumps({"notes": base64.b64encode(random.Random(1).randbytes(750)).decode()})


def answer(states: int, path: str, body: dict[str, Any]) -> dict[str, Any]:
    global _calls, _completed
    with _lock:
        _calls += 1
    if body["workflowStateId"] == "Wait":
        if path.endswith("/start"):
            return {
                "commandRequest": {
                    "commandWaitingType": "ALL_COMPLETED",
                    "timerCommands": [{"commandId": "t", "durationSeconds": TIMER_SECONDS}],
                }
            }
        with _lock:
            _completed += 1
        return {"stateDecision": {"nextStates": [{"stateId": "_SYS_GRACEFUL_COMPLETING_WORKFLOW"}]}}
    prefix, number = body["workflowStateId"][0], int(body["workflowStateId"][1:])
    if number < states:
        movement = {"stateId": f"{prefix}{number + 1}", "stateOptions": {"skipWaitUntil": True}}
    else:
        with _lock:
            _completed += 1
        movement = {
            "stateId": "_SYS_GRACEFUL_COMPLETING_WORKFLOW",
            "stateInput": {"encoding": "json", "data": '"done"'},
        }
    upserts = [{"key": "step", "value": {"encoding": "json", "data": str(number)}}]
    if prefix == "C" and number == 1:
        upserts.append({"key": "profile", "value": {"encoding": "json", "data": PROFILE}})
    return {"stateDecision": {"nextStates": [movement]}, "upsertDataObjects": upserts}


def serve(port: int, states: int) -> ThreadingHTTPServer:
    def respond(method: str, path: str, body: Any) -> tuple[int, Any]:
        if method == "GET":
            return 200, {"completed": _completed, "calls": _calls}
        return 200, answer(states, path, body)

    return serve_json(respond, port, background=False)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--states", type=int, required=True)
    arguments = parser.parse_args()
    serve(arguments.port, arguments.states).serve_forever()
