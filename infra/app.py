"""CDK app: ``npx cdk synth`` / ``npx cdk deploy`` (see README, Deploy).

Context (``-c name=value``):

* ``workerUrls`` (required): comma-separated URL prefixes of the workers the engine may
  call, e.g. ``https://workers.example.com/``;
* ``globalAttributeTables``: comma-separated names of your tables processes may bind to;
* ``jwtIssuer`` and ``jwtAudience`` (comma-separated): authorize API callers by JWT
  instead of IAM;
* ``stackName`` (default ``Xdb``).

Synthesis runs cdk-nag's AwsSolutions checks: an unacknowledged finding fails it.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "shared")]

import aws_cdk as cdk  # noqa: E402
from cdk_nag import AwsSolutionsChecks  # noqa: E402

from infra.stack import XdbStack  # noqa: E402


def listed(app: cdk.App, name: str) -> list[str]:
    value = app.node.try_get_context(name) or ""
    return [item.strip() for item in value.split(",") if item.strip()]


app = cdk.App()
try:
    XdbStack(
        app,
        app.node.try_get_context("stackName") or "Xdb",
        worker_urls=listed(app, "workerUrls"),
        global_attribute_tables=listed(app, "globalAttributeTables"),
        jwt_issuer=app.node.try_get_context("jwtIssuer") or None,
        jwt_audience=listed(app, "jwtAudience"),
    )
except ValueError as error:
    # A mistake in the context: say what to pass, without a traceback.
    sys.exit(f"xdb: {error}")
cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
app.synth()
