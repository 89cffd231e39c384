"""CDK app: ``npx cdk synth`` / ``npx cdk deploy`` (see README, Deploy)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "shared")]

import aws_cdk as cdk  # noqa: E402

from infra.stack import XdbStack  # noqa: E402

app = cdk.App()
XdbStack(app, app.node.try_get_context("stackName") or "Xdb")
app.synth()
