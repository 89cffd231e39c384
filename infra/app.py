"""CDK app: ``npx cdk synth`` / ``npx cdk deploy`` (see README, Deploy)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "shared")]

import aws_cdk as cdk  # noqa: E402

from infra.stack import XdbStack  # noqa: E402

app = cdk.App()
# cdk deploy -c globalAttributeTables=user,orders : the tables processes may bind to.
tables = app.node.try_get_context("globalAttributeTables") or ""
XdbStack(
    app,
    app.node.try_get_context("stackName") or "Xdb",
    global_attribute_tables=[name.strip() for name in tables.split(",") if name.strip()],
)
app.synth()
