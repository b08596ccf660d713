"""Map an HTTP failure (status, body, headers) to a ProviderError.

The generic mapping here reads the error shapes of OpenAI
(``{"error": {"message", "type", "code"}}``), Anthropic
(``{"type": "error", "error": {"type", "message"}}``) and Google
(``{"error": {"code", "message", "status", "details": [...]}}``). Adapters
refine the category with ``category_for_code`` tables of their own.
"""

from __future__ import annotations

import email.utils
import math
import re
import time
from collections.abc import Mapping
from typing import Any

import msgspec

from .secrets import scrub
from .types import RETRYABLE_CATEGORIES, ErrorCategory, ProviderError

_STATUS: dict[int, ErrorCategory] = {
    400: "invalid_request",
    401: "auth",
    402: "billing",
    403: "auth",
    404: "not_found",
    408: "timeout",
    409: "server",
    413: "invalid_request",
    422: "invalid_request",
    429: "rate_limit",
    500: "server",
    502: "server",
    503: "overloaded",
    504: "timeout",
    529: "overloaded",
}

# Provider codes and types that say more than the status does.
_CODES: dict[str, ErrorCategory] = {
    # OpenAI
    "invalid_api_key": "auth",
    "insufficient_quota": "billing",
    "billing_hard_limit_reached": "billing",
    "rate_limit_exceeded": "rate_limit",
    "context_length_exceeded": "context_length",
    "model_not_found": "not_found",
    "content_filter": "content_filter",
    "content_policy_violation": "content_filter",
    "server_error": "server",
    # Anthropic
    "authentication_error": "auth",
    "permission_error": "auth",
    "not_found_error": "not_found",
    "rate_limit_error": "rate_limit",
    "overloaded_error": "overloaded",
    "api_error": "server",
    "request_too_large": "invalid_request",
    "billing_error": "billing",
    "timeout_error": "timeout",
    # google.rpc codes
    "INVALID_ARGUMENT": "invalid_request",
    "FAILED_PRECONDITION": "invalid_request",
    "UNAUTHENTICATED": "auth",
    "PERMISSION_DENIED": "auth",
    "NOT_FOUND": "not_found",
    "RESOURCE_EXHAUSTED": "rate_limit",
    "INTERNAL": "server",
    "UNAVAILABLE": "overloaded",
    "DEADLINE_EXCEEDED": "timeout",
}

_CONTEXT_LENGTH = re.compile(
    r"prompt is too long|context.length|context window|maximum context|too many tokens|"
    r"input token count.*exceeds|reduce the length",
    re.IGNORECASE,
)
_QUOTA = re.compile(r"quota|billing|credit balance|insufficient.funds", re.IGNORECASE)
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


# Types so broad that the HTTP status says more; they decide only when there is
# no error status (a 200 with an error body, an error event inside a stream).
_GENERIC: dict[str, ErrorCategory] = {
    "invalid_request_error": "invalid_request",
}


def category_for_code(code: str | None) -> ErrorCategory | None:
    return _CODES.get(code) if code else None


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds to wait from retry-after-ms, retry-after (seconds or HTTP date)."""
    lower = {k.lower(): v for k, v in headers.items()}
    ms = lower.get("retry-after-ms")
    if ms is not None:
        try:
            value = float(ms) / 1000.0
            if math.isfinite(value) and value >= 0:
                return value
        except ValueError:
            pass
    ra = lower.get("retry-after")
    if ra is None:
        return None
    ra = ra.strip()
    try:
        value = float(ra)
        return value if math.isfinite(value) and value >= 0 else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(ra)  # raises, never None, since 3.10
    except (TypeError, ValueError, IndexError):
        return None
    now = time.time() if now is None else now
    return max(0.0, when.timestamp() - now)


def _google_retry_delay(details: Any) -> float | None:
    if not isinstance(details, list):
        return None
    for d in details:
        if isinstance(d, dict) and str(d.get("@type", "")).endswith("google.rpc.RetryInfo"):
            m = _DURATION.match(str(d.get("retryDelay", "")))
            if m:
                return float(m.group(1))
    return None


def _text_of(body: bytes) -> str:
    # scrubbed before the cut: a cut through a key would leave a fragment
    # that no exact match finds any more
    return scrub(body.decode("utf-8", "replace").strip())[:500]


def error_from_body(
    body: Any,
) -> tuple[str | None, str | None, str | None, float | None]:
    """(message, code, type_or_status, retry_delay) from a decoded error body of any provider."""
    if not isinstance(body, dict):
        return None, None, None, None
    err = body.get("error", body)
    if isinstance(err, str):
        return err, None, None, None
    if not isinstance(err, dict):
        return None, None, None, None
    message = err.get("message")
    code = err.get("code")
    kind = err.get("type") or err.get("status")
    return (
        str(message) if message is not None else None,
        str(code) if code is not None and not isinstance(code, int) else None,
        str(kind) if kind is not None else None,
        _google_retry_delay(err.get("details")),
    )


def classify(
    *,
    status: int | None,
    message: str,
    code: str | None = None,
    kind: str | None = None,
    retry_offered: bool = False,
) -> ErrorCategory:
    category = category_for_code(code) or category_for_code(kind)
    if category is None:
        category = _STATUS.get(status or 0)
    if category is None:
        category = _GENERIC.get(code or "") or _GENERIC.get(kind or "")
    if category is None:
        if status is not None and 500 <= status < 600:
            category = "server"
        elif status is not None and 400 <= status < 500:
            category = "invalid_request"
        else:
            category = "unknown"
    if category == "invalid_request" and _CONTEXT_LENGTH.search(message):
        category = "context_length"
    # "quota" with a delay to wait is a per-minute quota: waiting helps, so it is
    # a rate limit; without one it is the account's quota, which waiting won't fix.
    if (
        category == "rate_limit"
        and not retry_offered
        and (code or kind) != "rate_limit_exceeded"
        and _QUOTA.search(message)
    ):
        category = "billing"
    return category


def error_from_http(
    status: int,
    body: bytes,
    headers: Mapping[str, str] | None = None,
    *,
    provider: str | None = None,
    now: float | None = None,
) -> ProviderError:
    headers = headers or {}
    try:
        decoded = msgspec.json.decode(body) if body else None
    except (msgspec.DecodeError, UnicodeError):  # invalid UTF-8, a lone surrogate
        decoded = None
    message, code, kind, delay = error_from_body(decoded)
    if not message:
        message = _text_of(body) or f"HTTP {status} with no error message"
    retry_after = parse_retry_after(headers, now=now)
    if retry_after is None:
        retry_after = delay
    category = classify(
        status=status, message=message, code=code, kind=kind, retry_offered=retry_after is not None
    )
    return provider_error(
        category,
        message,
        http_status=status,
        provider_code=code or kind,
        retry_after=retry_after,
        provider=provider,
    )


def provider_error(
    category: ErrorCategory,
    message: str,
    *,
    http_status: int | None = None,
    provider_code: str | None = None,
    retry_after: float | None = None,
    provider: str | None = None,
) -> ProviderError:
    """A ProviderError, retryable as its category says."""
    return ProviderError(
        category=category,
        message=message,
        http_status=http_status,
        provider_code=provider_code,
        retry_after=retry_after,
        retryable=category in RETRYABLE_CATEGORIES,
        provider=provider,
    )


def transport_error(
    category: ErrorCategory, message: str, *, provider: str | None = None
) -> ProviderError:
    """A failure with no HTTP answer: timeout, network, a stream cut short."""
    return provider_error(category, message, provider=provider)
