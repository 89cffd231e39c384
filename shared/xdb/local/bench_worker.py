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
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_completed = 0
_calls = 0
_lock = threading.Lock()


TIMER_SECONDS = 2
# 1 KB of attributes, as JSON.
PROFILE = json.dumps({"notes": "x" * 1000})


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
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self._send({"completed": _completed, "calls": _calls})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            self._send(answer(states, self.path, body))

        def _send(self, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    return server


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--states", type=int, required=True)
    arguments = parser.parse_args()
    serve(arguments.port, arguments.states).serve_forever()
