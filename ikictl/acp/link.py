"""The bridge's one connection to the daemon, opened again after it breaks.

An editor stays open for days; the daemon restarts under it (an upgrade, a
crash, ``ikictl daemon restart``). A request after that connects again (and
autostarts a daemon, as every ikictl command does); the open sessions
subscribe again on their own, without autostart, so a daemon stopped on
purpose is not brought back by an idle editor."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ikigai.aio import AsyncClient

__all__ = ["DaemonLink"]


class DaemonLink:
    def __init__(self, socket: str | None, autostart: bool) -> None:
        self.socket = socket
        self.autostart = autostart
        self._current: AsyncClient | None = None
        self._broken: asyncio.Event | None = None  # set: the holder closes its connection
        self._holder: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self.connects = 0  # connections opened (1 + reconnections)

    async def client(self, *, autostart: bool | None = None) -> AsyncClient:
        """The connection, made (again) when there is none; raises the
        client's DaemonUnreachable when the daemon cannot be reached."""
        current = self._current
        if current is not None:
            return current
        async with self._lock:
            if self._current is not None:
                return self._current
            ready: asyncio.Future[AsyncClient] = asyncio.get_running_loop().create_future()
            broken = asyncio.Event()
            start = self.autostart if autostart is None else (autostart and self.autostart)
            self._holder = asyncio.create_task(self._hold(ready, broken, start))
            client = await ready
            self._current, self._broken = client, broken
            self.connects += 1
            return client

    async def _hold(
        self, ready: asyncio.Future[Any], broken: asyncio.Event, autostart: bool
    ) -> None:
        """Hold one connection open until it breaks or the bridge stops (the
        client's task group lives in this one task, from open to close)."""
        from ikigai.aio import AsyncClient

        try:
            async with AsyncClient.connect(self.socket, autostart=autostart) as client:
                ready.set_result(client)
                await broken.wait()
        except Exception as e:
            if not ready.done():
                ready.set_exception(e)

    def lost(self, client: AsyncClient) -> None:
        """``client``'s connection broke: the next ``client()`` opens another."""
        if client is self._current:
            self._current = None
            if self._broken is not None:
                self._broken.set()

    async def close(self) -> None:
        if self._broken is not None:
            self._broken.set()
        self._current = None
        if self._holder is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self._holder, 5)
