"""providers.h1.StreamClient against real loopback servers that send exactly scripted bytes."""

from __future__ import annotations

import gzip
import socket

import pytest
import trio

from protocol.version import __version__
from providers.h1 import USER_AGENT, StreamClient, TransportError
from tests.providers.h1.rawserver import RawConn, chunk, chunked_head, keep_alive, raw_server

LIMIT = 10


async def fetch(client: StreamClient, url: str, body: bytes = b"{}", **kw: object) -> tuple[int, bytes]:
    headers = kw.pop("headers", {"content-type": "application/json"})
    with trio.fail_after(LIMIT):
        async with client.stream("POST", url, headers, body, **kw) as resp:  # type: ignore[arg-type]
            return resp.status, b"".join([d async for d in resp])


async def test_request_bytes_and_user_agent():
    async with raw_server(keep_alive) as srv:
        client = StreamClient(trust_env=False)
        try:
            status, body = await fetch(client, srv.url + "/v1/x?alt=sse", b'{"a":1}', headers={"x-api-key": "k", "Content-Type": "application/json"})
        finally:
            await client.aclose()
    assert (status, body) == (200, b"data: 1\n\ndata: 2\n\n")
    [req] = srv.requests
    assert (req.method, req.target, req.body) == ("POST", "/v1/x?alt=sse", b'{"a":1}')
    assert req.headers["host"] == f"127.0.0.1:{srv.port}"
    assert req.headers["content-length"] == "7" and req.headers["accept-encoding"] == "identity"
    assert req.headers["user-agent"] == USER_AGENT == f"ikigai/{__version__}"
    assert req.headers["x-api-key"] == "k"


async def test_twenty_sequential_streams_use_one_connection():
    async with raw_server(keep_alive) as srv:
        client = StreamClient(trust_env=False)
        try:
            for _ in range(20):
                assert await fetch(client, srv.url + "/s") == (200, b"data: 1\n\ndata: 2\n\n")
        finally:
            await client.aclose()
    assert srv.accepted == 1 and len(srv.requests) == 20


async def test_fifty_concurrent_then_fifty_more_keep_all_fifty_alive():
    arrived = trio.Event()
    wave = [0]

    async def handler(conn: RawConn) -> None:
        while await conn.read_request() is not None:
            wave[0] += 1
            if wave[0] % 50 == 0:
                arrived.set()
            await arrived.wait()  # every one of the 50 is in use at once
            await conn.send(chunked_head() + chunk(b"data: x\n\n") + b"0\r\n\r\n")

    async with raw_server(handler) as srv:
        client = StreamClient(trust_env=False)
        try:
            for round_ in range(2):
                arrived = trio.Event()
                async with trio.open_nursery() as nursery:
                    for _ in range(50):
                        nursery.start_soon(fetch, client, srv.url + "/c")
                assert client.idle_connections() == 50, round_
        finally:
            await client.aclose()
    assert srv.accepted == 50 and len(srv.requests) == 100


async def test_an_idle_connection_the_server_closed_is_not_reused():
    async def close_after_one(conn: RawConn) -> None:
        if await conn.read_request() is not None:
            await conn.send(chunked_head() + chunk(b"data: 1\n\n") + b"0\r\n\r\n")
        # no Connection: close header: the client learns only from the EOF

    async with raw_server(close_after_one) as srv:
        client = StreamClient(trust_env=False)
        try:
            await fetch(client, srv.url)
            await trio.sleep(0.1)  # the server's FIN arrives while the connection is idle
            assert await fetch(client, srv.url) == (200, b"data: 1\n\n")
            assert client.retried == 0  # seen readable (EOF) before use: not written to
        finally:
            await client.aclose()
    assert srv.accepted == 2 and len(srv.requests) == 2  # nothing was sent on the dead one


async def test_idle_connections_expire_and_the_pool_keeps_at_most_its_cap():
    async with raw_server(keep_alive) as srv:
        client = StreamClient(trust_env=False, idle_expiry=0.2, max_idle_per_origin=2)
        try:
            await fetch(client, srv.url)
            await trio.sleep(0.3)
            await fetch(client, srv.url)  # the idle one expired: a new connection
            assert client.opened == 2 and client.idle_connections() == 1
            async with trio.open_nursery() as nursery:
                for _ in range(4):
                    nursery.start_soon(fetch, client, srv.url)
            assert client.idle_connections() == 2
        finally:
            await client.aclose()
        assert client.idle_connections() == 0


async def test_a_reused_connection_that_fails_before_any_byte_is_retried_once():
    async def drop_the_second(conn: RawConn) -> None:
        while await conn.read_request() is not None:
            if conn.served == 2:
                return  # read it, close without a byte (the idle-close race)
            await conn.send(chunked_head() + chunk(b"data: ok\n\n") + b"0\r\n\r\n")

    async with raw_server(drop_the_second) as srv:
        client = StreamClient(trust_env=False)
        try:
            assert await fetch(client, srv.url) == (200, b"data: ok\n\n")
            assert await fetch(client, srv.url) == (200, b"data: ok\n\n")
            assert client.retried == 1 and client.opened == 2
        finally:
            await client.aclose()
    assert srv.accepted == 2 and len(srv.requests) == 3


async def test_a_new_connection_closed_before_the_answer_is_not_retried():
    async def drop(conn: RawConn) -> None:
        await conn.read_request()

    async with raw_server(drop) as srv:
        client = StreamClient(trust_env=False)
        try:
            with pytest.raises(TransportError) as failure:
                await fetch(client, srv.url)
        finally:
            await client.aclose()
    assert failure.value.kind == "closed" and srv.accepted == 1


async def test_leaving_a_stream_early_closes_its_connection():
    seen_close = trio.Event()

    async def slow(conn: RawConn) -> None:
        if conn.index == 0:
            await conn.read_request()
            await conn.send(chunked_head() + chunk(b"data: 1\n\n"))
            await conn.wait_closed()
            seen_close.set()
            return
        await keep_alive(conn)

    async with raw_server(slow) as srv:
        client = StreamClient(trust_env=False)
        try:
            with trio.fail_after(LIMIT):
                async with client.stream("POST", srv.url, {}, b"{}") as resp:
                    async for data in resp:
                        assert data == b"data: 1\n\n"
                        break
                await seen_close.wait()
            assert client.idle_connections() == 0
            await fetch(client, srv.url)
        finally:
            await client.aclose()
    assert srv.accepted == 2


async def test_a_cancelled_stream_closes_its_connection():
    seen_close = trio.Event()

    async def slow(conn: RawConn) -> None:
        await conn.read_request()
        await conn.send(chunked_head() + chunk(b"data: 1\n\n"))
        await conn.wait_closed()
        seen_close.set()

    async with raw_server(slow) as srv:
        client = StreamClient(trust_env=False)
        try:
            with trio.move_on_after(0.3) as scope:
                async with client.stream("POST", srv.url, {}, b"{}") as resp:
                    async for _ in resp:
                        pass
            assert scope.cancelled_caught
            with trio.fail_after(LIMIT):
                await seen_close.wait()
            assert client.idle_connections() == 0
        finally:
            await client.aclose()


async def test_one_item_per_read_joins_the_chunks_that_read_completed():
    async def three_in_one(conn: RawConn) -> None:
        await conn.read_request()
        await conn.send(chunked_head() + chunk(b"a") + chunk(b"b") + chunk(b"c"))
        await trio.sleep(0.1)
        await conn.send(chunk(b"d") + b"0\r\n\r\n")

    async with raw_server(three_in_one) as srv:
        client = StreamClient(trust_env=False)
        try:
            with trio.fail_after(LIMIT):
                async with client.stream("POST", srv.url, {}, b"{}") as resp:
                    items = [d async for d in resp]
        finally:
            await client.aclose()
    assert items == [b"abc", b"d"]


@pytest.mark.parametrize("kind", ["length", "close", "gzip", "interim"])
async def test_content_length_read_to_close_gzip_and_1xx(kind: str):
    payload = b"data: hello\n\n" * 50

    async def answer(conn: RawConn) -> None:
        while await conn.read_request() is not None:
            if kind == "length":
                await conn.send(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(payload) + payload)
            elif kind == "close":
                await conn.send(b"HTTP/1.1 200 OK\r\n\r\n" + payload[:100])
                await trio.sleep(0.05)
                await conn.send(payload[100:])
                return
            elif kind == "gzip":
                packed = gzip.compress(payload)
                head = b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n"
                await conn.send(head + chunk(packed[:30]) + chunk(packed[30:]) + b"0\r\n\r\n")
            else:
                await conn.send(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n")
                await conn.send(chunked_head() + chunk(payload) + b"0\r\n\r\n")

    async with raw_server(answer) as srv:
        client = StreamClient(trust_env=False)
        try:
            assert await fetch(client, srv.url) == (200, payload)
            assert await fetch(client, srv.url) == (200, payload)
        finally:
            await client.aclose()
    assert srv.accepted == (2 if kind == "close" else 1)


async def test_a_body_that_ends_early_is_a_closed_error():
    async def short(conn: RawConn) -> None:
        await conn.read_request()
        await conn.send(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this")

    async with raw_server(short) as srv:
        client = StreamClient(trust_env=False)
        try:
            with pytest.raises(TransportError) as failure:
                await fetch(client, srv.url)
        finally:
            await client.aclose()
    assert failure.value.kind == "closed" and "91 more bytes" in failure.value.message


@pytest.mark.parametrize(
    "garbage",
    [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", b"SMTP ready\r\n\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\n"],
)
async def test_malformed_http_is_a_protocol_error(garbage: bytes):
    async def bad(conn: RawConn) -> None:
        await conn.read_request()
        await conn.send(garbage)
        await conn.wait_closed()

    async with raw_server(bad) as srv:
        client = StreamClient(trust_env=False)
        try:
            with pytest.raises(TransportError) as failure:
                await fetch(client, srv.url)
        finally:
            await client.aclose()
    assert failure.value.kind == "protocol"


async def test_a_307_to_the_same_origin_is_followed_with_method_and_body():
    async def moved(conn: RawConn) -> None:
        while (req := await conn.read_request()) is not None:
            if req.target == "/old":
                await conn.send(b"HTTP/1.1 307 Temporary Redirect\r\nLocation: /new?x=1\r\nContent-Length: 5\r\n\r\nmoved")
            else:
                await conn.send(chunked_head() + chunk(b"data: here\n\n") + b"0\r\n\r\n")

    async with raw_server(moved) as srv:
        client = StreamClient(trust_env=False)
        try:
            assert await fetch(client, srv.url + "/old", b'{"q":2}') == (200, b"data: here\n\n")
        finally:
            await client.aclose()
    assert [(r.method, r.target, r.body) for r in srv.requests] == [("POST", "/old", b'{"q":2}'), ("POST", "/new?x=1", b'{"q":2}')]
    assert srv.accepted == 1  # the 307's body was read: its connection carried the retry


@pytest.mark.parametrize("status, location", [(302, "/elsewhere"), (307, "http://127.0.0.2:9/v1"), (308, "https://127.0.0.1/x")])
async def test_other_redirects_are_returned_not_followed(status: int, location: str):
    async def moved(conn: RawConn) -> None:
        while await conn.read_request() is not None:
            await conn.send(f"HTTP/1.1 {status} Moved\r\nLocation: {location}\r\nContent-Length: 0\r\n\r\n".encode())

    async with raw_server(moved) as srv:
        client = StreamClient(trust_env=False)
        try:
            async with client.stream("POST", srv.url + "/a", {}, b"{}") as resp:
                assert (resp.status, resp.headers["location"]) == (status, location)
        finally:
            await client.aclose()
    assert len(srv.requests) == 1


async def test_a_redirect_loop_stops_after_three():
    async def loop(conn: RawConn) -> None:
        while await conn.read_request() is not None:
            await conn.send(b"HTTP/1.1 308 Permanent Redirect\r\nLocation: /again\r\nContent-Length: 0\r\n\r\n")

    async with raw_server(loop) as srv:
        client = StreamClient(trust_env=False)
        try:
            assert (await fetch(client, srv.url))[0] == 308
        finally:
            await client.aclose()
    assert len(srv.requests) == 4


@pytest.mark.parametrize("name, value", [("x-api-key", "sk-secret\r\nX-Evil: 1"), ("Authorization", "Bearer sk-secret\n"), ("x-k", "sk-secret\0"), ("bad name", "v"), ("x\r\ny", "v")])
async def test_header_injection_is_refused_before_connecting(name: str, value: str):
    async with raw_server(keep_alive) as srv:
        client = StreamClient(trust_env=False)
        try:
            with pytest.raises(TransportError) as failure:
                await fetch(client, srv.url, headers={name: value})
        finally:
            await client.aclose()
    assert failure.value.kind == "refused" and "sk-secret" not in str(failure.value)
    assert srv.accepted == 0


async def test_the_read_timeout_is_reset_by_progress_and_fires_on_silence():
    async def trickle(conn: RawConn) -> None:
        await conn.read_request()
        await conn.send(chunked_head())
        for byte in b"abcdef":
            await trio.sleep(0.3)
            await conn.send(chunk(bytes([byte])))
        if conn.index == 0:
            await conn.send(b"0\r\n\r\n")
        else:
            await trio.sleep(0.8)  # silence past the timeout
            await conn.send(b"0\r\n\r\n")

    async with raw_server(trickle) as srv:
        client = StreamClient(trust_env=False)
        try:
            start = trio.current_time()
            assert await fetch(client, srv.url, read_timeout=0.5) == (200, b"abcdef")
            assert trio.current_time() - start > 1.7
            got = []
            with pytest.raises(TransportError) as failure, trio.fail_after(LIMIT):
                async with client.stream("POST", srv.url, {}, b"{}", read_timeout=0.5) as resp:
                    async for data in resp:
                        got.append((data, trio.current_time()))
            silence = trio.current_time() - got[-1][1]
        finally:
            await client.aclose()
    assert failure.value.kind == "timeout_read" and b"".join(d for d, _ in got) == b"abcdef"
    assert 0.45 <= silence < 0.7, silence  # within 10% of 0.5 (plus scheduling)


async def test_a_server_that_never_answers_is_a_read_timeout():
    async def mute(conn: RawConn) -> None:
        await conn.read_request()
        await conn.wait_closed()

    async with raw_server(mute) as srv:
        client = StreamClient(trust_env=False)
        try:
            with pytest.raises(TransportError) as failure:
                await fetch(client, srv.url, read_timeout=0.3)
        finally:
            await client.aclose()
    assert failure.value.kind == "timeout_read"


async def test_after_a_timeout_the_body_of_the_block_is_cancelled_not_the_caller():
    async def stall(conn: RawConn) -> None:
        await conn.read_request()
        await conn.send(chunked_head() + chunk(b"x"))
        await conn.wait_closed()

    async with raw_server(stall) as srv:
        client = StreamClient(trust_env=False)
        reached = False
        try:
            with trio.fail_after(LIMIT):
                async with client.stream("POST", srv.url, {}, b"{}", read_timeout=0.2) as resp:
                    try:
                        async for _ in resp:
                            pass
                    except TransportError as exc:
                        assert exc.kind == "timeout_read"
                    await trio.sleep(5)  # cancelled by the expired deadline, absorbed at the exit
                reached = True
        finally:
            await client.aclose()
    assert reached


async def test_connect_refused_and_unresolvable_are_connect_errors():
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    client = StreamClient(trust_env=False)
    try:
        with pytest.raises(TransportError) as refused:
            await fetch(client, f"http://127.0.0.1:{port}/x")
        with pytest.raises(TransportError) as nodns:
            await fetch(client, "http://no-such-host.invalid/x", connect_timeout=5)
    finally:
        await client.aclose()
    assert refused.value.kind == "connect" and nodns.value.kind == "connect"


async def test_a_socks_proxy_is_a_clear_connect_error(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ALL_PROXY", "socks5://user:pw-secret@127.0.0.1:1080")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    client = StreamClient()
    try:
        with pytest.raises(TransportError) as failure:
            await fetch(client, "http://example.invalid/x")
    finally:
        await client.aclose()
    assert failure.value.kind == "connect" and "not supported" in str(failure.value)
    assert "pw-secret" not in str(failure.value)
