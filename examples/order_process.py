"""An example process, written with the public iWF Python SDK (unchanged) and run on XDB.

OrderProcess:
  Submit   waits 2 s (a durable timer), records the order, then forks two threads:
  Charge   charges the card and completes the process gracefully with a receipt;
  Notify   sends a confirmation and ends its thread (dead end).

``xdb dev --run examples/order_process.py`` starts the engine, serves this worker on
127.0.0.1:8802, starts one order and prints how it went.
"""

from __future__ import annotations

import threading
import time

from flask import Flask, request
from iwf.client import Client
from iwf.client_options import ClientOptions
from iwf.command_request import CommandRequest, TimerCommand
from iwf.command_results import CommandResults
from iwf.communication import Communication
from iwf.iwf_api.models import WorkflowStateExecuteRequest, WorkflowStateWaitUntilRequest
from iwf.persistence import Persistence
from iwf.persistence_schema import PersistenceField, PersistenceSchema
from iwf.registry import Registry
from iwf.state_decision import StateDecision
from iwf.state_schema import StateSchema
from iwf.worker_service import WorkerService
from iwf.workflow import ObjectWorkflow
from iwf.workflow_context import WorkflowContext
from iwf.workflow_state import WorkflowState
from werkzeug.serving import make_server

WORKER_PORT = 8802


class Submit(WorkflowState[dict]):
    def wait_until(
        self,
        ctx: WorkflowContext,
        input: dict,
        persistence: Persistence,
        communication: Communication,
    ) -> CommandRequest:
        return CommandRequest.for_all_command_completed(TimerCommand.by_seconds(2))

    def execute(
        self,
        ctx: WorkflowContext,
        input: dict,
        command_results: CommandResults,
        persistence: Persistence,
        communication: Communication,
    ) -> StateDecision:
        persistence.set_data_attribute("order", input)
        persistence.set_data_attribute("status", "submitted")
        return StateDecision.multi_next_states(Charge, Notify)


class Charge(WorkflowState[None]):
    def execute(
        self,
        ctx: WorkflowContext,
        input: None,
        command_results: CommandResults,
        persistence: Persistence,
        communication: Communication,
    ) -> StateDecision:
        order = persistence.get_data_attribute("order")
        persistence.set_data_attribute("status", "charged")
        return StateDecision.graceful_complete_workflow(
            f"charged {order['amount']} for {order['item']}"
        )


class Notify(WorkflowState[None]):
    def execute(
        self,
        ctx: WorkflowContext,
        input: None,
        command_results: CommandResults,
        persistence: Persistence,
        communication: Communication,
    ) -> StateDecision:
        print(f"  (worker) confirmation sent for {ctx.workflow_id}")
        return StateDecision.dead_end


class OrderProcess(ObjectWorkflow):
    def get_workflow_states(self) -> StateSchema:
        return StateSchema.with_starting_state(Submit(), Charge(), Notify())

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.create(
            PersistenceField.data_attribute_def("order", dict),
            PersistenceField.data_attribute_def("status", str),
        )


registry = Registry()
registry.add_workflow(OrderProcess())


def serve_worker(port: int = WORKER_PORT) -> None:
    app = Flask("order-worker")
    worker = WorkerService(registry)

    @app.post(WorkerService.api_path_workflow_state_wait_until)
    def wait_until() -> dict:
        return worker.handle_workflow_state_wait_until(
            WorkflowStateWaitUntilRequest.from_dict(request.json)
        ).to_dict()

    @app.post(WorkerService.api_path_workflow_state_execute)
    def execute() -> dict:
        return worker.handle_workflow_state_execute(
            WorkflowStateExecuteRequest.from_dict(request.json)
        ).to_dict()

    server = make_server("127.0.0.1", port, app, threaded=True)
    threading.Thread(target=server.serve_forever, name="order-worker", daemon=True).start()


def main(api_url: str) -> None:
    serve_worker()
    options = ClientOptions.local_default()
    options.server_url = api_url
    options.worker_url = f"http://127.0.0.1:{WORKER_PORT}"
    client = Client(registry, options)
    order_id = f"order-{int(time.time())}"
    print(f"starting OrderProcess {order_id} ...")
    client.start_workflow(OrderProcess, order_id, 60, {"item": "book", "amount": "12.50 EUR"})
    result = client.wait_for_workflow_completion(order_id, str)
    attributes = client.get_all_workflow_data_attributes(OrderProcess, order_id)
    print(f"OrderProcess {order_id} COMPLETED: {result!r}; data attributes: {attributes}")
