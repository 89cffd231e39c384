"""The local runtime: the three functions, the table, the queue and the pumps, on this machine.

The functions are the ones deployed to Lambda (``functions/``); moto stands in for
DynamoDB, Streams and SQS; the pumps stand in for the event source mappings.
"""

from __future__ import annotations

import importlib
import logging
import os
import secrets
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from xdb.engine import runtime as engine_runtime
from xdb.engine.settings import Settings
from xdb.local import aws
from xdb.local.aws import LocalAws, MotoStream
from xdb.local.http_api import ApiServer
from xdb.local.meter import Meter
from xdb.local.pumps import QueuePump, StreamPump

logger = logging.getLogger(__name__)

DEFAULT_PORT = 8801


@dataclass
class LocalRuntime:
    api_url: str
    aws: LocalAws
    stream: MotoStream
    _server: ApiServer
    _stop: threading.Event
    _threads: list[threading.Thread] = field(default_factory=list)
    # Counts AWS requests and prices them, when the runtime was started with one.
    meter: Meter | None = None

    @property
    def engine(self) -> engine_runtime.Engine:
        return engine_runtime.engine()

    def stop(self) -> None:
        """Stop the pumps, the API and moto; waits for in-flight work to finish."""
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()
        for thread in self._threads:
            thread.join(timeout=5)
        self.aws.stop()
        engine_runtime.reset()


def start(
    *,
    port: int = DEFAULT_PORT,
    task_threads: int = 16,
    max_api_timeout: float = 60.0,
    user_tables: Mapping[str, str] | None = None,
    meter: Meter | None = None,
) -> LocalRuntime:
    """Start everything; ``port=0`` picks a free port for the API. ``user_tables`` (name ->
    primary key) are created for global attributes and allowed."""
    local = aws.start(max_api_timeout=max_api_timeout, user_tables=user_tables)
    settings = local.settings
    os.environ.update(
        XDB_TABLE_NAME=settings.table_name,
        XDB_QUEUE_URL=settings.queue_url,
        XDB_MAX_API_TIMEOUT_SECONDS=str(settings.max_api_timeout),
        XDB_SIGN_AWS_REQUESTS="false",
        XDB_SCHEDULE_GROUP=settings.schedule_group or "",
        XDB_SCHEDULER_ROLE_ARN=settings.scheduler_role_arn or "",
        XDB_QUEUE_ARN=settings.queue_arn or "",
        XDB_GLOBAL_ATTRIBUTE_TABLES=",".join(sorted(settings.global_attribute_tables)),
    )
    os.environ.pop("XDB_AWS_ENDPOINT_URL", None)
    # Worker requests are signed locally too; set XDB_SIGNING_SECRET to choose the key.
    os.environ.setdefault("XDB_SIGNING_SECRET", secrets.token_urlsafe(32))
    engine_runtime.reset()
    if meter is not None:
        # The engine's sleeps are billed Lambda time: the meter sees them.
        engine_runtime.install(engine_runtime.build(Settings.from_env(), sleep=meter.sleep))
    api, stream, task = (_function(name, meter) for name in ("api_http", "stream_ddb", "task_sqs"))

    stop = threading.Event()
    sqs = local.client("sqs")
    table_stream = local.stream()
    threads: list[threading.Thread] = [StreamPump(table_stream.read, stream, stop)]
    threads.append(
        QueuePump(
            sqs, settings.queue_url, settings.queue_arn or "", task, stop, concurrency=task_threads
        )
    )
    threads.append(local.schedule_pump(time.time, stop))
    server = ApiServer(("127.0.0.1", port), api)
    for thread in threads:
        thread.start()
    threads.append(server.start())
    return LocalRuntime(
        f"http://127.0.0.1:{server.server_port}",
        local,
        table_stream,
        server,
        stop,
        threads,
        meter,
    )


def _function(name: str, meter: Meter | None) -> Any:
    handler = importlib.import_module(f"functions.{name}").lambda_handler
    return meter.invoked(name, handler) if meter else handler
