"""The lean-relay floor: the least a daemon could do to relay a provider's
stream to a subscriber, run as its own process. Bench-only.

    .venv/bin/python tests/bench/lean_relay.py --socket PATH --base-url URL [--model M]

It listens on a Unix socket and speaks just enough of ikigaid's control
protocol (JSON-RPC 2.0 over NDJSON) for tests/bench/bench_e2e.py:

  daemon.status     answered {}
  agent.subscribe   {agent}: this connection gets that agent's events;
                    answered {subscription, next_seq}
  agent.prompt      {agent, text}: answered {turn, position: 0} at once; the
                    turn streams in its own task
  agent.unsubscribe {subscription}

Per prompt it does what the daemon's event path must do, once and directly:
  - takes a trio TCP connection to the provider from a keep-alive pool (or
    opens one), encodes the request with OUR Anthropic codec
    (``codec.encode``) and sends the request bytes;
  - for each read (``receive_some``): an incremental parse of the response
    head and of the chunked (or content-length) body, written here, minimal;
    OUR decoder (``codec.stream_decoder(...).feed(body)``) once per read;
  - each decoded event encoded once with msgspec into the notification line
    the daemon sends (``agent.event`` with params subscription, agent, turn,
    seq, event), and ONE send per read to each subscriber's Unix socket;
  - at the end of the body a ``turn_ended`` event (status completed, or error
    if the stream broke), in the same send as the last events.

What it does NOT do (the daemon does): no store, no actors or turn queue, no
event log or replay (``from_seq``), no lagged protocol (a slow subscriber
blocks its agent's stream here), no retries, timeouts, TLS, proxies or
redirects, no tool calls, no usage or cost accounting, no parameter checks
beyond what the harness sends. So it is strictly less work than the daemon
for the same I/O: a floor, not a competitor.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import msgspec
import trio

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from agents.events import TurnEnded  # noqa: E402
from providers.anthropic.codec import AnthropicCodec  # noqa: E402
from providers.settings import settings_for  # noqa: E402
from providers.types import ErrorEvent, Message, Request, TextBlock  # noqa: E402

_encode = msgspec.json.Encoder().encode
_decode_line = msgspec.json.Decoder().decode
_NOTE = b'{"jsonrpc":"2.0","method":"agent.event","params":'


class _Note(msgspec.Struct):
    subscription: int
    agent: str
    turn: str | None
    seq: int
    event: Any


class BadResponse(Exception):
    """The provider's answer is not an HTTP/1.1 response this relay reads."""


class Body:
    """An incremental HTTP/1.1 response reader: the head, then a chunked or
    content-length body. ``feed(read)`` returns the body bytes in that read."""

    __slots__ = ("_state", "buf", "done", "keep_alive", "left", "status")

    def __init__(self) -> None:
        self.buf = b""
        self.status = 0
        self.done = False
        self.keep_alive = True
        self.left = 0  # bytes left of the current chunk, or of a content-length body
        self._state = "head"  # head, size, data, crlf, trailer, length

    def feed(self, data: bytes) -> bytes:
        buf = self.buf + data if self.buf else data
        out: list[bytes] = []
        state = self._state
        while True:
            if state == "data":
                if len(buf) <= self.left:
                    out.append(buf)
                    self.left -= len(buf)
                    buf = b""
                    break
                out.append(buf[: self.left])
                buf = buf[self.left :]
                state = "crlf"
            elif state == "crlf":
                if len(buf) < 2:
                    break
                if buf[:2] != b"\r\n":
                    raise BadResponse("a chunk does not end with CRLF")
                buf = buf[2:]
                state = "size"
            elif state == "size":
                end = buf.find(b"\r\n")
                if end < 0:
                    if len(buf) > 1024:
                        raise BadResponse("a chunk size line over 1 KiB")
                    break
                try:
                    self.left = int(buf[:end].split(b";", 1)[0], 16)
                except ValueError:
                    raise BadResponse(f"a bad chunk size line {buf[:end][:40]!r}") from None
                buf = buf[end + 2 :]
                state = "data" if self.left else "trailer"
            elif state == "trailer":
                if buf.startswith(b"\r\n"):
                    buf = buf[2:]
                    self.done = True
                    break
                end = buf.find(b"\r\n\r\n")
                if end < 0:
                    break
                buf = buf[end + 4 :]
                self.done = True
                break
            elif state == "length":
                take = buf[: self.left]
                out.append(take)
                self.left -= len(take)
                buf = buf[len(take) :]
                if not self.left:
                    self.done = True
                break
            else:  # head
                end = buf.find(b"\r\n\r\n")
                if end < 0:
                    if len(buf) > 65536:
                        raise BadResponse("a response head over 64 KiB")
                    break
                state = self._head(buf[:end])
                buf = buf[end + 4 :]
                if state == "length" and not self.left:
                    self.done = True
                    break
        self._state = state
        self.buf = buf
        return b"".join(out) if len(out) != 1 else out[0]

    def _head(self, head: bytes) -> str:
        lines = head.split(b"\r\n")
        parts = lines[0].split(b" ", 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
            raise BadResponse(f"not an HTTP/1.x status line: {lines[0][:60]!r}")
        self.status = int(parts[1])
        chunked, length = False, None
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"transfer-encoding":
                chunked = b"chunked" in value.lower()
            elif name == b"content-length":
                length = int(value)
            elif name == b"connection":
                self.keep_alive = b"close" not in value.lower()
        if chunked:
            return "size"
        if length is None:
            raise BadResponse("a response with neither chunked encoding nor content-length")
        self.left = length
        return "length"


class Relay:
    def __init__(self, base_url: str, model: str) -> None:
        settings = settings_for(
            "anthropic", env={"ANTHROPIC_API_KEY": "sk-ant-bench"}, base_url=base_url
        )
        self.codec = AnthropicCodec(settings)
        self.model = model
        url = urlsplit(base_url)
        self.host = url.hostname or "127.0.0.1"
        self.port = url.port or 80
        self.idle: list[trio.SocketStream] = []  # keep-alive pool
        self.subscribers: dict[str, list[tuple[Client, int]]] = {}
        self.seq: dict[str, int] = {}
        self.turns = itertools.count(1)
        self.nursery: trio.Nursery | None = None

    async def serve(self, path: str) -> None:
        sock = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
        await sock.bind(path)
        sock.listen(4096)
        async with trio.open_nursery() as nursery:
            self.nursery = nursery
            await trio.serve_listeners(self._client, [trio.SocketListener(sock)])

    async def _client(self, stream: trio.SocketStream) -> None:
        client = Client(stream)
        buf = b""
        try:
            async for data in stream:
                buf += data
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    if line.strip():
                        await client.send(self._handle(client, line))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            client.closed = True
            for subs in self.subscribers.values():
                subs[:] = [(c, sid) for c, sid in subs if c is not client]

    def _handle(self, client: Client, line: bytes) -> bytes:
        try:
            msg = _decode_line(line)
            rid, method, params = msg.get("id"), msg["method"], msg.get("params") or {}
        except (msgspec.DecodeError, KeyError, AttributeError, TypeError):
            return b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}\n'
        try:
            result = self._method(client, method, params)
        except (KeyError, TypeError) as e:
            error = {"code": -32602, "message": f"invalid params: {e}"}
            return _encode({"jsonrpc": "2.0", "id": rid, "error": error}) + b"\n"
        if result is None:
            error = {"code": -32601, "message": f"method not found: {method}"}
            return _encode({"jsonrpc": "2.0", "id": rid, "error": error}) + b"\n"
        return _encode({"jsonrpc": "2.0", "id": rid, "result": result}) + b"\n"

    def _method(self, client: Client, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        if method == "daemon.status":
            return {}
        if method == "agent.subscribe":
            agent = str(params["agent"])
            sid = next(client.sids)
            self.subscribers.setdefault(agent, []).append((client, sid))
            return {"subscription": sid, "next_seq": self.seq.get(agent, 0) + 1}
        if method == "agent.unsubscribe":
            sid = int(params["subscription"])
            for subs in self.subscribers.values():
                subs[:] = [(c, s) for c, s in subs if not (c is client and s == sid)]
            return {"ok": True}
        if method == "agent.prompt":
            agent, text = str(params["agent"]), str(params["text"])
            turn = f"turn-{next(self.turns)}"
            assert self.nursery is not None
            self.nursery.start_soon(self._turn, agent, turn, text)
            return {"turn": turn, "position": 0}
        return None

    async def _turn(self, agent: str, turn: str, text: str) -> None:
        request = Request(
            model=self.model, messages=[Message(role="user", content=[TextBlock(text=text)])]
        )
        http = self.codec.encode(request, stream=True)
        url = urlsplit(http.url)
        head = [f"{http.method} {url.path} HTTP/1.1", f"host: {self.host}:{self.port}"]
        head += [f"{k}: {v}" for k, v in http.headers.items()]
        head.append(f"content-length: {len(http.body)}")
        wire = ("\r\n".join(head) + "\r\n\r\n").encode() + http.body
        decoder = self.codec.stream_decoder(request)
        body = Body()
        conn = self.idle.pop() if self.idle else await trio.open_tcp_stream(self.host, self.port)
        status = "completed"
        try:
            await conn.send_all(wire)
            while not body.done:
                data = await conn.receive_some(1 << 16)
                if not data:
                    raise BadResponse("the provider closed the connection mid-response")
                part = body.feed(data)
                if body.status != 200 and body.status:
                    raise BadResponse(f"HTTP {body.status}")
                events = decoder.feed(part) if part else []
                if body.done:
                    events += decoder.close()
                    if any(isinstance(e, ErrorEvent) for e in events):
                        status = "error"
                    events.append(TurnEnded(status=status))
                if events:
                    await self._publish(agent, turn, events)
        except (BadResponse, OSError, trio.BrokenResourceError) as e:
            print(f"lean relay: turn {turn} of {agent}: {e}", file=sys.stderr)
            await conn.aclose()
            await self._publish(agent, turn, [TurnEnded(status="error", message=str(e))])
            return
        if body.keep_alive:
            self.idle.append(conn)
        else:
            await conn.aclose()

    async def _publish(self, agent: str, turn: str, events: list[Any]) -> None:
        seq = self.seq.get(agent, 0)
        for client, sid in self.subscribers.get(agent, ()):
            n = seq
            lines = []
            for event in events:
                n += 1
                lines.append(_NOTE + _encode(_Note(sid, agent, turn, n, event)) + b"}\n")
            await client.send(b"".join(lines))
        self.seq[agent] = seq + len(events)


class Client:
    """A control connection: its stream, and a lock so answers and events
    sent from different tasks never interleave."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.lock = trio.StrictFIFOLock()
        self.sids = itertools.count(1)
        self.closed = False

    async def send(self, data: bytes) -> None:
        if self.closed:
            return
        async with self.lock:
            try:
                await self.stream.send_all(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self.closed = True


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--socket", required=True, help="the Unix socket to listen on")
    ap.add_argument("--base-url", required=True, help="the provider (plain http on loopback)")
    ap.add_argument("--model", default="claude-sonnet-4-5")
    args = ap.parse_args()
    if not args.base_url.startswith("http://"):
        print("lean relay: --base-url must be plain http:// (no TLS here)", file=sys.stderr)
        return 2
    Path(args.socket).unlink(missing_ok=True)
    with contextlib.suppress(KeyboardInterrupt):
        trio.run(Relay(args.base_url, args.model).serve, args.socket)
    return 0


if __name__ == "__main__":
    sys.exit(main())
