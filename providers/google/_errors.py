"""google.rpc.Status error bodies -> ProviderError.

Gemini answers errors as ``{"error": {"code", "message", "status", "details"}}``
(the streaming endpoint sometimes wraps it in a one-element list). The
category comes from ``status`` first, then the HTTP status:

* INVALID_ARGUMENT / FAILED_PRECONDITION -> invalid_request (context_length
  when the message says the input is too long; auth when an ErrorInfo says
  API_KEY_INVALID - Google answers a bad key with 400)
* UNAUTHENTICATED / PERMISSION_DENIED -> auth
* RESOURCE_EXHAUSTED -> rate_limit; billing when the message speaks of quota
  or billing and the body has no RetryInfo (a RetryInfo means "come back in
  N seconds": a per-minute quota, so a rate limit even though Google's text
  says "quota")
* NOT_FOUND -> not_found, INTERNAL -> server, UNAVAILABLE -> overloaded,
  DEADLINE_EXCEEDED -> timeout

``RetryInfo.retryDelay`` ("34.4s") becomes ``retry_after`` unless a
retry-after header says otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from ..errors import classify, parse_retry_after, provider_error
from ..secrets import scrub as scrub_secrets
from ..types import ErrorCategory, ProviderError

_RETRY_INFO = "google.rpc.RetryInfo"
_ERROR_INFO = "google.rpc.ErrorInfo"
_KEY_REASONS = frozenset(
    {"API_KEY_INVALID", "API_KEY_SERVICE_BLOCKED", "API_KEY_HTTP_REFERRER_BLOCKED"}
)
_HTTP_FOR_CODE = {
    "INVALID_ARGUMENT": 400,
    "FAILED_PRECONDITION": 400,
    "UNAUTHENTICATED": 401,
    "PERMISSION_DENIED": 403,
    "NOT_FOUND": 404,
    "RESOURCE_EXHAUSTED": 429,
    "INTERNAL": 500,
    "UNAVAILABLE": 503,
    "DEADLINE_EXCEEDED": 504,
}


def _duration(text: Any) -> float | None:
    """A google.protobuf.Duration in JSON form ("34.4s") in seconds."""
    if not isinstance(text, str) or not text.endswith("s"):
        return None
    try:
        value = float(text[:-1])
    except ValueError:
        return None
    return value if value >= 0 else None


def _details(details: Any) -> tuple[float | None, str | None]:
    delay: float | None = None
    reason: str | None = None
    if isinstance(details, list):
        for d in details:
            if not isinstance(d, dict):
                continue
            kind = str(d.get("@type", ""))
            if kind.endswith(_RETRY_INFO) and delay is None:
                delay = _duration(d.get("retryDelay"))
            elif kind.endswith(_ERROR_INFO) and reason is None:
                r = d.get("reason")
                reason = str(r) if r is not None else None
    return delay, reason


def scrub(text: str, secret: str | None) -> str:
    """``text`` without ``secret``, any registered secret, or a prefix of 8+ characters of one."""
    return scrub_secrets(text, secret)


def status_error(
    status: int | None,
    err: Any,
    headers: Mapping[str, str] | None = None,
    *,
    provider: str | None = None,
    secret: str | None = None,
    fallback: str = "",
) -> ProviderError:
    """A ProviderError from a decoded google.rpc.Status object (or anything else)."""
    message = code = None
    delay = reason = None
    if isinstance(err, dict):
        m = err.get("message")
        message = str(m) if m is not None else None
        c = err.get("status")
        code = str(c) if c is not None else None
        if status is None and isinstance(err.get("code"), int):
            status = err["code"]
        delay, reason = _details(err.get("details"))
    elif isinstance(err, str):
        message = err
    if status is None and code is not None:
        status = _HTTP_FOR_CODE.get(code)
    if not message:
        message = fallback or (
            f"HTTP {status} with no error message" if status else "unknown error"
        )
    message = scrub(message, secret)
    category: ErrorCategory = classify(status=status, message=message, kind=code)
    if code == "RESOURCE_EXHAUSTED" or (code is None and status == 429):
        lower = message.lower()
        says_quota = "quota" in lower or "billing" in lower
        category = "billing" if says_quota and delay is None else "rate_limit"
    elif reason in _KEY_REASONS:
        category = "auth"
    told = parse_retry_after(headers) if headers else None  # a header beats RetryInfo
    return provider_error(
        category,
        message,
        http_status=status,
        provider_code=code or reason,
        retry_after=delay if told is None else told,
        provider=provider,
    )


def http_error(
    status: int,
    body: bytes,
    headers: Mapping[str, str] | None,
    *,
    provider: str | None = None,
    secret: str | None = None,
) -> ProviderError:
    try:
        decoded = msgspec.json.decode(body) if body else None
    except (msgspec.DecodeError, UnicodeError):  # invalid UTF-8, a lone surrogate
        decoded = None
    if isinstance(decoded, list) and decoded and isinstance(decoded[0], dict):
        decoded = decoded[0]
    err = decoded.get("error", decoded) if isinstance(decoded, dict) else None
    # scrubbed before the cut, which could split a key
    text = scrub(body.decode("utf-8", "replace").strip(), secret)[:500] if err is None else ""
    return status_error(status, err, headers, provider=provider, secret=secret, fallback=text)
