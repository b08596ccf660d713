"""The fake provider server itself, driven over real loopback HTTP with httpx."""

from __future__ import annotations

import json

import httpx
import pytest
import trio

from providers.sse import SSEDecoder
from tests.fakes.script import Disconnect, HttpError, Malformed, NeverAnswer, Raw, Reply, Stall
from tests.fakes.server import FakeProvider, ThreadedFakeProvider


async def _stream(fake: FakeProvider, client: httpx.AsyncClient, **kw) -> tuple[list[bytes], list]:
    chunks: list[bytes] = []
    async with client.stream("POST", f"{fake.base_url}/raw/x", json={"stream": True}, **kw) as r:
        async for chunk in r.aiter_raw():
            chunks.append(chunk)
    dec = SSEDecoder()
    events = [json.loads(e.data) for c in chunks for e in dec.feed(c)]
    return chunks, events


async def test_streamed_reply_and_recorded_request(fake_provider: FakeProvider):
    fake_provider.push(Reply(text="hello world", pieces=3))
    async with httpx.AsyncClient() as client:
        _, events = await _stream(fake_provider, client, headers={"x-test": "1"})
    assert events == [{"text": "hell"}, {"text": "o wo"}, {"text": "rld"}, {"finish": "stop"}]
    [req] = fake_provider.requests
    assert (req.method, req.path, req.json, req.headers["x-test"]) == ("POST", "/raw/x", {"stream": True}, "1")


async def test_chunk_size_splits_writes_but_not_content(fake_provider: FakeProvider):
    fake_provider.push(Reply(text="abcdefghij", pieces=5, chunk_size=3, delay=0.001))
    async with httpx.AsyncClient() as client:
        chunks, events = await _stream(fake_provider, client)
    assert "".join(e.get("text", "") for e in events) == "abcdefghij"
    assert len(chunks) > 5  # each 3-byte write arrives on its own


async def test_non_streamed_reply_and_keep_alive(fake_provider: FakeProvider):
    fake_provider.push(Reply(text="one"), Reply(text="two"))
    async with httpx.AsyncClient() as client:
        a = await client.post(f"{fake_provider.base_url}/raw/x", json={})
        b = await client.post(f"{fake_provider.base_url}/raw/x", json={})
    assert (a.json()["text"], b.json()["text"]) == ("one", "two")
    assert fake_provider.connections == 1


async def test_http_error_uses_wire_body_and_headers(fake_provider: FakeProvider):
    fake_provider.push(Reply(fault=HttpError(429, "slow down", code="rate", headers={"retry-after": "7"})))
    async with httpx.AsyncClient() as client:
        r = await client.post(f"{fake_provider.base_url}/raw/x", json={})
    assert r.status_code == 429
    assert r.headers["retry-after"] == "7"
    assert r.json() == {"error": {"message": "slow down", "code": "rate"}}


async def test_raw_fault_sends_exact_body(fake_provider: FakeProvider):
    fake_provider.push(Reply(fault=Raw(b'{"error": "in a 200"}', status=200)))
    async with httpx.AsyncClient() as client:
        r = await client.post(f"{fake_provider.base_url}/anything", json={})
    assert (r.status_code, r.content) == (200, b'{"error": "in a 200"}')


async def test_disconnect_after_bytes(fake_provider: FakeProvider):
    fake_provider.push(Reply(text="x" * 100, pieces=10, fault=Disconnect(after_bytes=25)))
    got = bytearray()
    async with httpx.AsyncClient() as client:
        with pytest.raises(httpx.RemoteProtocolError):
            async with client.stream("POST", f"{fake_provider.base_url}/raw/x", json={"stream": True}) as r:
                async for chunk in r.aiter_raw():
                    got += chunk
    assert len(got) == 25


async def test_stall_trips_the_read_timeout(fake_provider: FakeProvider):
    fake_provider.push(Reply(text="abc", fault=Stall(after_bytes=5)))
    got = bytearray()
    with trio.fail_after(5):
        async with httpx.AsyncClient(timeout=httpx.Timeout(5, read=0.2)) as client:
            with pytest.raises(httpx.ReadTimeout):
                async with client.stream("POST", f"{fake_provider.base_url}/raw/x", json={"stream": True}) as r:
                    async for chunk in r.aiter_raw():
                        got += chunk
    assert len(got) == 5


async def test_finite_stall_then_rest(fake_provider: FakeProvider):
    fake_provider.push(Reply(text="abcdef", pieces=2, fault=Stall(after_bytes=4, seconds=0.05)))
    async with httpx.AsyncClient() as client:
        _, events = await _stream(fake_provider, client)
    assert events == [{"text": "abc"}, {"text": "def"}, {"finish": "stop"}]


async def test_never_answer(fake_provider: FakeProvider):
    fake_provider.push(Reply(fault=NeverAnswer()))
    async with httpx.AsyncClient(timeout=httpx.Timeout(5, read=0.2)) as client:
        with pytest.raises(httpx.ReadTimeout):
            await client.post(f"{fake_provider.base_url}/raw/x", json={})
    assert len(fake_provider.requests) == 1  # recorded even though never answered


async def test_malformed_event_inserted(fake_provider: FakeProvider):
    fake_provider.push(Reply(text="ab", pieces=2, fault=Malformed(garbage=b"data: {oops\n\n", before_event=1)))
    async with (
        httpx.AsyncClient() as client,
        client.stream("POST", f"{fake_provider.base_url}/raw/x", json={"stream": True}) as r,
    ):
        body = await r.aread()
    assert body == b'data: {"text": "a"}\n\ndata: {oops\n\ndata: {"text": "b"}\n\ndata: {"finish": "stop"}\n\n'


async def test_wait_for_requests(fake_provider: FakeProvider, nursery):
    fake_provider.default = Reply(text="x")

    async def later():
        await trio.sleep(0.01)
        async with httpx.AsyncClient() as client:
            await client.post(f"{fake_provider.base_url}/raw/x", json={})

    nursery.start_soon(later)
    with trio.fail_after(5):
        await fake_provider.wait_for_requests(1)
    assert len(fake_provider.requests) == 1


async def test_responder_default_and_missing_script(fake_provider: FakeProvider):
    fake_provider.responder = lambda req: Reply(text="routed") if req.path.endswith("/r") else None
    async with httpx.AsyncClient() as client:
        routed = await client.post(f"{fake_provider.base_url}/raw/r", json={})
        missing = await client.post(f"{fake_provider.base_url}/raw/x", json={})
        fake_provider.default = Reply(text="fallback")
        fallback = await client.post(f"{fake_provider.base_url}/raw/x", json={})
        unknown = await client.post(f"{fake_provider.base_url}/nowhere", json={})
    assert routed.json()["text"] == "routed"
    assert missing.status_code == 500 and "no scripted reply for request 1" in missing.text
    assert fallback.json()["text"] == "fallback"
    assert unknown.status_code == 404 and "speaks no API at POST /nowhere" in unknown.text


def test_threaded_server_for_sync_clients():
    with ThreadedFakeProvider(default=Reply(text="sync")) as fake:
        r = httpx.post(f"{fake.base_url}/raw/x", json={})
    assert r.json() == {"text": "sync", "finish": "stop"}
