"""Rate-limit facts decoded from each wire API's answers (providers/ratelimits.py).

The header sets are the providers' documented examples:
- Anthropic, "Rate limits" > "Response headers" (docs.anthropic.com/en/api/rate-limits):
  ``anthropic-ratelimit-{requests,input-tokens,output-tokens,tokens}-{limit,remaining,reset}``,
  the reset an RFC 3339 time; ``retry-after`` in seconds on a 429.
- OpenAI, "Rate limits" > "Rate limits in headers" (platform.openai.com/docs/guides/rate-limits):
  limit-requests 60, limit-tokens 150000, remaining-requests 59,
  remaining-tokens 149984, reset-requests "1s", reset-tokens "6m0s".
- Groq (console.groq.com/docs/rate-limits): the same names, resets "2m59.56s"
  and "7.66s", retry-after in seconds on a 429.
- OpenRouter (openrouter.ai/docs/api-reference/limits): unsuffixed X-RateLimit-*
  on the error, the reset in epoch milliseconds.
- Azure OpenAI answers -1 and 0 when it knows no limit (learn.microsoft.com Q&A 5625878).
- Gemini (ai.google.dev/gemini-api/docs/rate-limits): a 429's google.rpc.Status
  with QuotaFailure violations and a RetryInfo retryDelay; the recorded body of
  tests/fixtures/recorded/google/google-429-retry-info.json. The other recorded
  files hold bodies only, no headers, so the header decoders have no recording.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from providers.h1 import Headers
from providers.ratelimits import (
    MAX_COUNT,
    MAX_SECONDS,
    Allowance,
    RateLimits,
    anthropic_limits,
    google_limits,
    openai_limits,
    parse_duration,
    parse_reset,
)

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "recorded"
NOW = 1761393600.0  # 2025-10-25T12:00:00Z


def test_anthropic_documented_headers():
    headers = {
        "anthropic-ratelimit-requests-limit": "50",
        "anthropic-ratelimit-requests-remaining": "49",
        "anthropic-ratelimit-requests-reset": "2025-10-25T12:00:01Z",
        "anthropic-ratelimit-input-tokens-limit": "40000",
        "anthropic-ratelimit-input-tokens-remaining": "39000",
        "anthropic-ratelimit-input-tokens-reset": "2025-10-25T12:00:30.500Z",
        "anthropic-ratelimit-output-tokens-limit": "8000",
        "anthropic-ratelimit-output-tokens-remaining": "7000",
        "anthropic-ratelimit-output-tokens-reset": "2025-10-25T12:01:00+00:00",
        "anthropic-ratelimit-tokens-limit": "48000",
        "anthropic-ratelimit-tokens-remaining": "46000",
        "anthropic-ratelimit-tokens-reset": "2025-10-25T14:00:30+02:00",
        "request-id": "req_018EeWyXxfu5pfWkrYcMdjWG",
    }
    assert anthropic_limits(headers, now=NOW) == RateLimits(
        requests=Allowance(limit=50, remaining=49, reset_after=1.0),
        input_tokens=Allowance(limit=40000, remaining=39000, reset_after=30.5),
        output_tokens=Allowance(limit=8000, remaining=7000, reset_after=60.0),
        tokens=Allowance(limit=48000, remaining=46000, reset_after=30.0),
    )


def test_anthropic_429_retry_after_and_case():
    # any case, and the h1 client's own Headers type (repeated fields joined)
    headers = Headers(
        [
            ("Retry-After", "14"),
            ("Anthropic-RateLimit-Input-Tokens-Remaining", "0"),
            ("anthropic-ratelimit-input-tokens-reset", "2025-10-25T11:59:00Z"),  # past: 0
        ]
    )
    assert anthropic_limits(headers, now=NOW) == RateLimits(
        input_tokens=Allowance(remaining=0, reset_after=0.0), retry_after=14.0
    )


def test_no_headers_is_none():
    plain = {"content-type": "text/event-stream", "request-id": "req_1"}
    assert anthropic_limits(plain, now=NOW) is None
    assert openai_limits(plain, now=NOW) is None
    assert google_limits(plain, b"", now=NOW) is None
    assert google_limits({}, b'{"error": {"code": 500, "message": "x"}}', now=NOW) is None


def test_openai_documented_headers():
    headers = {
        "x-ratelimit-limit-requests": "60",
        "x-ratelimit-limit-tokens": "150000",
        "x-ratelimit-remaining-requests": "59",
        "x-ratelimit-remaining-tokens": "149984",
        "x-ratelimit-reset-requests": "1s",
        "x-ratelimit-reset-tokens": "6m0s",
    }
    assert openai_limits(headers, now=NOW) == RateLimits(
        requests=Allowance(limit=60, remaining=59, reset_after=1.0),
        tokens=Allowance(limit=150000, remaining=149984, reset_after=360.0),
    )


def test_openai_429_retry_after_ms_wins():
    headers = {
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "20ms",
        "retry-after": "1",
        "retry-after-ms": "250",
    }
    limits = openai_limits(headers, now=NOW)
    assert limits == RateLimits(requests=Allowance(remaining=0, reset_after=0.02), retry_after=0.25)


def test_groq_and_azure_figures():
    groq = {
        "x-ratelimit-limit-requests": "14400",
        "x-ratelimit-limit-tokens": "18000",
        "x-ratelimit-remaining-requests": "14370",
        "x-ratelimit-remaining-tokens": "17997",
        "x-ratelimit-reset-requests": "2m59.56s",
        "x-ratelimit-reset-tokens": "7.66s",
        "retry-after": "2",
    }
    limits = openai_limits(groq, now=NOW)
    assert limits is not None and limits.requests is not None and limits.tokens is not None
    assert math.isclose(limits.requests.reset_after or 0, 179.56)
    assert math.isclose(limits.tokens.reset_after or 0, 7.66)
    assert limits.retry_after == 2.0
    # Azure: -1 means "not known", never a limit of 0
    azure = {"x-ratelimit-limit-tokens": "-1", "x-ratelimit-remaining-tokens": "-1", "x-ratelimit-reset-tokens": "0"}
    assert openai_limits(azure, now=NOW) == RateLimits(tokens=Allowance(reset_after=0.0))


def test_openrouter_unsuffixed_epoch_ms():
    headers = {
        "X-RateLimit-Limit": "20",
        "X-RateLimit-Remaining": "0",
        "X-RateLimit-Reset": str(int((NOW + 7.5) * 1000)),
    }
    assert openai_limits(headers, now=NOW) == RateLimits(
        requests=Allowance(limit=20, remaining=0, reset_after=7.5)
    )


def test_bytes_headers():
    headers = {b"x-ratelimit-remaining-requests": b"3", b"retry-after": b"2"}
    assert openai_limits(headers, now=NOW) == RateLimits(requests=Allowance(remaining=3), retry_after=2.0)


def test_durations():
    assert parse_duration("1h2m3s") == 3723.0
    assert parse_duration("20ms") == 0.02
    assert parse_duration("0.5s") == 0.5
    assert parse_duration("1.5") == 1.5
    assert parse_duration("500us") == 0.0005
    for bad in ("", "s", "5x", "-1s", "1s2", "m1s", "nan", "inf", "1e3s", "1_000s"):
        assert parse_duration(bad) is None, bad
    assert parse_duration("99999999h") == MAX_SECONDS  # clamped, not dropped


def test_resets_far_and_past():
    assert parse_reset("9999-12-31T23:59:59Z", NOW) == MAX_SECONDS
    assert parse_reset("0001-01-01T00:00:00Z", NOW) == 0.0
    assert parse_reset(str(NOW + 3), NOW) == 3.0  # a Unix time in seconds
    assert parse_reset("2025-13-45T99:00:00Z", NOW) is None
    assert parse_reset("2025-10-25T12:00:10Z", math.nan) is None  # no clock: no date
    assert parse_reset("10s", math.nan) == 10.0  # a delta needs none


def test_counts_clamped_and_rejected():
    headers = {
        "anthropic-ratelimit-requests-limit": "9" * 30,
        "anthropic-ratelimit-requests-remaining": "12.0",
        "anthropic-ratelimit-tokens-limit": "1e6",
        "anthropic-ratelimit-tokens-remaining": "NaN",
        "anthropic-ratelimit-input-tokens-limit": "١٢",  # Arabic-Indic digits: not HTTP
        "retry-after": "-5",
    }
    assert anthropic_limits(headers, now=NOW) == RateLimits(
        requests=Allowance(limit=MAX_COUNT, remaining=12)
    )


def test_retry_after_http_date():
    headers = {"retry-after": "Sat, 25 Oct 2025 12:00:42 GMT"}
    assert anthropic_limits(headers, now=NOW) == RateLimits(retry_after=42.0)


def test_gemini_recorded_429():
    body = (RECORDED / "google" / "google-429-retry-info.json").read_bytes()
    assert google_limits({}, body, now=NOW) == RateLimits(
        requests=Allowance(remaining=0, reset_after=34.4), retry_after=34.4
    )


def test_gemini_documented_429_per_day_and_per_minute():
    body = {
        "error": {
            "code": 429,
            "message": "You exceeded your current quota, please check your plan and billing details.",
            "status": "RESOURCE_EXHAUSTED",
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                    "violations": [
                        {
                            "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                            "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
                            "quotaDimensions": {"location": "global", "model": "gemini-2.0-flash"},
                            "quotaValue": "200",
                        },
                        {
                            "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                            "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                            "quotaValue": "15",
                        },
                        {
                            "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_input_token_count",
                            "quotaId": "GenerateContentInputTokensPerModelPerDay-FreeTier",
                            "quotaValue": "1000000",
                        },
                    ],
                },
                {"@type": "type.googleapis.com/google.rpc.Help", "links": []},
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "10.689924287s"},
            ],
        }
    }
    # the streaming endpoint wraps the Status in a one-element list
    for raw in (json.dumps(body), json.dumps([body])):
        limits = google_limits({}, raw.encode(), now=NOW)
        assert limits == RateLimits(
            requests=Allowance(limit=15, remaining=0, reset_after=10.689924287),
            input_tokens=Allowance(limit=1000000, remaining=0),  # per day: refill unknown
            retry_after=10.689924287,
        )
    # a retry-after header (a proxy in front) says when to come back instead
    limits = google_limits({"Retry-After": "3"}, json.dumps(body).encode(), now=NOW)
    assert limits is not None and limits.retry_after == 3.0


def test_structs_encode():
    limits = RateLimits(requests=Allowance(limit=1, remaining=0, reset_after=0.5), retry_after=2.0)
    raw = msgspec.json.encode(limits)
    assert json.loads(raw) == {"requests": {"limit": 1, "remaining": 0, "reset_after": 0.5}, "retry_after": 2.0}
    assert msgspec.json.decode(raw, type=RateLimits) == limits


# ------------------------------------------------------------------ hostile

NAMES = [
    f"anthropic-ratelimit-{kind}-{what}"
    for kind in ("requests", "input-tokens", "output-tokens", "tokens")
    for what in ("limit", "remaining", "reset")
] + [
    f"x-ratelimit-{what}-{kind}" for kind in ("requests", "tokens") for what in ("limit", "remaining", "reset")
] + ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "retry-after", "retry-after-ms"]

NUMBERISH = st.one_of(
    st.text(max_size=80),
    st.text(alphabet="0123456789.-+eE:TZ hmsun", max_size=40),
    st.integers(min_value=-(10**40), max_value=10**40).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.datetimes().map(lambda d: d.isoformat() + "Z"),
    st.sampled_from(["NaN", "inf", "-inf", "1e400", "9" * 5000, "Sat, 25 Oct 2025 12:00:42 GMT", "Mon, 99 Foo 99999 99:99:99 GMT"]),
)
NOWS = st.one_of(st.just(NOW), st.floats(allow_nan=True, allow_infinity=True))


def _numbers_sane(limits: RateLimits | None) -> None:
    if limits is None:
        return
    assert limits != RateLimits()
    if limits.retry_after is not None:
        assert isinstance(limits.retry_after, float)
        assert math.isfinite(limits.retry_after) and 0 <= limits.retry_after <= MAX_SECONDS
    for a in (limits.requests, limits.input_tokens, limits.output_tokens, limits.tokens):
        if a is None:
            continue
        for count in (a.limit, a.remaining):
            assert count is None or (type(count) is int and 0 <= count <= MAX_COUNT)
        if a.reset_after is not None:
            assert math.isfinite(a.reset_after) and 0 <= a.reset_after <= MAX_SECONDS


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.sampled_from(NAMES), NUMBERISH, max_size=12), NOWS)
def test_hostile_header_values(headers, now):
    for decode in (anthropic_limits, openai_limits):
        _numbers_sane(decode(headers, now=now))
    _numbers_sane(google_limits(headers, b"", now=now))
    as_bytes = {k.encode(): v.encode("utf-8", "surrogatepass") for k, v in headers.items()}
    _numbers_sane(openai_limits(as_bytes, now=now))


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)
DETAIL = st.fixed_dictionaries(
    {"@type": st.sampled_from(["type.googleapis.com/google.rpc.RetryInfo", "type.googleapis.com/google.rpc.QuotaFailure", "x"])},
    optional={
        "retryDelay": st.one_of(NUMBERISH, JSONISH),
        "violations": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "quotaMetric": st.one_of(st.sampled_from(["x/requests", "x/input_token_count", "x/output_token", "tokens"]), JSONISH),
                    "quotaId": st.one_of(st.sampled_from(["PerMinute", "PerDay"]), JSONISH),
                    "quotaValue": st.one_of(NUMBERISH, JSONISH),
                },
            )
            | JSONISH,
            max_size=4,
        )
        | JSONISH,
    },
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.lists(DETAIL | JSONISH, max_size=5), JSONISH), st.booleans())
def test_hostile_gemini_bodies(details, wrap):
    body: object = {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "details": details}}
    if wrap:
        body = [body]
    _numbers_sane(google_limits({}, json.dumps(body).encode(), now=NOW))


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_hostile_gemini_bytes(body):
    _numbers_sane(google_limits({}, body, now=NOW))
