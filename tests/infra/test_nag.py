"""cdk-nag's AwsSolutions checks: every finding is fixed or acknowledged with a reason.

cdk-nag 3 is a CDK policy-validation plugin (``Validations.of(app).add_plugins``), not an
aspect: its findings fail ``app.synth()`` (and ``cdk synth``) instead of becoming
annotations, and acknowledgements are ``Validations.of(construct).acknowledge(...)``.
"""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import aws_sqs as sqs
from cdk_nag import AwsSolutionsChecks

from infra.stack import XdbStack

WORKERS = ["https://workers.example.com/"]


def findings(report: cdk.PolicyValidationPluginReport) -> list[str]:
    return [
        f"{violation.rule_name} at {resource.construct_path or resource.resource_logical_id}"
        for violation in report.violations
        for resource in violation.violating_resources
    ]


@pytest.mark.parametrize(
    "options",
    [{}, {"jwt_issuer": "https://issuer.example.com/", "jwt_audience": ["xdb"]}],
    ids=["iam", "jwt"],
)
def test_no_unacknowledged_findings(options: dict[str, object]) -> None:
    app = cdk.App()
    stack = XdbStack(app, "Nag", worker_urls=WORKERS, **options)  # type: ignore[arg-type]

    report = AwsSolutionsChecks(app).validate_scope(stack)

    assert findings(report) == []
    assert report.success


def test_synth_runs_the_checks_and_fails_on_a_finding(tmp_path: Path) -> None:
    # given the stack plus a queue that breaks two rules (no DLQ, plain HTTP allowed)
    app = cdk.App(outdir=str(tmp_path))
    stack = XdbStack(app, "Nag", worker_urls=WORKERS)
    sqs.Queue(stack, "Careless")
    checks = AwsSolutionsChecks(app)

    # then the checks see exactly those, and synthesis with the plugin fails
    assert sorted(findings(checks.validate_scope(stack))) == [
        "AwsSolutions-SQS3 at Nag/Careless/Resource",
        "AwsSolutions-SQS4 at Nag/Careless/Resource",
    ]
    cdk.Validations.of(app).add_plugins(checks)
    with pytest.raises(RuntimeError, match="ValidationFailed"):
        app.synth()
