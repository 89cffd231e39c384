"""The engine API: iWF's server API on a powertools HTTP resolver.

Requests are validated with the pydantic wire models (unknown fields are rejected);
errors become iWF ``ErrorResponse`` bodies with the status from :mod:`xdb.api.errors`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from pydantic import BaseModel, ValidationError

from xdb.api.errors import status_of
from xdb.core.errors import WorkerCallFailed, XdbError
from xdb.engine import processes, rpc
from xdb.engine.runtime import engine
from xdb.model import wire
from xdb.model.wire import ErrorResponse


class _Resolver(APIGatewayHttpResolver):
    """Powertools keeps the request being resolved in class attributes: right on Lambda
    (one request at a time per process), wrong in the local runtime, which serves many
    requests at once through this one app (two starts were seen handling one body). Here
    the request, its Lambda context and the resolver's context dict live per thread."""

    _request = threading.local()

    def resolve(self, event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        self.current_event = self._to_proxy_event(dict(event))
        self.lambda_context = context
        return super().resolve(event, context)

    @property
    def current_event(self) -> Any:
        return self._request.event

    @current_event.setter
    def current_event(self, value: Any) -> None:
        self._request.event = value

    @property
    def lambda_context(self) -> Any:
        return self._request.lambda_context

    @lambda_context.setter
    def lambda_context(self, value: Any) -> None:
        self._request.lambda_context = value

    @property
    def context(self) -> dict[str, Any]:
        if not hasattr(self._request, "context"):
            self._request.context = {}
        return self._request.context

    @context.setter
    def context(self, value: dict[str, Any]) -> None:
        self._request.context = value


app = _Resolver()

M = TypeVar("M", bound=BaseModel)


def _json(status: int, body: dict[str, Any]) -> Response:
    return Response(status_code=status, content_type="application/json", body=json.dumps(body))


def _body(model: type[M]) -> M:
    raw = app.current_event.body or ""
    return model.model_validate_json(raw or "{}")


def _ok(result: wire._Wire | None) -> Response:
    return _json(200, result.dump() if result is not None else {})


def _route(path: str, model: type[M], use_case: Callable[[Any, M], wire._Wire | None]) -> None:
    def handler() -> Response:
        return _ok(use_case(engine(), _body(model)))

    handler.__name__ = "post_" + path.strip("/").replace("/", "_")
    app.post(path)(handler)


# The iWF server API: path, request model, use case.
ROUTES: list[tuple[str, type[BaseModel], Callable[[Any, Any], wire._Wire | None]]] = [
    ("/api/v1/workflow/start", wire.WorkflowStartRequest, processes.start),
    ("/api/v1/workflow/get", wire.WorkflowGetRequest, processes.get),
    ("/api/v1/workflow/getWithWait", wire.WorkflowGetRequest, processes.get_with_wait),
    ("/api/v1/workflow/stop", wire.WorkflowStopRequest, processes.stop),
    (
        "/api/v1/workflow/dataobjects/get",
        wire.WorkflowGetDataObjectsRequest,
        processes.get_data_objects,
    ),
    (
        "/api/v1/workflow/dataobjects/set",
        wire.WorkflowSetDataObjectsRequest,
        processes.set_data_objects,
    ),
    (
        "/api/v1/workflow/searchattributes/get",
        wire.WorkflowGetSearchAttributesRequest,
        processes.get_search_attributes,
    ),
    (
        "/api/v1/workflow/searchattributes/set",
        wire.WorkflowSetSearchAttributesRequest,
        processes.set_search_attributes,
    ),
    ("/api/v1/workflow/signal", wire.WorkflowSignalRequest, processes.signal),
    (
        "/api/v1/workflow/publishToInternalChannel",
        wire.PublishToInternalChannelRequest,
        processes.publish_to_internal_channel,
    ),
    ("/api/v1/workflow/timer/skip", wire.WorkflowSkipTimerRequest, processes.skip_timer),
    (
        "/api/v1/workflow/waitForStateCompletion",
        wire.WorkflowWaitForStateCompletionRequest,
        processes.wait_for_state_completion,
    ),
    ("/api/v1/workflow/rpc", wire.WorkflowRpcRequest, rpc.rpc),
    ("/api/v1/workflow/reset", wire.WorkflowResetRequest, processes.reset),
    ("/api/v1/workflow/search", wire.WorkflowSearchRequest, processes.search),
]
for route in ROUTES:
    _route(*route)


# The documents are imported on first use: no process step needs them, a cold start would.
@app.get("/openapi.json")
def openapi_document() -> Response:
    from xdb.api.openapi import engine_document

    return _json(200, engine_document())


@app.get("/docs")
def docs_page() -> Response:
    from xdb.api.docs_page import PAGE

    return Response(status_code=200, content_type="text/html; charset=utf-8", body=PAGE)


@app.get("/info/healthcheck")
def healthcheck() -> Response:
    return _ok(processes.health(engine()))


@app.exception_handler(ValidationError)
def invalid_request(error: ValidationError) -> Response:
    problems = "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in error.errors()[:10]
    )
    return _json(
        400, ErrorResponse(detail=f"invalid request: {problems}", code="BAD_REQUEST").dump()
    )


@app.exception_handler(XdbError)
def engine_error(error: XdbError) -> Response:
    status, sub_status = status_of(error)
    # A worker's failure (an RPC's) passes on what the worker said, as iWF does.
    worker = error.identifiers if isinstance(error, WorkerCallFailed) else {}
    answer = ErrorResponse(
        detail=error.message,
        sub_status=sub_status,
        code=error.code,
        original_worker_error_detail=worker.get("worker_detail"),
        original_worker_error_type=worker.get("worker_error_type"),
        original_worker_error_status=worker.get("status"),
    )
    return _json(status, answer.dump())


@app.not_found
def not_found(_: Exception) -> Response:
    path = app.current_event.path
    if path in _METHODS:
        method = _METHODS[path]
        detail = f"{path} takes {method}, not {app.current_event.http_method}"
        return Response(
            status_code=405,
            content_type="application/json",
            body=json.dumps(ErrorResponse(detail=detail).dump()),
            headers={"Allow": method},
        )
    return _json(404, ErrorResponse(detail=f"no such endpoint: {path}").dump())


# The method each path takes, to answer 405 for the others.
_METHODS = {path: "POST" for path, _, _ in ROUTES} | {
    "/info/healthcheck": "GET",
    "/openapi.json": "GET",
    "/docs": "GET",
}
