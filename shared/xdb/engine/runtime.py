"""The composition root: one :class:`Engine` per runtime, built on first use."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import boto3
from aws_lambda_powertools.utilities.parameters import SecretsProvider
from botocore import UNSIGNED
from botocore.config import Config

from xdb.aws.task_queue import TaskQueue
from xdb.aws.timer_scheduler import TimerScheduler
from xdb.aws.worker_client import WorkerClient
from xdb.engine.settings import Settings
from xdb.store.dynamodb_store import ExecutionStore


@dataclass
class Engine:
    """Everything the use cases need, passed in rather than reached for."""

    settings: Settings
    store: ExecutionStore
    queue: TaskQueue
    worker: WorkerClient
    clock: Callable[[], float] = time.time
    new_id: Callable[[], str] = field(default=lambda: str(uuid.uuid4()))
    sleep: Callable[[float], None] = time.sleep


def aws_client(settings: Settings, service: str) -> Any:
    """A boto3 client for these settings (moto when an endpoint is set)."""
    config = Config(
        region_name=settings.region,
        retries={"mode": "standard", "max_attempts": 5},
        max_pool_connections=64,
        signature_version=None if settings.sign_requests else UNSIGNED,
    )
    return boto3.client(service, config=config, endpoint_url=settings.endpoint_url)  # type: ignore[call-overload]


def build(settings: Settings, **overrides: Any) -> Engine:
    """The engine for ``settings``; ``overrides`` replace its parts (tests: a clock, a queue)."""
    parts: dict[str, Any] = {
        "store": ExecutionStore(aws_client(settings, "dynamodb"), settings.table_name)
    }
    if "queue" not in overrides:
        scheduler = None
        if settings.schedule_group and settings.scheduler_role_arn and settings.queue_arn:
            scheduler = TimerScheduler(
                aws_client(settings, "scheduler"),
                group=settings.schedule_group,
                queue_arn=settings.queue_arn,
                role_arn=settings.scheduler_role_arn,
            )
        parts["queue"] = TaskQueue(aws_client(settings, "sqs"), settings.queue_url, scheduler)
    if "worker" not in overrides:
        parts["worker"] = WorkerClient(
            secret=signing_secret(settings), allowed=settings.worker_urls, secure=settings.deployed
        )
    return Engine(settings=settings, **(parts | overrides))


def signing_secret(settings: Settings) -> bytes | None:
    """The key that signs worker requests: from the settings, or from Secrets Manager."""
    if settings.signing_secret is not None:
        return settings.signing_secret.get_secret_value().encode()
    if settings.signing_secret_arn:
        provider = SecretsProvider(boto3_client=aws_client(settings, "secretsmanager"))
        value = provider.get(settings.signing_secret_arn)
        if not isinstance(value, str | bytes) or not value:
            raise ValueError(f"secret {settings.signing_secret_arn} holds no signing key")
        return value.encode() if isinstance(value, str) else value
    return None


_installed: Engine | None = None
_built: Engine | None = None
_building = threading.Lock()


def engine() -> Engine:
    """The engine of this process: the installed one, else one built from the
    environment on first use (Lambda's composition root).

    Built once even when the first requests arrive together (the local runtime serves
    invocations on many threads; two engines built at once lost a write in moto)."""
    global _built
    if _installed is not None:
        return _installed
    if _built is None:
        with _building:
            if _built is None:
                _built = build(Settings.from_env())
    return _built


def install(custom: Engine | None) -> None:
    """Use ``custom`` as this process's engine (tests: a fake clock); None undoes it."""
    global _installed
    _installed = custom


def reset() -> None:
    """Forget the engine built from the environment (tests and the local runtime)."""
    global _built
    install(None)
    with _building:
        _built = None
