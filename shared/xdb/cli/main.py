"""The ``xdb`` command: ``xdb dev`` runs the engine locally, ``xdb bench`` measures it,
``xdb invoke`` runs one Lambda handler on a sample event against ``xdb dev``."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import logging
import os
import sys
import threading
from pathlib import Path
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from xdb.local import aws, runtime
from xdb.local.pumps import context_for


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="xdb", description="XDB on AWS: a durable process engine on DynamoDB."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    dev = commands.add_parser("dev", help="run the engine on this machine (API on 127.0.0.1)")
    dev.add_argument(
        "--port", type=int, default=runtime.DEFAULT_PORT, help="API port (default: %(default)s)"
    )
    dev.add_argument(
        "--run",
        metavar="SCRIPT",
        help="a Python file whose main(api_url) runs once the engine is up",
    )
    dev.add_argument("--exit", action="store_true", help="stop once --run's script returns")
    dev.add_argument(
        "--user-table",
        metavar="NAME:KEY",
        action="append",
        type=_user_table,
        default=[],
        help="create a table of your own (string primary key KEY) that processes may bind "
        "global attributes to; repeatable",
    )

    bench = commands.add_parser(
        "bench", help="measure state transitions per second on the local runtime"
    )
    bench.add_argument("--processes", type=int, default=200)
    bench.add_argument("--states", type=int, default=10)
    bench.add_argument(
        "--stored",
        type=int,
        default=50_000,
        help="completed processes stored before the second run",
    )

    soak = commands.add_parser(
        "soak", help="many processes under random worker failures; invariants counted"
    )
    soak.add_argument("--processes", type=int, default=1000)
    soak.add_argument("--failure-rate", type=float, default=0.1)
    soak.add_argument("--seconds", type=float, default=600, help="time limit")

    invoke = commands.add_parser(
        "invoke",
        help="run one Lambda handler on an event file (e.g. events/*.json) against `xdb dev`",
    )
    invoke.add_argument("function", choices=sorted(HANDLERS), help="which function")
    invoke.add_argument("event", help="a JSON event file, e.g. events/api_start_workflow.json")
    invoke.add_argument(
        "--aws-url", required=True, help="the moto URL that `xdb dev` prints at start"
    )

    args = parser.parse_args(argv)
    if args.command == "dev":
        return _dev(args.port, args.run, args.exit, dict(args.user_table))
    if args.command == "invoke":
        return _invoke(args.function, args.event, args.aws_url)
    if args.command == "soak":
        from xdb.local import soak as soak_run

        return soak_run.main(
            processes=args.processes, failure_rate=args.failure_rate, time_limit=args.seconds
        )
    from xdb.local import bench as benchmark

    benchmark.main(processes=args.processes, states=args.states, stored=args.stored)
    return 0


HANDLERS = {"api": "api_http", "stream": "stream_ddb", "task": "task_sqs"}


def _invoke(function: str, event_file: str, aws_url: str) -> int:
    """Call a handler in this process, with the settings of the running `xdb dev`."""
    try:
        event = json.loads(Path(event_file).read_text())
    except (OSError, ValueError) as error:
        print(f"xdb invoke: cannot read {event_file}: {error}", file=sys.stderr)
        return 1
    for key, value in (
        ("AWS_ACCESS_KEY_ID", "local"),
        ("AWS_SECRET_ACCESS_KEY", "local"),
        ("AWS_DEFAULT_REGION", aws.REGION),
    ):
        os.environ.setdefault(key, value)
    sqs = boto3.client("sqs", endpoint_url=aws_url, region_name=aws.REGION)
    try:
        queue_url = sqs.get_queue_url(QueueName=aws.QUEUE_NAME)["QueueUrl"]
    except (BotoCoreError, ClientError) as error:
        print(f"xdb invoke: no `xdb dev` at {aws_url}: {error}", file=sys.stderr)
        return 1
    os.environ.update(
        XDB_AWS_ENDPOINT_URL=aws_url,
        XDB_TABLE_NAME=aws.TABLE_NAME,
        XDB_QUEUE_URL=queue_url,
    )
    module = importlib.import_module(f"functions.{HANDLERS[function]}")
    print(json.dumps(module.lambda_handler(event, context_for(function)), indent=2))
    return 0


def _user_table(text: str) -> tuple[str, str]:
    name, _, key = text.partition(":")
    if not name or not key:
        raise argparse.ArgumentTypeError(f"{text!r}: give NAME:KEY, e.g. user:user_id")
    return name, key


def _dev(port: int, script: str | None, exit_after: bool, user_tables: dict[str, str]) -> int:
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s.%(msecs)03d %(message)s", datefmt="%H:%M:%S"
    )
    logging.getLogger("xdb.transitions").setLevel(logging.INFO)
    try:
        engine = runtime.start(port=port, user_tables=user_tables)
    except OSError as error:
        print(
            f"xdb dev: cannot listen on 127.0.0.1:{port}: {error.strerror}. Is another engine running? Try --port.",
            file=sys.stderr,
        )
        return 1
    print(f"XDB engine listening on {engine.api_url} (iWF API; Ctrl-C stops it)")
    print(
        "worker requests are signed (see xdb.signing); the key, XDB_SIGNING_SECRET: "
        + os.environ["XDB_SIGNING_SECRET"]
    )
    print(
        f"moto (DynamoDB, Streams, SQS, Scheduler) at {engine.aws.server_url}: table {engine.aws.settings.table_name}"
    )
    done = threading.Event()
    failed = False
    if script:

        def run_script() -> None:
            nonlocal failed
            try:
                _load(script).main(engine.api_url)
            except Exception as error:
                failed = True
                print(f"{script} failed: {error!r}", file=sys.stderr)
            finally:
                done.set()

        threading.Thread(target=run_script, name="script", daemon=True).start()
    try:
        while not (exit_after and done.is_set()):
            done.wait(0.5) if script else threading.Event().wait(3600)
    except KeyboardInterrupt:
        print("\nstopping ...")
    engine.stop()
    print("stopped")
    return 1 if failed else 0


def _load(path: str) -> Any:
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"no such script: {path}")
    spec = importlib.util.spec_from_file_location(file.stem, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    sys.exit(main())
