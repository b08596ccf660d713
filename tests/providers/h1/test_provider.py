"""HttpProvider.stream over providers.h1: real provider streams from the fake, keep-alive,
redirects it refuses, and the transport failures' wording."""

from __future__ import annotations

import trio

from providers.h1 import StreamClient
from providers.registry import make_provider
from providers.settings import settings_for
from providers.types import DoneEvent, ErrorEvent, Message, Request, TextBlock, TextDelta
from tests.fakes.script import Reply
from tests.fakes.server import FakeProvider
from tests.providers.h1.rawserver import RawConn, raw_server

KEY = "sk-proj-Ab3Cd5Ef7Gh9Ij1Kl3Mn5Op7Qr9St1Uv3Wx5"


def ask() -> Request:
    return Request(model="gpt-4o", messages=[Message(role="user", content=[TextBlock(text="hi")])])


async def events(provider, request: Request) -> list:
    with trio.fail_after(10):
        async with provider.stream(request) as stream:
            return [e async for e in stream]


async def test_real_streams_from_the_fake_reuse_one_connection(fake_provider: FakeProvider):
    streamer = StreamClient(trust_env=False)
    provider = make_provider(settings_for("openai", env={"OPENAI_API_KEY": KEY}, base_url=fake_provider.base_url + "/v1"), api="chat", streamer=streamer)
    try:
        for i in range(20):
            fake_provider.push(Reply(text=f"answer number {i}", pieces=5))
            got = await events(provider, ask())
            assert "".join(e.text for e in got if isinstance(e, TextDelta)) == f"answer number {i}"
            assert isinstance(got[-1], DoneEvent)
    finally:
        await provider.aclose()
        await streamer.aclose()
    assert fake_provider.connections == 1 and len(fake_provider.requests) == 20


async def test_a_redirect_not_followed_is_a_clear_invalid_request_error():
    async def moved(conn: RawConn) -> None:
        while await conn.read_request() is not None:
            location = f"https://new.example/v1/chat/completions?key={KEY}"
            await conn.send(f"HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\n\r\n".encode())

    async with raw_server(moved) as srv:
        provider = make_provider(settings_for("openai", env={"OPENAI_API_KEY": KEY}, base_url=srv.url + "/v1"), api="chat")
        try:
            [event] = await events(provider, ask())
        finally:
            await provider.aclose()
    assert isinstance(event, ErrorEvent)
    assert event.error.category == "invalid_request" and not event.error.retryable
    assert event.error.message == (
        "HTTP 302 redirect to https://new.example/v1/chat/completions: ikigai does not follow it; "
        "set base_url to the new address"
    )


async def test_timeouts_keep_the_httpx_wording():
    async def mute(conn: RawConn) -> None:
        await conn.read_request()
        await conn.wait_closed()

    async with raw_server(mute) as srv:
        s = settings_for("openai", env={"OPENAI_API_KEY": KEY}, base_url=srv.url + "/v1", read_timeout=0.2)
        provider = make_provider(s, api="chat")
        try:
            [event] = await events(provider, ask())
        finally:
            await provider.aclose()
    assert isinstance(event, ErrorEvent) and event.error.category == "timeout"
    assert event.error.message == f"timed out waiting for data (POST {srv.url}/v1/chat/completions)"


async def test_a_header_the_client_refuses_is_an_invalid_request_never_retried(fake_provider: FakeProvider):
    settings = settings_for(
        "openai",
        env={"OPENAI_API_KEY": KEY},
        base_url=fake_provider.base_url + "/v1",
        extra_headers={"x-team": "blue\r\nX-Evil: 1"},
    )
    provider = make_provider(settings, api="chat")
    try:
        [event] = await events(provider, ask())
    finally:
        await provider.aclose()
    assert isinstance(event, ErrorEvent)
    assert event.error.category == "invalid_request" and not event.error.retryable
    assert "x-team" in event.error.message and "extra_headers" in event.error.message
    assert "blue" not in event.error.message
    assert fake_provider.requests == []
