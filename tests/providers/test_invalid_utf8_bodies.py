"""Error bodies and answers whose JSON strings hold bytes that are not UTF-8
(msgspec raises UnicodeDecodeError there, not DecodeError): each decoder
gives its ordinary "not JSON" answer instead of an exception."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from providers.anthropic._wire import lenient
from providers.errors import error_from_http
from providers.google._errors import http_error

BAD = [b'{"error": {"message": "\x80"}}', b'"\xff\xfe"', b'[{"error": {"code": "\xc3"}}]']


@pytest.mark.parametrize("body", BAD)
def test_an_error_body_with_invalid_utf8_is_still_an_error(body: bytes) -> None:
    for err in (error_from_http(500, body), http_error(500, body, None)):
        assert err.message  # the body's text, decoded leniently, or the status


@pytest.mark.parametrize("body", BAD)
def test_an_anthropic_event_with_invalid_utf8_is_skipped(body: bytes) -> None:
    assert lenient(body) is None


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200).map(lambda b: b'{"error": {"message": "' + b + b'"}}'))
def test_any_bytes_in_an_error_string(body: bytes) -> None:
    assert error_from_http(429, body).message
    assert http_error(429, body, None).message
