"""Rate-limit facts read from a provider's answer: how much is left, when it refills,
when to come back. The facts a provider-wide limiter learns from (issue 29).

Pure: header values (and, for Gemini, an error body) in, a RateLimits out. No
state and no clock: the caller passes ``now``, the wall-clock time (time.time())
the response head arrived, which only the APIs that send dates need.

Times are deltas in seconds measured from when the response head was received
(``reset_after``, ``retry_after``), never absolute: a caller adds them to its own
clock (trio.current_time(), time.monotonic()) at once, and a wrong wall clock on
either side cannot move a deadline by hours.

What each wire API sends:

* Anthropic Messages, on every answer: ``anthropic-ratelimit-{requests,
  input-tokens,output-tokens,tokens}-{limit,remaining,reset}``, the reset an
  RFC 3339 time (``tokens`` is the most restrictive token limit in effect);
  ``retry-after`` (seconds) on a 429 or 529.
* OpenAI Chat and Responses and the services that copy them (Groq, xAI,
  DeepSeek...): ``x-ratelimit-{limit,remaining,reset}-{requests,tokens}``, the
  reset a Go duration (``1s``, ``6m0s``, ``20ms``, ``2m59.56s``); OpenRouter
  sends unsuffixed ``x-ratelimit-{limit,remaining,reset}`` (requests, the reset
  in epoch milliseconds); ``retry-after`` and ``retry-after-ms``.
* Gemini: no rate headers; a 429's body (google.rpc.Status) carries a
  ``RetryInfo.retryDelay`` ("30s") and a ``QuotaFailure`` naming each quota hit
  (its metric and value, i.e. which limit, now at 0).

Every value is checked and none raises: what cannot be read is left out
(unknown); counts are whole numbers in [0, MAX_COUNT]; durations are finite and
in [0, MAX_SECONDS] (a reset date already past is 0, one beyond the bound is
the bound: "a very long time" is still a fact). A negative figure (Azure sends
-1 for "no limit known") is unknown.
"""

from __future__ import annotations

import email.utils
import math
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import msgspec

MAX_COUNT = 10**15  # requests or tokens per window: far above any real limit
MAX_SECONDS = 7 * 86400.0  # the longest reset or wait taken literally
_MAX_TEXT = 64  # characters: no real value is longer; longer ones are not parsed


class Allowance(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """One limited quantity (requests or tokens) of one window. None: not sent or unreadable."""

    limit: int | None = None  # the window's size
    remaining: int | None = None  # left in the window now
    reset_after: float | None = None  # seconds until the window is full again


class RateLimits(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """The rate-limit facts of one HTTP exchange. None: the answer did not say.

    ``tokens`` is a combined figure (OpenAI's; Anthropic's most restrictive
    token limit) where an API gives one; ``retry_after``: seconds to wait before
    the next request, when the answer said so (a 429, 529 or 503).
    """

    requests: Allowance | None = None
    input_tokens: Allowance | None = None
    output_tokens: Allowance | None = None
    tokens: Allowance | None = None
    retry_after: float | None = None


# Called with the facts of each exchange that had any, as soon as they are known.
OnLimits = Callable[[RateLimits], None]

Headers = Mapping[str, str] | Mapping[bytes, bytes]

_EMPTY = RateLimits()
_COUNT = re.compile(r"\s*\+?([0-9]{1,30})(?:\.[0-9]*)?\s*")
_NUMBER = re.compile(r"\s*\+?([0-9]{1,30}(?:\.[0-9]*)?|\.[0-9]{1,30})\s*")
_GO_PART = re.compile(r"([0-9]{1,20}(?:\.[0-9]{0,20})?|\.[0-9]{1,20})(h|ms|us|µs|μs|ns|m|s)")
_GO_UNIT = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "μs": 1e-6}
_GO_UNIT["ns"] = 1e-9
_EPOCH_S = 1e9  # a bare reset this large is a Unix time (2001 on), not a delta
_EPOCH_MS = 1e12  # ... and this large, in milliseconds (OpenRouter)
_PREFIXES = ("anthropic-ratelimit-", "x-ratelimit-", "retry-after")
_FIRST = frozenset("aAxXrR")


def _text(value: str | bytes) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else value


def _relevant(headers: Headers) -> dict[str, str]:
    """The rate-limit fields, names lower-cased, from any mapping (str or bytes,
    case-insensitive or not). The first of a repeated field wins."""
    found: dict[str, str] = {}
    for name, value in headers.items():
        key = name if isinstance(name, str) else name.decode("latin-1")
        if key[:1] not in _FIRST:  # most fields, cheaply
            continue
        key = key.lower()
        if key.startswith(_PREFIXES) and key not in found:
            found[key] = _text(value)
    return found


def _seconds(value: float) -> float | None:
    """``value`` as a wait: finite and non-negative, at most MAX_SECONDS."""
    if not math.isfinite(value) or value < 0:
        return None
    return min(value, MAX_SECONDS)


def parse_count(text: str | None) -> int | None:
    """A whole non-negative number ("49500"; "49500.0" too), at most MAX_COUNT."""
    if text is None or len(text) > _MAX_TEXT:
        return None
    m = _COUNT.fullmatch(text)
    return min(int(m.group(1)), MAX_COUNT) if m else None


def parse_duration(text: str | None) -> float | None:
    """Seconds from a Go duration ("6m0s", "20ms", "2m59.56s", "1h2m3s"), a
    protobuf Duration ("1.5s") or a bare number of seconds ("34")."""
    if text is None or len(text) > _MAX_TEXT:
        return None
    text = text.strip()
    if not text:
        return None
    m = _NUMBER.fullmatch(text)
    if m:
        return _seconds(float(m.group(1)))
    total = 0.0
    end = 0
    for part in _GO_PART.finditer(text):
        if part.start() != end:
            return None
        total += float(part.group(1)) * _GO_UNIT[part.group(2)]
        end = part.end()
    return _seconds(total) if end == len(text) else None


def _date(text: str, now: float) -> float | None:
    """Seconds from ``now`` to an RFC 3339 time ("2025-10-25T12:00:00Z"); 0 if past."""
    if not math.isfinite(now):
        return None
    try:
        when = datetime.fromisoformat(text.strip())
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return _seconds(max(0.0, when.timestamp() - now))
    except (ValueError, OverflowError, OSError):
        return None


def parse_reset(text: str | None, now: float) -> float | None:
    """Seconds until a reset given as a duration, a Unix time (seconds or
    milliseconds) or an RFC 3339 time; 0 for a time already past."""
    if text is None or len(text) > _MAX_TEXT:
        return None
    if text[4:5] == "-":  # a date, as Anthropic sends: the common case first
        return _date(text, now)
    m = _NUMBER.fullmatch(text)
    if m:
        value = float(m.group(1))
        if value >= _EPOCH_S and math.isfinite(now):
            value = value / 1000.0 if value >= _EPOCH_MS else value
            return _seconds(max(0.0, value - now))
        return _seconds(value)
    duration = parse_duration(text)
    return duration if duration is not None else _date(text, now)


def parse_retry_after(fields: Mapping[str, str], now: float) -> float | None:
    """Seconds to wait from ``retry-after-ms`` (more precise, so first), else
    ``retry-after``: seconds or an HTTP date (RFC 9110). ``fields``: lower-case names."""
    ms = fields.get("retry-after-ms")
    if ms is not None and len(ms) <= _MAX_TEXT and (m := _NUMBER.fullmatch(ms)):
        return _seconds(float(m.group(1)) / 1000.0)
    text = fields.get("retry-after")
    if text is None or len(text) > _MAX_TEXT:
        return None
    m = _NUMBER.fullmatch(text)
    if m:
        return _seconds(float(m.group(1)))
    if not math.isfinite(now):
        return None
    try:
        when = email.utils.parsedate_to_datetime(text.strip())
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return _seconds(max(0.0, when.timestamp() - now))
    except (TypeError, ValueError, IndexError, OverflowError, OSError):
        return None


def _allowance(
    limit: str | None, remaining: str | None, reset: str | None, now: float
) -> Allowance | None:
    a = Allowance(
        limit=parse_count(limit),
        remaining=parse_count(remaining),
        reset_after=parse_reset(reset, now),
    )
    return None if a.limit is None and a.remaining is None and a.reset_after is None else a


def _result(limits: RateLimits) -> RateLimits | None:
    return None if limits == _EMPTY else limits


def _of(found: Mapping[str, Allowance | None], retry_after: float | None) -> RateLimits | None:
    return _result(
        RateLimits(
            requests=found.get("requests"),
            input_tokens=found.get("input_tokens"),
            output_tokens=found.get("output_tokens"),
            tokens=found.get("tokens"),
            retry_after=retry_after,
        )
    )


# ------------------------------------------------------------------- per API

_ANTHROPIC = {
    "requests": "requests",
    "input_tokens": "input-tokens",
    "output_tokens": "output-tokens",
    "tokens": "tokens",
}


def anthropic_limits(headers: Headers, *, now: float) -> RateLimits | None:
    """The facts of an Anthropic Messages answer (any status); None: it sent none."""
    f = _relevant(headers)
    if not f:
        return None
    found: dict[str, Allowance | None] = {}
    for field, word in _ANTHROPIC.items():
        base = f"anthropic-ratelimit-{word}-"
        found[field] = _allowance(
            f.get(base + "limit"), f.get(base + "remaining"), f.get(base + "reset"), now
        )
    return _of(found, parse_retry_after(f, now))


def openai_limits(headers: Headers, *, now: float) -> RateLimits | None:
    """The facts of an OpenAI Chat or Responses answer, or of a service that
    copies their headers (any status); None: it sent none."""
    f = _relevant(headers)
    if not f:
        return None

    def kind(word: str) -> Allowance | None:
        return _allowance(
            f.get(f"x-ratelimit-limit-{word}"),
            f.get(f"x-ratelimit-remaining-{word}"),
            f.get(f"x-ratelimit-reset-{word}"),
            now,
        )

    requests = kind("requests")
    if requests is None:  # OpenRouter: unsuffixed, and about requests
        requests = _allowance(
            f.get("x-ratelimit-limit"),
            f.get("x-ratelimit-remaining"),
            f.get("x-ratelimit-reset"),
            now,
        )
    found = {"requests": requests, "tokens": kind("tokens")}
    return _of(found, parse_retry_after(f, now))


_RETRY_INFO = "google.rpc.RetryInfo"
_QUOTA_FAILURE = "google.rpc.QuotaFailure"


def _status_of(body: bytes) -> dict[str, Any] | None:
    """The google.rpc.Status object of a Gemini error body, however wrapped."""
    if not body:
        return None
    try:
        data = msgspec.json.decode(body)
    except (msgspec.DecodeError, UnicodeError):  # invalid UTF-8, a lone surrogate
        return None
    if isinstance(data, list) and data:  # the streaming endpoint wraps it in a list
        data = data[0]
    if not isinstance(data, dict):
        return None
    err = data.get("error", data)
    return err if isinstance(err, dict) else None


def _quota_field(violation: dict[str, Any]) -> str | None:
    """Which limit a QuotaFailure violation names, from its metric and id
    (".../generate_content_free_tier_input_token_count", "...RequestsPerMinute...")."""
    name = f"{violation.get('quotaMetric', '')} {violation.get('quotaId', '')}".lower()
    name = name.replace("_", "").replace("-", "")
    if "inputtoken" in name:
        return "input_tokens"
    if "outputtoken" in name:
        return "output_tokens"
    if "token" in name:
        return "tokens"
    if "request" in name:
        return "requests"
    return None


def google_limits(headers: Headers, body: bytes, *, now: float) -> RateLimits | None:
    """The facts of a Gemini answer: from its error body (RetryInfo, QuotaFailure)
    and a ``retry-after`` header if something in front of it sent one."""
    f = _relevant(headers)
    retry_after = parse_retry_after(f, now) if f else None
    status = _status_of(body)
    details = status.get("details") if status is not None else None
    delay = _retry_delay(details)
    if retry_after is None:
        retry_after = delay
    return _of(_quota_failures(details, delay), retry_after)


def _retry_delay(details: Any) -> float | None:
    for d in details if isinstance(details, list) else ():
        if isinstance(d, dict) and str(d.get("@type", "")).endswith(_RETRY_INFO):
            delay = d.get("retryDelay")
            return parse_duration(delay) if isinstance(delay, str) else None
    return None


def _quota_failures(details: Any, delay: float | None) -> dict[str, Allowance]:
    """One Allowance per limit a QuotaFailure names as hit: remaining 0. Of two
    quotas of one kind (per day and per minute), the per-minute one stands."""
    found: dict[str, Allowance] = {}
    per_minute: set[str] = set()
    for d in details if isinstance(details, list) else ():
        if not (isinstance(d, dict) and str(d.get("@type", "")).endswith(_QUOTA_FAILURE)):
            continue
        violations = d.get("violations")
        for v in violations if isinstance(violations, list) else ():
            field = _quota_field(v) if isinstance(v, dict) else None
            if field is None or field in per_minute:
                continue
            minute = "perminute" in str(v.get("quotaId", "")).lower()
            if field in found and not minute:
                continue
            value = v.get("quotaValue")
            found[field] = Allowance(
                limit=parse_count(value) if isinstance(value, str) else None,
                remaining=0,
                # a per-minute quota refills when Google says to come back;
                # a per-day one at a time the body does not say
                reset_after=delay if minute else None,
            )
            if minute:
                per_minute.add(field)
    return found


__all__ = [
    "MAX_COUNT",
    "MAX_SECONDS",
    "Allowance",
    "OnLimits",
    "RateLimits",
    "anthropic_limits",
    "google_limits",
    "openai_limits",
    "parse_count",
    "parse_duration",
    "parse_reset",
    "parse_retry_after",
]
