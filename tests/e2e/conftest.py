"""The e2e tier: the local runtime on 127.0.0.1:8801 (the iWF SDK's default server URL)
and real HTTP workers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e import iwf_worker
from xdb.local import runtime

iwf_worker.install()


@pytest.fixture(scope="package", autouse=True)
def local_runtime() -> Iterator[runtime.LocalRuntime]:
    engine = runtime.start(port=runtime.DEFAULT_PORT, user_tables={"user": "user_id"})
    try:
        worker = iwf_worker.serve()
    except BaseException:
        engine.stop()
        raise
    yield engine
    worker.shutdown()
    engine.stop()
