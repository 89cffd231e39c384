"""The local runtime's HTTP front: a failing API function is a 500, as API Gateway answers,
not a dropped connection."""

from __future__ import annotations

from typing import Any

import urllib3

from xdb.local.http_api import ApiServer


def test_a_function_error_is_a_500_like_api_gateway() -> None:
    def failing(event: dict[str, Any], context: Any) -> dict[str, Any]:
        raise RuntimeError("moto fell over")

    server = ApiServer(("127.0.0.1", 0), failing)
    server.start()
    try:
        answer = urllib3.request(
            "POST", f"http://127.0.0.1:{server.server_port}/api/v1/workflow/get", body=b"{}"
        )
        assert (answer.status, answer.data) == (500, b'{"message":"Internal Server Error"}')
    finally:
        server.shutdown()
        server.server_close()
