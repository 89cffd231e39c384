"""OpenAPI documents of the engine API and of the worker protocol, made from the code.

The engine API's paths come from :data:`xdb.api.app.ROUTES` and its schemas from the
pydantic wire models, so the document cannot say something the code does not do. Both
documents are checked in under ``docs/openapi/`` (a test compares them with these
functions); regenerate them with ``python -m xdb.api.openapi docs/openapi``.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any, get_type_hints

from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from xdb.api.errors import HTTP_STATUS
from xdb.model import wire
from xdb.model.wire import EXECUTE_PATH, RPC_PATH, WAIT_UNTIL_PATH
from xdb.signing import SIGNATURE_HEADER, TIMESTAMP_HEADER

VERSION = "1.0.0"
_REF = "#/components/schemas/{model}"
_ERRORS = {
    "400": "the request is invalid, or names a process that does not exist or cannot take it",
    "420": "a long poll ended with the process still running, or the worker's RPC failed",
    "450": "an RPC could not hold its locked attributes within its timeout",
    "503": "the process kept changing under the request; try again",
}
assert {str(status) for _, status, _ in HTTP_STATUS} <= set(_ERRORS)


@functools.cache  # made from code that does not change while the process runs
def engine_document() -> dict[str, Any]:
    from xdb.api.app import ROUTES  # the app imports the engine; only the document needs it

    operations = [
        (path, request, get_type_hints(use_case).get("return"))
        for path, request, use_case in ROUTES
    ]
    health = ("/info/healthcheck", None, wire.HealthInfo)
    schemas, refs = _schemas(
        [(request, "validation") for _, request, _ in operations]
        + [(r, "serialization") for _, _, r in [*operations, health] if _is_model(r)]
        + [(wire.ErrorResponse, "serialization")]
    )
    paths: dict[str, Any] = {}
    for path, request, response in operations:
        paths[path] = {
            "post": {
                "operationId": path.removeprefix("/api/v1/").replace("/", "_"),
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": refs[(request, "validation")]}},
                },
                "responses": {
                    "200": _json_response("OK", refs.get((response, "serialization"))),
                    **{
                        status: _json_response(why, refs[(wire.ErrorResponse, "serialization")])
                        for status, why in _ERRORS.items()
                    },
                },
            }
        }
    paths["/info/healthcheck"] = {
        "get": {
            "operationId": "healthcheck",
            "responses": {"200": _json_response("OK", refs[(wire.HealthInfo, "serialization")])},
        }
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "XDB engine API",
            "version": VERSION,
            "description": "The iWF server API as XDB serves it (iWF SDKs work unchanged), "
            "with XDB's optional extensions. See docs/iwf-compatibility.md.",
        },
        "paths": paths,
        "components": {"schemas": schemas},
    }


@functools.cache
def worker_document() -> dict[str, Any]:
    """The API a worker serves; the engine calls it, signed (see :mod:`xdb.signing`)."""
    calls = [
        (WAIT_UNTIL_PATH, wire.WorkflowStateWaitUntilRequest, wire.WorkflowStateWaitUntilResponse),
        (EXECUTE_PATH, wire.WorkflowStateExecuteRequest, wire.WorkflowStateExecuteResponse),
        (RPC_PATH, wire.WorkflowWorkerRpcRequest, wire.WorkflowWorkerRpcResponse),
    ]
    schemas, refs = _schemas(
        [(request, "serialization") for _, request, _ in calls]
        + [(response, "validation") for _, _, response in calls]
        + [(wire.WorkerErrorResponse, "validation")]
    )
    signed = [
        {"name": TIMESTAMP_HEADER, "in": "header", "required": True, "schema": {"type": "string"}},
        {"name": SIGNATURE_HEADER, "in": "header", "required": True, "schema": {"type": "string"}},
    ]
    paths = {
        path: {
            "post": {
                "operationId": path.rsplit("/", 1)[-1],
                "parameters": signed,
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": refs[(request, "serialization")]}},
                },
                "responses": {
                    "200": _json_response("the answer", refs[(response, "validation")]),
                    "default": _json_response(
                        "a failed call: the engine retries it per the state's retry policy "
                        "(an RPC's error goes back to its caller as 420)",
                        refs[(wire.WorkerErrorResponse, "validation")],
                    ),
                },
            }
        }
        for path, request, response in calls
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "XDB worker protocol",
            "version": VERSION,
            "description": "What a worker serves for the engine: the iWF worker API. Requests "
            f"carry {TIMESTAMP_HEADER} and {SIGNATURE_HEADER} (HMAC-SHA256 over "
            "'<timestamp>.' + body); verify them with xdb.signing.verify.",
        },
        "paths": paths,
        "components": {"schemas": schemas},
    }


def _is_model(value: object) -> bool:
    return isinstance(value, type) and issubclass(value, BaseModel)


def _schemas(
    models: list[tuple[Any, JsonSchemaMode]],
) -> tuple[dict[str, Any], dict[tuple[Any, str], Any]]:
    unique = list(dict.fromkeys(models))
    refs, definitions = models_json_schema(unique, by_alias=True, ref_template=_REF)
    return dict(sorted(definitions.get("$defs", {}).items())), {k: v for k, v in refs.items()}


def _json_response(description: str, schema: Any) -> dict[str, Any]:
    schema = schema or {"type": "object", "maxProperties": 0}
    return {"description": description, "content": {"application/json": {"schema": schema}}}


DOCUMENTS = {"engine-api.json": engine_document, "worker-api.json": worker_document}


def render(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def main(directory: str) -> None:
    for name, make in DOCUMENTS.items():
        (Path(directory) / name).write_text(render(make()))
        print(f"wrote {Path(directory) / name}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "docs/openapi")
