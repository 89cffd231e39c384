"""The cost model's rules: DynamoDB capacity from item sizes, and how worker calls bill."""

from __future__ import annotations

import pytest

from xdb.local.meter import AWS_REQUEST_MS, Meter
from xdb.store.capacity import item_size
from xdb.transport import Reply, server_time_ms


def test_item_size_counts_names_and_values_as_dynamodb_does() -> None:
    # "pk" (2) + "WF#a" (4); "n" (1) + 3 digits (1 + 2); "b" (1) + true (1)
    assert item_size({"pk": {"S": "WF#a"}, "n": {"N": "123"}, "b": {"BOOL": True}}) == 12


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("worker;dur=1.5", 1.5),
        ('db;dur=2, app;desc="x";dur=3.5', 5.5),
        ("cache;desc=hit", 0.0),
        ("worker;dur=abc", None),
    ],
)
def test_server_timing_totals_the_reported_durations(header: str, expected: float | None) -> None:
    assert server_time_ms({"server-timing": header}) == expected


def test_a_worker_call_bills_a_round_trip_and_the_time_the_worker_reports() -> None:
    meter = Meter()

    def handler(event: object, context: object) -> None:
        meter.worker_called(0.250, Reply(200, b"{}", {"Server-Timing": "worker;dur=3"}))
        meter.worker_called(0.040, Reply(200, b"{}"))  # no header: the measured time

    meter.invoked("task_sqs", handler)(None, None)
    billed_ms = 5 + (AWS_REQUEST_MS + 3) + 40  # engine code, then the two calls
    assert meter.gb_seconds == pytest.approx(0.5 * billed_ms / 1000)  # 512 MB
    assert server_time_ms({}) is None


def test_the_engine_sleeping_in_a_handler_is_billed_as_lambda_time() -> None:
    meter = Meter()
    meter.invoked("api_http", lambda event, context: meter.sleep(0.02))(None, None)
    assert meter.gb_seconds == pytest.approx(0.5 * (5 + 20) / 1000)
    assert meter.api_requests == 1
