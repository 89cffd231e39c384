"""Worker request signatures and the worker URL allow-list."""

from __future__ import annotations

import pytest

from xdb.aws.worker_client import WorkerClient
from xdb.core.errors import BadRequest, WorkerCallFailed
from xdb.core.workers import check_worker_url
from xdb.engine.settings import Settings
from xdb.signing import SignatureError, sign, verify

SECRET = b"s3cret"
BODY = b'{"workflowId":"wf"}'
NOW = 1_767_225_600.0


def test_a_signed_request_verifies_whatever_the_header_case() -> None:
    headers = sign(SECRET, BODY, now=NOW)
    verify(SECRET, BODY, headers, now=NOW + 10)
    verify(SECRET, BODY, {k.lower(): v for k, v in headers.items()}, now=NOW)


@pytest.mark.parametrize(
    ("secret", "body", "now", "message"),
    [
        (SECRET, b'{"workflowId":"other"}', NOW, "does not match"),
        (b"wrong", BODY, NOW, "does not match"),
        (SECRET, BODY, NOW + 301, "accepted within 300"),
        (SECRET, BODY, NOW - 301, "accepted within 300"),
    ],
)
def test_tampered_forged_or_stale_requests_are_rejected(
    secret: bytes, body: bytes, now: float, message: str
) -> None:
    headers = sign(SECRET, BODY, now=NOW)
    with pytest.raises(SignatureError, match=message):
        verify(secret, body, headers, now=now)


def test_missing_or_malformed_headers_are_rejected() -> None:
    with pytest.raises(SignatureError, match="missing"):
        verify(SECRET, BODY, {}, now=NOW)
    with pytest.raises(SignatureError, match="not a Unix time"):
        verify(SECRET, BODY, {"X-Xdb-Timestamp": "noon", "X-Xdb-Signature": "v1=00"}, now=NOW)


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://w.example.com/app/", True),
        ("https://w.example.com/app", True),
        ("https://w.example.com/app/v2", True),
        ("https://w.example.com/apple", False),
        ("https://w.example.com.evil.io/app", False),
        ("http://w.example.com/app", False),
        ("https://w.example.com:8443/app", False),
        ("https://api.example.com/", True),
    ],
)
def test_allow_list_matches_scheme_host_port_and_path_segments(url: str, allowed: bool) -> None:
    prefixes = ["https://w.example.com/app", "https://api.example.com"]
    if allowed:
        check_worker_url(url, prefixes)
    else:
        with pytest.raises(BadRequest, match="not in this deployment's allow-list"):
            check_worker_url(url, prefixes)


@pytest.mark.parametrize(
    "url",
    [
        "http://evil.example\\@w.example.com/app",  # urllib3 would call evil.example
        "https://user:pw@w.example.com/app",
        "https://w.example.com/app/../admin",
        "https://w.example.com/app/./x",
        "https://w.example.com:99999/app",
        "https://w.example.com/app x",
    ],
)
def test_urls_that_clients_could_read_differently_are_refused(url: str) -> None:
    with pytest.raises(BadRequest, match="plain http"):
        check_worker_url(url, ["https://w.example.com/app", "http://evil.example"])


def test_without_an_allow_list_any_http_url_is_allowed_but_nothing_else() -> None:
    check_worker_url("http://127.0.0.1:8802", None)
    with pytest.raises(BadRequest, match="plain http"):
        check_worker_url("file:///etc/passwd", None)


def test_a_deployment_without_a_secret_or_an_allow_list_calls_no_worker() -> None:
    for secret, allowed in ((None, ["http://127.0.0.1:9/"]), (b"k", None)):
        client = WorkerClient(secret=secret, allowed=allowed, secure=True)
        with pytest.raises(WorkerCallFailed, match="calls no worker without"):
            client.post("http://127.0.0.1:9", "/api/v1/workflowState/start", {}, timeout=1)


def test_settings_know_when_they_run_on_lambda(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDB_TABLE_NAME", "t")
    monkeypatch.setenv("XDB_QUEUE_URL", "q")
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME", raising=False)
    assert not Settings.from_env().deployed
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "xdb-task")
    assert Settings.from_env().deployed
