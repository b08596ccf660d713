"""google.rpc.Status error bodies -> ProviderError."""

from __future__ import annotations

import json

import pytest

from providers.google.codec import GeminiCodec
from providers.settings import settings_for

from .conftest import KEY, RECORDED


def decode(status: int, body: bytes | dict | list, headers: dict | None = None):
    codec = GeminiCodec(settings_for("google", env={"GEMINI_API_KEY": KEY}))
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return codec.decode_error(status, raw, headers or {})


def rpc(code: int, status: str, message: str, details: list | None = None) -> dict:
    err = {"code": code, "message": message, "status": status}
    if details is not None:
        err["details"] = details
    return {"error": err}


def test_recorded_429_with_retry_info():
    e = decode(429, (RECORDED / "google-429-retry-info.json").read_bytes())
    assert (e.category, e.http_status, e.retry_after, e.retryable, e.provider_code, e.provider) == (
        "rate_limit", 429, 34.4, True, "RESOURCE_EXHAUSTED", "google",
    )  # fmt: skip
    assert e.message == "You exceeded your current quota, please check your plan."


def test_quota_without_retry_info_is_billing():
    e = decode(
        429,
        rpc(
            429,
            "RESOURCE_EXHAUSTED",
            "You exceeded your current quota, please check your plan and billing details.",
        ),
    )
    assert (e.category, e.retryable, e.retry_after) == ("billing", False, None)


def test_resource_exhausted_without_quota_words_is_rate_limit():
    e = decode(429, rpc(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted."))
    assert e.category == "rate_limit"


def test_retry_after_header_wins_over_retry_info():
    retry = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "20s"}]
    e = decode(429, rpc(429, "RESOURCE_EXHAUSTED", "slow down", retry), {"Retry-After": "3"})
    assert e.retry_after == 3.0


@pytest.mark.parametrize(
    ("status", "code", "message", "category"),
    [
        (400, "INVALID_ARGUMENT", "Invalid JSON payload received.", "invalid_request"),
        (400, "INVALID_ARGUMENT", "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", "context_length"),
        (400, "FAILED_PRECONDITION", "User location is not supported for the API use.", "invalid_request"),
        (401, "UNAUTHENTICATED", "Request had invalid authentication credentials.", "auth"),
        (403, "PERMISSION_DENIED", "Method doesn't allow unregistered callers.", "auth"),
        (404, "NOT_FOUND", "models/gemini-9 is not found for API version v1beta.", "not_found"),
        (500, "INTERNAL", "An internal error has occurred.", "server"),
        (503, "UNAVAILABLE", "The model is overloaded. Please try again later.", "overloaded"),
        (504, "DEADLINE_EXCEEDED", "Deadline expired before operation could complete.", "timeout"),
    ],
)  # fmt: skip
def test_status_codes(status: int, code: str, message: str, category: str):
    e = decode(status, rpc(status, code, message))
    assert (e.category, e.http_status, e.provider_code, e.message) == (
        category,
        status,
        code,
        message,
    )
    assert e.retryable == (category in {"server", "overloaded", "timeout"})


def test_bad_api_key_is_auth_and_the_key_never_shows():
    details = [
        {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "API_KEY_INVALID",
            "domain": "googleapis.com",
        }
    ]
    e = decode(400, rpc(400, "INVALID_ARGUMENT", f"API key not valid: {KEY}", details))
    assert e.category == "auth"
    assert KEY not in e.message and KEY not in str(e) and KEY not in repr(e)


def test_list_wrapped_body_and_plain_text():
    e = decode(503, [rpc(503, "UNAVAILABLE", "busy")])
    assert (e.category, e.message) == ("overloaded", "busy")
    e = decode(502, b"<html>Bad Gateway</html>")
    assert (e.category, e.message, e.http_status) == ("server", "<html>Bad Gateway</html>", 502)
    e = decode(500, b"")
    assert e.message == "HTTP 500 with no error message"
