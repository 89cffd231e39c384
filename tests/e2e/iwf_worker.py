"""The iWF Python SDK's own test worker, served on 127.0.0.1:8802.

``iwf.tests.worker_server`` (shipped in iwf-python-sdk) starts a Flask server on
0.0.0.0:8802 when imported. We serve the same registry with the same SDK
``WorkerService``, unchanged, but bound to loopback only, and install this module in its
place so the SDK's bundled tests import ``registry`` from here.
"""

from __future__ import annotations

import sys
import threading
import types

from flask import Flask, request
from werkzeug.serving import BaseWSGIServer, make_server

WORKER_PORT = 8802


def install() -> None:
    """Put a loopback-only stand-in for ``iwf.tests.worker_server`` in ``sys.modules``."""
    from iwf.tests import registry

    shim = types.ModuleType("iwf.tests.worker_server")
    shim.registry = registry  # type: ignore[attr-defined]
    sys.modules["iwf.tests.worker_server"] = shim


def serve(port: int = WORKER_PORT) -> BaseWSGIServer:
    """Serve the SDK's test registry with the SDK's WorkerService; returns the server."""
    from iwf.iwf_api.models import (
        WorkflowStateExecuteRequest,
        WorkflowStateWaitUntilRequest,
        WorkflowWorkerRpcRequest,
    )
    from iwf.tests import registry
    from iwf.worker_service import WorkerService

    app = Flask("iwf-sdk-test-worker")
    worker = WorkerService(registry)

    @app.post(WorkerService.api_path_workflow_state_wait_until)
    def wait_until():  # type: ignore[no-untyped-def]
        return worker.handle_workflow_state_wait_until(
            WorkflowStateWaitUntilRequest.from_dict(request.json)
        ).to_dict()

    @app.post(WorkerService.api_path_workflow_state_execute)
    def execute():  # type: ignore[no-untyped-def]
        return worker.handle_workflow_state_execute(
            WorkflowStateExecuteRequest.from_dict(request.json)
        ).to_dict()

    @app.post(WorkerService.api_path_workflow_worker_rpc)
    def rpc():  # type: ignore[no-untyped-def]
        return worker.handle_workflow_worker_rpc(
            WorkflowWorkerRpcRequest.from_dict(request.json)
        ).to_dict()

    @app.errorhandler(Exception)
    def failed(error: Exception):  # type: ignore[no-untyped-def]
        return worker.handle_worker_error(error), 500

    server = make_server("127.0.0.1", port, app, threaded=True)
    threading.Thread(target=server.serve_forever, name="iwf-worker", daemon=True).start()
    return server
