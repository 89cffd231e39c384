"""The user-signup process of the XDB design, written with ``xdb.sdk``.

A user submits a form; the process sends a verification email, then waits for a 24-hour
timer or a message on its ``verify`` local queue. When the timer fires first it sends a
reminder and waits again; when the message comes it sends a welcome email and completes.
The ``verify`` RPC (what the link in the email calls) writes ``status`` and ``source`` to
the user's row and publishes the message, in one atomic step.

The user's data lives in *your* table ``user`` (key ``user_id``): ``form``, ``status`` and
``source`` are global attributes, columns of that row, written atomically with each step.

``./run up`` runs ``main`` against the local engine: one user verifies at once, another
is reminded twice (the 24-hour timers are skipped with the client's ``skip_timer``) and
then verifies. Against a deployed stack, deploy this module as a Lambda function behind a
function URL (handler ``user_signup.lambda_handler``, ``XDB_SIGNING_SECRET`` set), then::

    XDB_API_URL=<ApiUrl> XDB_WORKER_URL=<function URL> AWS_REGION=<region> python examples/user_signup.py
"""

from __future__ import annotations

import logging
import os
import threading
import time
from datetime import timedelta
from functools import cache
from typing import Any

import boto3
import uvicorn
from pydantic import BaseModel

from xdb.sdk import (
    AsyncState,
    Client,
    CommandRequest,
    CommandResults,
    Communication,
    CommunicationSchema,
    Context,
    GlobalAttributes,
    LocalAttribute,
    LocalQueue,
    LocalQueueCommand,
    Persistence,
    PersistenceSchema,
    Process,
    ProcessStartOptions,
    Registry,
    SigV4Transport,
    StateDecision,
    StateSchema,
    TimerCommand,
    WorkerService,
    aws_lambda,
    rpc,
)
from xdb.sdk.asgi import asgi_app
from xdb.transport import Transport

log = logging.getLogger("user_signup")

REMINDER_PERIOD = timedelta(hours=24)
WORKER_PORT = 8802


class Form(BaseModel):
    email: str
    name: str


class Submit(AsyncState[None]):
    next_states = ("Verify",)

    def execute(
        self,
        ctx: Context,
        input: None,
        results: CommandResults,
        persistence: Persistence,
        communication: Communication,
    ) -> StateDecision:
        form: Form = persistence.get_global("form")
        log.warning("[email] to %s: please verify your account", form.email)
        return StateDecision.single_next_state(Verify)


class Verify(AsyncState[None]):
    next_states = ("Verify",)

    def wait_until(
        self, ctx: Context, input: None, persistence: Persistence, communication: Communication
    ) -> CommandRequest:
        return CommandRequest.for_any_command_completed(
            TimerCommand.by_duration(REMINDER_PERIOD, command_id="reminder"),
            LocalQueueCommand.by_name("verify"),
        )

    def execute(
        self,
        ctx: Context,
        input: None,
        results: CommandResults,
        persistence: Persistence,
        communication: Communication,
    ) -> StateDecision:
        form: Form = persistence.get_global("form")
        if results.local_queue("verify").received:
            log.warning("[email] to %s: welcome, %s!", form.email, form.name)
            return StateDecision.graceful_complete_process("done")
        reminders = (persistence.get_local("reminders") or 0) + 1
        persistence.set_local("reminders", reminders)
        log.warning("[email] to %s: reminder %d, please verify", form.email, reminders)
        return StateDecision.single_next_state(Verify)


class UserSignup(Process):
    states = StateSchema(Submit(), Verify())
    persistence = PersistenceSchema(
        LocalAttribute("reminders", int),
        global_attributes=GlobalAttributes(
            table="user",
            primary_key="user_id",
            columns={"form": Form, "status": str, "source": str},
        ),
    )
    communication = CommunicationSchema(LocalQueue("verify"))

    @rpc
    def verify(
        self, ctx: Context, source: str, persistence: Persistence, communication: Communication
    ) -> str:
        if persistence.get_global("status") == "verified":
            return "already verified"
        persistence.set_global("status", "verified")
        persistence.set_global("source", source)
        communication.publish_to_local_queue("verify")
        return "done"

    @rpc
    def reminders_sent(
        self, ctx: Context, input: None, persistence: Persistence, communication: Communication
    ) -> int:
        return persistence.get_local("reminders") or 0


registry = Registry(UserSignup)


@cache
def _lambda_worker() -> Any:
    return aws_lambda.handler(WorkerService(registry))


def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """The worker as a Lambda function (function URL); XDB_SIGNING_SECRET holds the key."""
    return _lambda_worker()(event, context)  # type: ignore[no-any-return]


def serve_worker(port: int = WORKER_PORT) -> tuple[uvicorn.Server, str]:
    """The worker over HTTP on 127.0.0.1 (uvicorn, in a thread): the server and its URL.
    It checks the engine's signature with the key in XDB_SIGNING_SECRET."""
    app = asgi_app(WorkerService(registry))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="signup-worker", daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError(f"the worker could not listen on 127.0.0.1:{port}")
        time.sleep(0.01)
    bound = server.servers[0].sockets[0].getsockname()[1]
    return server, f"http://127.0.0.1:{bound}"


def sign_up(client: Client, user_id: str, name: str) -> str:
    process_id = f"signup-{user_id}"
    client.start_process_execution(
        process_id,
        UserSignup,
        None,
        ProcessStartOptions(
            global_attribute_pk_value=user_id,
            initial_upsert_global_attributes={
                "form": Form(email=f"{name.lower()}@example.com", name=name),
                "status": "waiting",
            },
        ),
    )
    return process_id


def main(api_url: str, worker_url: str | None = None, transport: Transport | None = None) -> None:
    """Run both paths against the engine at ``api_url``; without ``worker_url`` the worker
    is served here (the local engine)."""
    logging.basicConfig(level=logging.WARNING, format="  (worker) %(message)s")
    server = None
    if worker_url is None:
        server, worker_url = serve_worker()
    client = Client(api_url, worker_url, transport=transport)
    run = int(time.time())

    print("1. Ada signs up and verifies at once")
    ada = sign_up(client, f"ada-{run}", "Ada")
    print(f"   verify RPC: {client.invoke_rpc(ada, UserSignup.verify, 'email')!r}")
    print(f"   {ada} completed: {client.wait_for_process_completion(ada, str)!r}")

    print("2. Bob signs up, is reminded twice (24-hour timers skipped), then verifies")
    bob = sign_up(client, f"bob-{run}", "Bob")
    for reminder in (1, 2):
        client.skip_timer(bob, f"Verify-{reminder}", "reminder")
        while client.invoke_rpc(bob, UserSignup.reminders_sent) < reminder:
            time.sleep(0.05)
    print(f"   verify RPC: {client.invoke_rpc(bob, UserSignup.verify, 'sms')!r}")
    print(f"   {bob} completed: {client.wait_for_process_completion(bob, str)!r}")

    # The rows of table "user" (moto in this process locally; your account's when deployed).
    table = boto3.client("dynamodb", region_name=os.environ.get("AWS_REGION", "us-east-1"))
    for user in (f"ada-{run}", f"bob-{run}"):
        item = table.get_item(TableName="user", Key={"user_id": {"S": user}})["Item"]
        print(f"   user row {user}: status={item['status']['S']} source={item['source']['S']}")
    client.close()
    if server is not None:
        server.should_exit = True


if __name__ == "__main__":
    region = os.environ.get("AWS_REGION")
    main(
        os.environ.get("XDB_API_URL", "http://127.0.0.1:8801"),
        os.environ.get("XDB_WORKER_URL"),
        SigV4Transport(region) if region else None,
    )
