"""Every engine API operation fuzzed from its OpenAPI document (schemathesis).

Each case is checked for no server error (5xx) and for a status code, content type and
body that the document allows; invalid data must be refused. The document is the one
the API serves and checks in.

One default check is left out: ``positive_data_acceptance`` wants every schema-valid
request accepted, but a schema cannot say that a process must exist or that a table must
be on the allow-list; those schema-valid requests are rightly refused with 400.
"""

from __future__ import annotations

from collections import Counter

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import positive_data_acceptance

from xdb.api.openapi import engine_document

schema = schemathesis.openapi.from_dict(engine_document())
# Responses by status, for the summary at the end of the run (see conftest.py).
STATUSES: Counter[int] = Counter()

EXAMPLES_PER_OPERATION = 60


@schema.parametrize()
@settings(
    max_examples=EXAMPLES_PER_OPERATION,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_engine_api(case: schemathesis.Case, engine_url: str) -> None:
    response = case.call_and_validate(
        base_url=engine_url, excluded_checks=[positive_data_acceptance]
    )
    STATUSES[response.status_code] += 1
