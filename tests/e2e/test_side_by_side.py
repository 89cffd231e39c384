"""A worker written with the iWF Python SDK and one written with xdb.sdk, side by side
against one engine over real HTTP: processes of both run at the same time to completion."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import boto3
import pytest
from iwf.client import Client as IwfClient
from iwf.client_options import ClientOptions
from iwf.tests import registry as iwf_registry
from iwf.tests.workflows.basic_workflow import BasicWorkflow

from examples import user_signup
from tests.e2e.iwf_worker import WORKER_PORT
from xdb.local.runtime import LocalRuntime
from xdb.sdk import Client

RUNS = 8


def test_iwf_and_xdb_sdk_workers_run_side_by_side(local_runtime: LocalRuntime) -> None:
    # given: the iWF SDK's test worker (8802) and the signup worker (uvicorn), one engine
    server, worker_url = user_signup.serve_worker(port=0)
    xdb_client = Client(local_runtime.api_url, worker_url)
    options = ClientOptions.local_default()
    options.server_url = local_runtime.api_url
    options.worker_url = f"http://127.0.0.1:{WORKER_PORT}"
    iwf_client = IwfClient(iwf_registry, options)
    stamp = time.time_ns()

    def iwf_run(n: int) -> str:
        workflow_id = f"side-iwf-{stamp}-{n}"
        iwf_client.start_workflow(BasicWorkflow, workflow_id, 60, "input")
        return str(iwf_client.wait_for_workflow_completion(workflow_id, str))

    def xdb_run(n: int) -> str:
        process_id = user_signup.sign_up(xdb_client, f"side-{stamp}-{n}", f"User{n}")
        assert xdb_client.invoke_rpc(process_id, user_signup.UserSignup.verify, "email") == "done"
        return str(xdb_client.wait_for_process_completion(process_id, str))

    # when: both kinds run at once (the iWF client on one thread: it is not made for more)
    try:
        with ThreadPoolExecutor(RUNS + 1) as pool:
            iwf = pool.submit(lambda: [iwf_run(n) for n in range(RUNS)])
            xdb = [pool.submit(xdb_run, n) for n in range(RUNS)]
            results = iwf.result(timeout=120) + [f.result(timeout=120) for f in xdb]
    finally:
        xdb_client.close()
        # The iWF SDK's client keeps an httpx client without a close(); close it here.
        iwf_client._unregistered_client.api_client.get_httpx_client().close()
        server.should_exit = True

    # then: every process completed, and every user row says verified by email
    assert results == ["done"] * (2 * RUNS)
    table = boto3.client("dynamodb", region_name="us-east-1")
    for n in range(RUNS):
        row = table.get_item(TableName="user", Key={"user_id": {"S": f"side-{stamp}-{n}"}})["Item"]
        assert (row["status"]["S"], row["source"]["S"]) == ("verified", "email")


def test_the_example_runs_both_paths_as_the_readme_shows(
    local_runtime: LocalRuntime, capsys: pytest.CaptureFixture[str]
) -> None:
    server, worker_url = user_signup.serve_worker(port=0)
    try:
        user_signup.main(local_runtime.api_url, worker_url)
    finally:
        server.should_exit = True
    out = capsys.readouterr().out
    assert out.count("completed: 'done'") == 2
    assert "status=verified source=email" in out and "status=verified source=sms" in out
