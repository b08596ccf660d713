"""Rate-limit facts reach the caller, over real loopback HTTP against the fake
provider, for each wire API: ``on_limits`` of stream / complete / count_tokens,
and ``ProviderError.rate_limits`` on the errors of that answer (a 429, a 529,
an error inside a 200 stream). The events themselves do not change.
"""

from __future__ import annotations

import json

import pytest
import trio

from providers.accumulate import collect
from providers.http import HttpProvider
from providers.ratelimits import Allowance, RateLimits
from providers.registry import make_provider
from providers.settings import settings_for
from providers.types import (
    DoneEvent,
    ErrorEvent,
    Message,
    ProviderFailure,
    Request,
    StreamEvent,
    TextBlock,
)
from tests.fakes.script import HttpError, RawStream, Reply
from tests.fakes.server import FakeProvider
from tests.fakes.wire.anthropic import error_event

# api -> (provider, model, path under the fake's base url, env of its key)
APIS = {
    "messages": ("anthropic", "claude-sonnet-4-5", "", {"ANTHROPIC_API_KEY": "sk-ant-limits-0123456789"}),
    "chat": ("openai", "gpt-4o", "/v1", {"OPENAI_API_KEY": "sk-limits-0123456789abcdef"}),
    "responses": ("openai", "gpt-5", "/v1", {"OPENAI_API_KEY": "sk-limits-0123456789abcdef"}),
    "generate_content": ("google", "gemini-2.5-flash", "/v1beta", {"GEMINI_API_KEY": "AIzaLIMITS-0123456789"}),
}

# what each API sends on a success, and what it decodes to (resets as deltas,
# so no date: the decoders' own tests cover dates)
ANTHROPIC_OK = {
    "anthropic-ratelimit-requests-limit": "50",
    "anthropic-ratelimit-requests-remaining": "49",
    "anthropic-ratelimit-input-tokens-limit": "40000",
    "anthropic-ratelimit-input-tokens-remaining": "38000",
    "anthropic-ratelimit-output-tokens-limit": "8000",
    "anthropic-ratelimit-output-tokens-remaining": "7990",
}
OPENAI_OK = {
    "x-ratelimit-limit-requests": "60",
    "x-ratelimit-remaining-requests": "59",
    "x-ratelimit-reset-requests": "1s",
    "x-ratelimit-limit-tokens": "150000",
    "x-ratelimit-remaining-tokens": "149984",
    "x-ratelimit-reset-tokens": "6m0s",
}
SENT = {"messages": ANTHROPIC_OK, "chat": OPENAI_OK, "responses": OPENAI_OK}
DECODED = {
    "messages": RateLimits(
        requests=Allowance(limit=50, remaining=49),
        input_tokens=Allowance(limit=40000, remaining=38000),
        output_tokens=Allowance(limit=8000, remaining=7990),
    ),
    "chat": RateLimits(
        requests=Allowance(limit=60, remaining=59, reset_after=1.0),
        tokens=Allowance(limit=150000, remaining=149984, reset_after=360.0),
    ),
}
DECODED["responses"] = DECODED["chat"]


def provider(fake: FakeProvider, api: str) -> HttpProvider:
    name, _, path, env = APIS[api]
    settings = settings_for(name, env=env, base_url=fake.base_url + path)  # type: ignore[arg-type]
    return make_provider(settings, api=api)  # type: ignore[arg-type]


def ask(api: str) -> Request:
    return Request(model=APIS[api][1], messages=[Message(role="user", content=[TextBlock(text="hi")])])


async def stream(prov: HttpProvider, request: Request) -> tuple[list[StreamEvent], list[RateLimits], int]:
    """The events, the limits handed to on_limits, and how many were handed before the first event."""
    seen: list[RateLimits] = []
    events: list[StreamEvent] = []
    with trio.fail_after(10):
        async with prov.stream(request, on_limits=seen.append) as it:
            before = len(seen)
            events = [e async for e in it]
    return events, seen, before


@pytest.mark.parametrize("api", ["messages", "chat", "responses"])
async def test_stream_limits_reach_the_caller(fake_provider, api):
    fake_provider.push(Reply(text="hello there", headers=SENT[api]), Reply(text="hello there"))
    prov = provider(fake_provider, api)
    try:
        events, seen, before = await stream(prov, ask(api))
        plain, none_seen, _ = await stream(prov, ask(api))
    finally:
        await prov.aclose()
    assert seen == [DECODED[api]]
    assert before == 1  # known as soon as the head is: before any event
    assert none_seen == []  # an answer without rate headers hands nothing
    assert isinstance(events[-1], DoneEvent)
    # the event stream is the same with or without them (but for the ids the fake makes up)
    assert [type(e) for e in events] == [type(e) for e in plain]
    got, want = collect(events), collect(plain)
    assert (got.blocks, got.usage, got.finish_reason) == (want.blocks, want.usage, want.finish_reason)


async def test_gemini_success_has_no_limits(fake_provider):
    fake_provider.push(Reply(text="hello"))
    prov = provider(fake_provider, "generate_content")
    try:
        events, seen, _ = await stream(prov, ask("generate_content"))
    finally:
        await prov.aclose()
    assert isinstance(events[-1], DoneEvent)
    assert seen == []


@pytest.mark.parametrize("api", ["messages", "chat", "responses"])
async def test_429_retry_after_rides_on_the_error(fake_provider, api):
    headers = {**SENT[api], "retry-after": "7"}
    if api == "messages":
        headers["anthropic-ratelimit-requests-remaining"] = "0"
    else:
        headers["x-ratelimit-remaining-requests"] = "0"
    fake_provider.push(Reply(fault=HttpError(429, "rate limited", headers=headers)))
    prov = provider(fake_provider, api)
    try:
        events, seen, before = await stream(prov, ask(api))
    finally:
        await prov.aclose()
    [event] = events
    assert isinstance(event, ErrorEvent)
    error = event.error
    assert (error.category, error.http_status, error.retry_after) == ("rate_limit", 429, 7.0)
    limits = error.rate_limits
    assert limits is not None and limits.retry_after == 7.0
    assert limits.requests is not None and limits.requests.remaining == 0
    assert seen == [limits]  # on_limits got the same facts
    assert before == 0  # an error's facts come with its body, not at the head


async def test_anthropic_529_and_error_inside_a_stream(fake_provider):
    fake_provider.push(
        Reply(fault=HttpError(529, "Overloaded", headers={"retry-after": "2"})),
        Reply(fault=RawStream(events=[error_event("overloaded_error", "Overloaded")], headers=ANTHROPIC_OK)),
    )
    prov = provider(fake_provider, "messages")
    try:
        first, seen_first, _ = await stream(prov, ask("messages"))
        second, seen_second, _ = await stream(prov, ask("messages"))
    finally:
        await prov.aclose()
    [e1] = first
    assert isinstance(e1, ErrorEvent) and e1.error.category == "overloaded"
    assert e1.error.rate_limits == RateLimits(retry_after=2.0) and seen_first == [e1.error.rate_limits]
    # a 200 whose stream then fails: the error carries the facts of its head
    e2 = second[-1]
    assert isinstance(e2, ErrorEvent) and e2.error.category == "overloaded"
    assert e2.error.rate_limits == DECODED["messages"] and seen_second == [DECODED["messages"]]


async def test_gemini_429_retry_info(fake_provider):
    # the body Google sends (ai.google.dev rate limits): no header, the facts in details
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
                            "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                            "quotaValue": "10",
                        }
                    ],
                },
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1.5s"},
            ],
        }
    }
    fake_provider.push(Reply(fault=HttpError(429, body=body)), Reply(fault=HttpError(429, body=json.dumps([body]).encode())))
    prov = provider(fake_provider, "generate_content")
    expected = RateLimits(requests=Allowance(limit=10, remaining=0, reset_after=1.5), retry_after=1.5)
    try:
        events, seen, _ = await stream(prov, ask("generate_content"))
        with pytest.raises(ProviderFailure) as failure:
            await prov.complete(ask("generate_content"))
    finally:
        await prov.aclose()
    [event] = events
    assert isinstance(event, ErrorEvent)
    assert (event.error.category, event.error.retry_after) == ("rate_limit", 1.5)
    assert event.error.rate_limits == expected and seen == [expected]
    assert failure.value.error.rate_limits == expected


@pytest.mark.parametrize("api", ["messages", "chat", "responses"])
async def test_complete_hands_limits_and_429_carries_them(fake_provider, api):
    fake_provider.push(
        Reply(text="whole", stream=False, headers=SENT[api]),
        Reply(fault=HttpError(429, "slow down", headers={**SENT[api], "retry-after-ms": "1500"})),
    )
    prov = provider(fake_provider, api)
    seen: list[RateLimits] = []
    try:
        with trio.fail_after(10):
            response = await prov.complete(ask(api), on_limits=seen.append)
            with pytest.raises(ProviderFailure) as failure:
                await prov.complete(ask(api), on_limits=seen.append)
    finally:
        await prov.aclose()
    assert response.blocks
    limits = failure.value.error.rate_limits
    assert limits is not None and limits.retry_after == 1.5
    assert seen == [DECODED[api], limits]


async def test_count_tokens_hands_limits(fake_provider):
    fake_provider.push(Reply(headers=ANTHROPIC_OK))
    prov = provider(fake_provider, "messages")
    seen: list[RateLimits] = []
    try:
        with trio.fail_after(10):
            count = await prov.count_tokens(ask("messages"), on_limits=seen.append)
    finally:
        await prov.aclose()
    assert fake_provider.requests[-1].path.endswith("/count_tokens")
    assert count > 0
    assert seen == [DECODED["messages"]]


async def test_errors_encode_with_their_limits(fake_provider):
    """An ErrorEvent is shipped to subscribers as JSON: its limits go along, and back."""
    import msgspec

    fake_provider.push(Reply(fault=HttpError(429, "x", headers={"retry-after": "3"})))
    prov = provider(fake_provider, "chat")
    try:
        events, _, _ = await stream(prov, ask("chat"))
    finally:
        await prov.aclose()
    [event] = events
    raw = msgspec.json.encode(event)
    assert json.loads(raw)["error"]["rate_limits"] == {"retry_after": 3.0}
    assert msgspec.json.decode(raw, type=ErrorEvent) == event
