"""The e2e tier: the local runtime on 127.0.0.1:8801 (the iWF SDK's default server URL)
and real HTTP workers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from xdb.local import runtime

from tests.e2e import iwf_worker

iwf_worker.install()


@pytest.fixture(scope="package", autouse=True)
def local_runtime() -> Iterator[runtime.LocalRuntime]:
    engine = runtime.start(port=runtime.DEFAULT_PORT)
    worker = iwf_worker.serve()
    yield engine
    worker.shutdown()
    engine.stop()
