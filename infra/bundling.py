"""Lambda code without Docker: prebuilt asset folders under ``.build/lambda``.

* code: the ``xdb`` package (without the local runtime and CLI) and ``functions/``;
* dependencies: a layer with pydantic, aws-lambda-powertools and aws-xray-sdk (for its
  Tracer) for Python 3.12 on arm64, installed by pip from wheels for that platform. It is
  built once per set of versions and reused. boto3 and botocore come with the Lambda
  runtime: the X-Ray SDK and wrapt are installed without their dependencies, so the layer
  does not shadow the runtime's botocore.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

from aws_cdk import aws_lambda as lambda_

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / ".build" / "lambda"
# Same versions as the development environment, so what is tested is what is deployed.
REQUIREMENTS = [
    f"pydantic=={version('pydantic')}",
    f"aws-lambda-powertools=={version('aws-lambda-powertools')}",
]
WITHOUT_DEPENDENCIES = [
    f"aws-xray-sdk=={version('aws-xray-sdk')}",
    f"wrapt=={version('wrapt')}",
]
LOCAL_ONLY = ("local", "cli")


def code_asset() -> lambda_.Code:
    target = BUILD / "code"
    if target.exists():
        shutil.rmtree(target)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", *LOCAL_ONLY)
    shutil.copytree(ROOT / "shared" / "xdb", target / "xdb", ignore=ignore)
    shutil.copytree(
        ROOT / "functions", target / "functions", ignore=shutil.ignore_patterns("__pycache__")
    )
    return lambda_.Code.from_asset(str(target))


def dependencies_asset() -> lambda_.Code:
    everything = [*REQUIREMENTS, *WITHOUT_DEPENDENCIES]
    digest = hashlib.sha256("\n".join(everything).encode()).hexdigest()[:16]
    target = BUILD / f"deps-{digest}"
    if not (target / "python").is_dir():
        staging = target.with_suffix(".partial")
        shutil.rmtree(staging, ignore_errors=True)
        print(
            f"building the Lambda dependencies layer ({', '.join(everything)}) ...",
            file=sys.stderr,
        )
        _pip_install(staging / "python", REQUIREMENTS)
        _pip_install(staging / "python", WITHOUT_DEPENDENCIES, "--no-deps")
        staging.rename(target)
    return lambda_.Code.from_asset(str(target))


def _pip_install(target: Path, requirements: list[str], *options: str) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--target",
            str(target),
            "--platform",
            "manylinux2014_aarch64",
            "--implementation",
            "cp",
            "--python-version",
            "3.12",
            "--only-binary=:all:",
            *options,
            *requirements,
        ],
        check=True,
    )
