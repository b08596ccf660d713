from __future__ import annotations

import json
from pathlib import Path

import pytest

from providers.errors import error_from_http, parse_retry_after, transport_error


def _body(obj) -> bytes:
    return json.dumps(obj).encode()


@pytest.mark.parametrize(
    ("status", "body", "category", "code"),
    [
        (401, {"error": {"message": "Incorrect API key", "type": "invalid_request_error", "code": "invalid_api_key"}}, "auth", "invalid_api_key"),
        (429, {"error": {"message": "You exceeded your current quota", "type": "insufficient_quota", "code": "insufficient_quota"}}, "billing", "insufficient_quota"),
        (429, {"error": {"message": "Rate limit reached for gpt-4o", "type": "requests", "code": "rate_limit_exceeded"}}, "rate_limit", "rate_limit_exceeded"),
        (400, {"error": {"message": "This model's maximum context length is 128000 tokens", "code": "context_length_exceeded"}}, "context_length", "context_length_exceeded"),
        (404, {"error": {"message": "The model `gpt-x` does not exist", "code": "model_not_found"}}, "not_found", "model_not_found"),
        (400, {"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"}}, "context_length", "invalid_request_error"),
        (529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, "overloaded", "overloaded_error"),
        (403, {"type": "error", "error": {"type": "permission_error", "message": "no access"}}, "auth", "permission_error"),
        (413, {"type": "error", "error": {"type": "request_too_large", "message": "too big"}}, "invalid_request", "request_too_large"),
        (500, {"type": "error", "error": {"type": "api_error", "message": "boom"}}, "server", "api_error"),
        (400, {"error": {"code": 400, "message": "API key not valid", "status": "INVALID_ARGUMENT"}}, "invalid_request", "INVALID_ARGUMENT"),
        (403, {"error": {"code": 403, "message": "denied", "status": "PERMISSION_DENIED"}}, "auth", "PERMISSION_DENIED"),
        (503, {"error": {"code": 503, "message": "The model is overloaded", "status": "UNAVAILABLE"}}, "overloaded", "UNAVAILABLE"),
        (504, {"error": {"code": 504, "message": "deadline", "status": "DEADLINE_EXCEEDED"}}, "timeout", "DEADLINE_EXCEEDED"),
        (429, {"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).", "status": "RESOURCE_EXHAUSTED"}}, "billing", "RESOURCE_EXHAUSTED"),
        (429, {"error": {"code": 429, "message": "Too many requests", "status": "RESOURCE_EXHAUSTED"}}, "rate_limit", "RESOURCE_EXHAUSTED"),
    ],
)
def test_category_from_status_and_body(status, body, category, code):
    err = error_from_http(status, _body(body), provider="x")
    assert (err.category, err.provider_code, err.http_status) == (category, code, status)
    assert err.retryable == (category in {"rate_limit", "overloaded", "server", "timeout", "network"})


def test_status_alone_when_the_body_is_not_json():
    err = error_from_http(502, b"<html>Bad gateway</html>")
    assert (err.category, err.message, err.retryable) == ("server", "<html>Bad gateway</html>", True)
    empty = error_from_http(418, b"")
    assert (empty.category, empty.message) == ("invalid_request", "HTTP 418 with no error message")


def test_retry_after_seconds_ms_and_date():
    assert parse_retry_after({"Retry-After": "7"}) == 7.0
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    date = "Wed, 21 Oct 2015 07:28:10 GMT"
    now = 1445412480.0  # 07:28:00 that day
    assert parse_retry_after({"retry-after": date}, now=now) == pytest.approx(10.0)
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({"retry-after": "-3"}) is None
    assert parse_retry_after({}) is None


def test_google_retry_info_becomes_retry_after():
    body = {
        "error": {
            "code": 429,
            "message": "Too many requests",
            "status": "RESOURCE_EXHAUSTED",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []},
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "13.5s"},
            ],
        }
    }
    assert error_from_http(429, _body(body)).retry_after == 13.5
    # a header wins over the body
    assert error_from_http(429, _body(body), {"retry-after": "2"}).retry_after == 2.0


def test_recorded_google_429():
    body = Path("tests/fixtures/unit/google-429-retry-info.json").read_bytes()
    err = error_from_http(429, body, provider="google")
    # a per-minute quota with a delay to wait: a rate limit, retryable
    assert (err.category, err.retry_after, err.retryable) == ("rate_limit", 34.4, True)


def test_transport_error():
    err = transport_error("timeout", "timed out waiting for data")
    assert (err.category, err.retryable, err.http_status) == ("timeout", True, None)
    assert str(err) == "timeout: timed out waiting for data"


def test_generic_error_type_decides_only_without_an_error_status():
    body = _body({"type": "error", "error": {"type": "invalid_request_error", "message": "bad field"}})
    assert error_from_http(200, body).category == "invalid_request"  # an error body inside a 200
    assert error_from_http(403, body).category == "auth"  # the status says more
    assert error_from_http(404, body).category == "not_found"
