"""A small trio JSON-RPC client for tests: requests matched to answers by id,
notifications collected in order."""

from __future__ import annotations

import itertools
import json
from typing import Any

import trio


class RpcFailure(Exception):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.code = error.get("code")
        self.error = error


class Client:
    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self._ids = itertools.count(1)
        self._waiting: dict[int, trio.MemorySendChannel] = {}
        self.notes_send, self.notes = trio.open_memory_channel[dict](100_000)
        self.unmatched: list[dict] = []
        self.closed = trio.Event()

    async def _reader(self) -> None:
        buf = b""
        try:
            while True:
                data = await self.stream.receive_some(1 << 16)
                if not data:
                    return
                buf += data
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    msg = json.loads(line)
                    rid = msg.get("id")
                    if rid in self._waiting:
                        self._waiting.pop(rid).send_nowait(msg)
                    elif "method" in msg:
                        self.notes_send.send_nowait(msg)
                    else:
                        self.unmatched.append(msg)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return
        finally:
            self.closed.set()
            self.notes_send.close()

    async def call(self, method: str, **params: Any) -> Any:
        rid = next(self._ids)
        send, recv = trio.open_memory_channel[dict](1)
        self._waiting[rid] = send
        msg = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        await self.stream.send_all(json.dumps(msg).encode() + b"\n")
        answer = await recv.receive()
        if "error" in answer:
            raise RpcFailure(answer["error"])
        return answer["result"]

    async def send_raw(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def events_until(self, predicate, limit: float = 15) -> list[dict]:
        """agent.event params until one satisfies ``predicate`` (included)."""
        got = []
        with trio.fail_after(limit):
            async for note in self.notes:
                if note["method"] != "agent.event":
                    continue
                got.append(note["params"])
                if predicate(note["params"]):
                    return got
        raise AssertionError(f"the stream ended before the expected event; got {got[-3:]}")


async def connect(nursery: trio.Nursery, path: str) -> Client:
    stream = await trio.open_unix_socket(path)
    client = Client(stream)
    nursery.start_soon(client._reader)
    return client


def turn_ended(turn: str):
    return lambda ev: ev["turn"] == turn and ev["event"]["type"] == "turn_ended"
