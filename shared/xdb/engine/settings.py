"""Settings of one engine deployment, read from the environment once."""

from __future__ import annotations

import os

from pydantic import BaseModel, ConfigDict, Field, SecretStr


class Settings(BaseModel):
    """Validated settings. In Lambda they come from the function's environment."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    table_name: str = Field(min_length=1)
    queue_url: str = Field(min_length=1)
    region: str = "us-east-1"
    # Set locally to point boto3 at moto; unset on AWS.
    endpoint_url: str | None = None
    # Off only where AWS is moto in this process (the local runtime): signing costs time
    # and moto does not check signatures.
    sign_requests: bool = True
    # A worker call may not outlive the task function (its timeout minus a margin).
    max_api_timeout: float = Field(default=60.0, gt=0)
    # API Gateway cuts a request at 29 s: long polls end well before.
    long_poll_seconds: float = Field(default=25.0, gt=0, le=28)
    long_poll_interval: float = Field(default=0.25, gt=0)
    # Tasks due beyond SQS's 15 minutes go through EventBridge Scheduler when these are set.
    schedule_group: str | None = None
    scheduler_role_arn: str | None = None
    queue_arn: str | None = None
    # XDB global attributes: the user tables processes may bind to (nothing else is touched).
    global_attribute_tables: frozenset[str] = frozenset()
    # Worker URL prefixes this deployment may call (None: any; only the local runtime).
    worker_urls: tuple[str, ...] | None = None
    # The HMAC key that signs worker requests: given directly (local runtime, tests) or
    # read from Secrets Manager at start-up (deployed stack).
    signing_secret: SecretStr | None = None
    signing_secret_arn: str | None = None
    # True on Lambda: worker calls then require the secret and the allow-list.
    deployed: bool = False

    @classmethod
    def from_env(cls) -> Settings:
        env = os.environ
        values: dict[str, object] = {
            "table_name": env.get("XDB_TABLE_NAME", ""),
            "queue_url": env.get("XDB_QUEUE_URL", ""),
            "region": env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1",
            "endpoint_url": env.get("XDB_AWS_ENDPOINT_URL") or None,
            "sign_requests": env.get("XDB_SIGN_AWS_REQUESTS", "true").lower() != "false",
            "schedule_group": env.get("XDB_SCHEDULE_GROUP") or None,
            "scheduler_role_arn": env.get("XDB_SCHEDULER_ROLE_ARN") or None,
            "queue_arn": env.get("XDB_QUEUE_ARN") or None,
            "signing_secret": env.get("XDB_SIGNING_SECRET") or None,
            "deployed": bool(env.get("AWS_LAMBDA_FUNCTION_NAME")),
            "signing_secret_arn": env.get("XDB_SIGNING_SECRET_ARN") or None,
            "global_attribute_tables": frozenset(
                name.strip()
                for name in env.get("XDB_GLOBAL_ATTRIBUTE_TABLES", "").split(",")
                if name.strip()
            ),
        }
        if "XDB_WORKER_URLS" in env:
            values["worker_urls"] = tuple(
                url.strip() for url in env["XDB_WORKER_URLS"].split(",") if url.strip()
            )
        for name, key in (
            ("max_api_timeout", "XDB_MAX_API_TIMEOUT_SECONDS"),
            ("long_poll_seconds", "XDB_LONG_POLL_SECONDS"),
        ):
            if env.get(key):
                values[name] = float(env[key])
        return cls.model_validate(values)
