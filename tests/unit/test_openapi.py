"""The OpenAPI documents are made from the code, checked in, and served."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from functions import api_http
from xdb.api import openapi
from xdb.api.app import ROUTES
from xdb.local.http_api import to_event
from xdb.local.pumps import context_for

DOCS = Path(__file__).resolve().parents[2] / "docs" / "openapi"


@pytest.mark.parametrize("name", sorted(openapi.DOCUMENTS))
def test_checked_in_documents_match_the_code(name: str) -> None:
    expected = openapi.render(openapi.DOCUMENTS[name]())
    assert (DOCS / name).read_text() == expected, (
        f"docs/openapi/{name} is stale: run python -m xdb.api.openapi docs/openapi"
    )


def test_every_route_is_documented_with_its_request_schema() -> None:
    document = openapi.engine_document()
    assert sorted(document["paths"]) == sorted(
        [path for path, _, _ in ROUTES] + ["/info/healthcheck"]
    )
    start = document["paths"]["/api/v1/workflow/start"]["post"]
    schema = start["requestBody"]["content"]["application/json"]["schema"]
    assert schema == {"$ref": "#/components/schemas/WorkflowStartRequest"}
    required = document["components"]["schemas"]["WorkflowStartRequest"]["required"]
    assert {"workflowId", "iwfWorkflowType", "iwfWorkerUrl"} <= set(required)


def test_the_api_serves_its_document_and_a_page() -> None:
    answer = api_http.lambda_handler(to_event("GET", "/openapi.json", {}, b""), context_for("api"))
    assert answer["statusCode"] == 200
    assert json.loads(answer["body"]) == openapi.engine_document()
    page = api_http.lambda_handler(to_event("GET", "/docs", {}, b""), context_for("api"))
    assert page["statusCode"] == 200 and "openapi.json" in page["body"]
