"""``infra/app.py`` as ``cdk synth`` runs it: context in, a checked template out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def synth(context: dict[str, str], outdir: Path) -> subprocess.CompletedProcess[str]:
    # The CDK CLI hands -c values and the output folder to the app this way.
    env = {**os.environ, "CDK_CONTEXT_JSON": json.dumps(context), "CDK_OUTDIR": str(outdir)}
    return subprocess.run(
        [sys.executable, str(ROOT / "infra" / "app.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_without_worker_urls_synth_fails_and_says_what_to_pass(tmp_path: Path) -> None:
    result = synth({}, tmp_path)

    assert result.returncode != 0
    assert "-c workerUrls=https://workers.example.com/" in result.stderr
    assert "Traceback" not in result.stderr


def test_synth_with_context_passes_the_checks_and_writes_the_template(tmp_path: Path) -> None:
    result = synth(
        {
            "workerUrls": "https://workers.example.com/, https://other.example.com/iwf/",
            "globalAttributeTables": "user",
            "stackName": "XdbApp",
        },
        tmp_path,
    )

    assert result.returncode == 0, result.stderr
    template = json.loads((tmp_path / "XdbApp.template.json").read_text())
    variables = [
        r["Properties"]["Environment"]["Variables"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function"
    ]
    assert {v.get("XDB_WORKER_URLS") for v in variables} == {
        "https://workers.example.com/,https://other.example.com/iwf/",
        None,
    }
