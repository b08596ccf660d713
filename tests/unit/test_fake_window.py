"""The fake provider's context windows (tests/fakes/window.py), over real
loopback HTTP with the real codecs: each wire counts with its own fake
tokenizer, refuses what does not fit with the API's own context-length error
(which our codecs must classify as context_length), reports its count as the
usage, and answers the count endpoints without taking a scripted reply."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
import trio

from providers.http import HttpProvider
from providers.registry import make_provider
from providers.settings import settings_for
from providers.tokens import estimate_request
from providers.types import DoneEvent, ErrorEvent, Message, ProviderFailure, Request, TextBlock
from tests.fakes.recorded import RecordedRequest
from tests.fakes.script import Reply
from tests.fakes.script import Usage as FakeUsage
from tests.fakes.server import FakeProvider, fake_provider
from tests.fakes.window import fake_tokens, requested_output

WINDOW = 5000
MODELS = {
    "anthropic": "claude-sonnet-4-5",
    "chat": "gpt-4o",
    "responses": "gpt-5",
    "google": "gemini-2.5-flash",
}


def _provider(fake: FakeProvider, kind: str) -> HttpProvider:
    if kind == "anthropic":
        s = settings_for("anthropic", env={"ANTHROPIC_API_KEY": "sk-ant-w"}, base_url=fake.base_url)
    elif kind == "google":
        s = settings_for("google", env={"GEMINI_API_KEY": "AIza-w"}, base_url=fake.base_url + "/v1beta")
    else:
        s = settings_for("openai", env={"OPENAI_API_KEY": "sk-w"}, base_url=fake.base_url + "/v1", api=kind)  # type: ignore[arg-type]
    return make_provider(s)


def ask(kind: str, text: str, max_output: int = 1000) -> Request:
    return Request(
        model=MODELS[kind],
        system=[TextBlock(text="You answer briefly.")],
        messages=[Message(role="user", content=[TextBlock(text=text)])],
        max_output_tokens=max_output,
    )


@pytest.fixture
async def windowed() -> AsyncIterator[FakeProvider]:
    async with fake_provider(windows={m: WINDOW for m in MODELS.values()}) as fake:
        yield fake


def _recorded(body: dict[str, object], target: str = "/v1/messages") -> RecordedRequest:
    return RecordedRequest(method="POST", target=target, headers={}, body=json.dumps(body).encode())


def test_fake_tokens_count_the_prompt_not_the_output_settings():
    prompt = {"messages": [{"role": "user", "content": "x" * 300}]}
    bare = fake_tokens(_recorded(prompt))
    dressed = fake_tokens(
        _recorded({**prompt, "model": "m", "max_tokens": 99999, "stream": True, "stream_options": {"include_usage": True}})
    )
    assert bare == dressed
    assert bare == -(-len(json.dumps(prompt, separators=(",", ":"))) // 3)
    # Gemini: the output limit lives in generationConfig, countTokens wraps the request
    gen = {"contents": [{"role": "user", "parts": [{"text": "y" * 200}]}], "generationConfig": {"maxOutputTokens": 50}}
    counted = {"generateContentRequest": {"model": "models/g", **{k: v for k, v in gen.items() if k != "generationConfig"}}}
    assert fake_tokens(_recorded(gen)) == fake_tokens(_recorded(counted))
    assert requested_output(_recorded(gen)) == 50
    for name in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
        assert requested_output(_recorded({name: 77})) == 77
    assert requested_output(_recorded(prompt)) == 0
    assert requested_output(_recorded({"max_tokens": True})) == 0


@pytest.mark.parametrize("kind", list(MODELS))
async def test_a_request_that_fits_is_answered_with_the_fake_count_as_usage(windowed: FakeProvider, kind: str):
    windowed.push(Reply(text="fine", usage=FakeUsage(input=12, output=3)))
    provider = _provider(windowed, kind)
    req = ask(kind, "what is the time?")
    try:
        with trio.fail_after(10):
            response = await provider.complete(req)
    finally:
        await provider.aclose()
    [recorded] = windowed.requests
    assert recorded.tokens == fake_tokens(recorded)
    assert recorded.tokens + requested_output(recorded) <= WINDOW
    assert response.usage.input_tokens == recorded.tokens != 12
    # a different tokenizer from ours: calibration has work to do
    assert recorded.tokens != estimate_request(req)


@pytest.mark.parametrize("kind", list(MODELS))
@pytest.mark.parametrize("size", ["prompt-alone", "prompt-and-output"])
async def test_too_big_gets_the_wires_context_length_error(windowed: FakeProvider, kind: str, size: str):
    # 20,000 characters are ~7,000 fake tokens: too long alone; 9,000 are ~3,000,
    # which fit but not with 4,000 of output on top
    text = "z" * (20_000 if size == "prompt-alone" else 9_000)
    windowed.push(Reply(text="never sent"))
    provider = _provider(windowed, kind)
    try:
        with trio.fail_after(10), pytest.raises(ProviderFailure) as info:
            await provider.complete(ask(kind, text, max_output=4000))
        # streaming: the same refusal arrives as the stream's error event
        with trio.fail_after(10):
            async with provider.stream(ask(kind, text, max_output=4000)) as events:
                streamed = [e async for e in events]
    finally:
        await provider.aclose()
    error = info.value.error
    assert error.category == "context_length", error
    assert error.http_status == 400
    assert not error.retryable
    assert isinstance(streamed[-1], ErrorEvent) and streamed[-1].error.category == "context_length"
    assert windowed.pending == 1  # a refused request takes no scripted reply
    assert all(r.tokens is not None and r.tokens + requested_output(r) > WINDOW for r in windowed.requests)


async def test_anthropic_words_the_two_refusals_as_the_api_does(windowed: FakeProvider):
    provider = _provider(windowed, "anthropic")
    messages = []
    try:
        for text in ("z" * 20_000, "z" * 9_000):
            with trio.fail_after(10), pytest.raises(ProviderFailure) as info:
                await provider.complete(ask("anthropic", text, max_output=4000))
            messages.append(info.value.error.message)
    finally:
        await provider.aclose()
    assert messages[0].startswith("prompt is too long: ")
    assert f"> {WINDOW} maximum" in messages[0]
    assert messages[1].startswith("input length and `max_tokens` exceed context limit: ")
    assert f"+ 4000 > {WINDOW}, decrease input length or `max_tokens`" in messages[1]


@pytest.mark.parametrize("kind", ["anthropic", "google"])
async def test_count_endpoints_answer_the_fake_count_without_a_reply(windowed: FakeProvider, kind: str):
    provider = _provider(windowed, kind)
    windowed.push(Reply(text="answer", usage=FakeUsage(input=1)))
    req = ask(kind, "how long am I? " * 20)
    try:
        with trio.fail_after(10):
            counted = await provider.count_tokens(req)
            assert windowed.pending == 1  # the count took no reply
            response = await provider.complete(req)
        # even a prompt too big for the window is counted, not refused
        with trio.fail_after(10):
            big = await provider.count_tokens(ask(kind, "z" * 20_000))
    finally:
        await provider.aclose()
    count_request, message_request, _ = windowed.requests
    assert counted == count_request.tokens == fake_tokens(count_request)
    # the count endpoint and the message request count the same prompt alike
    assert counted == message_request.tokens == response.usage.input_tokens
    assert big > WINDOW


async def test_streamed_usage_reports_the_fake_count(windowed: FakeProvider):
    windowed.push(Reply(text="streamed", usage=FakeUsage(input=5, output=2)))
    provider = _provider(windowed, "anthropic")
    try:
        with trio.fail_after(10):
            async with provider.stream(ask("anthropic", "stream me")) as events:
                done = [e async for e in events if isinstance(e, DoneEvent)]
    finally:
        await provider.aclose()
    [recorded] = windowed.requests
    assert done[0].usage.input_tokens == recorded.tokens == fake_tokens(recorded)


async def test_models_without_a_window_are_left_alone():
    async with fake_provider(windows={"some-other-model": 10}) as fake:
        fake.push(Reply(text="ok", usage=FakeUsage(input=12)), Reply(usage=FakeUsage(input=34)))
        provider = _provider(fake, "anthropic")
        try:
            with trio.fail_after(10):
                response = await provider.complete(ask("anthropic", "z" * 50_000))
                counted = await provider.count_tokens(ask("anthropic", "hi"))
        finally:
            await provider.aclose()
    assert response.usage.input_tokens == 12  # the script's figure, nothing counted
    assert counted == 34  # the count endpoint answers the scripted reply as before
    assert [r.tokens for r in fake.requests] == [None, None]
