"""A network partition the test controls: a TCP listener on loopback that
relays each connection to a target (a Unix socket, such as PostgreSQL's), and
can stop relaying.

``block()`` is a partition: bytes already read are held and nothing more is
read or sent either way; new connections are accepted and held too. Neither
side sees a reset: each just stops hearing from the other, as when packets
are dropped. ``heal()`` lets everything held flow again.

    async with partition_to(pg_socket_path) as cut:
        url = f"postgresql+psycopg://postgres@127.0.0.1:{cut.port}/db"
        cut.block(); ...; cut.heal()
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio


class Partition:
    def __init__(self, target: str) -> None:
        self.target = target
        self.port = 0
        self.connections = 0
        self._open = trio.Event()
        self._open.set()

    @property
    def blocked(self) -> bool:
        return not self._open.is_set()

    def block(self) -> None:
        if self._open.is_set():
            self._open = trio.Event()

    def heal(self) -> None:
        self._open.set()

    async def _gate(self) -> None:
        while not self._open.is_set():
            await self._open.wait()

    async def _pump(self, src: trio.abc.Stream, dst: trio.abc.Stream) -> None:
        try:
            while True:
                await self._gate()
                data = await src.receive_some(1 << 16)
                await self._gate()
                if not data:
                    await dst.send_eof()  # type: ignore[attr-defined]
                    return
                await dst.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            return

    async def _relay(self, client: trio.SocketStream) -> None:
        self.connections += 1
        await self._gate()
        try:
            server = await trio.open_unix_socket(self.target)
        except OSError:
            await client.aclose()
            return
        async with client, server, trio.open_nursery() as nursery:
            nursery.start_soon(self._pump, client, server)
            await self._pump(server, client)
            nursery.cancel_scope.cancel()

    async def serve(self, *, task_status: trio.TaskStatus[Partition] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        task_status.started(self)
        await trio.serve_listeners(self._relay, listeners)


@asynccontextmanager
async def partition_to(target: str) -> AsyncIterator[Partition]:
    async with trio.open_nursery() as nursery:
        cut = await nursery.start(Partition(target).serve)
        try:
            yield cut
        finally:
            cut.heal()
            nursery.cancel_scope.cancel()
