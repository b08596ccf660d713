"""The async client, on anyio: the same methods as ikigai.Client, awaited,
under trio or asyncio.

    async with ikigai.connect_async() as c:
        turn = await c.prompt(agent, "hello")
        async for ev in turn:
            ...
        print((await turn.wait())["reply"])

Requests from several tasks share the one connection; each subscription has
its own inbox, so one slow reader never holds up the answers of the others.
"""

from __future__ import annotations

import contextlib

import anyio

from ikigai._aconn import AsyncConnection, open_stream
from ikigai._amethods import AsyncMethods
from ikigai._astream import AsyncSubscription, AsyncTurn
from ikigai._conn import default_socket

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import AsyncIterator

__all__ = ["AsyncClient", "AsyncSubscription", "AsyncTurn", "connect_async"]


class AsyncClient(AsyncConnection, AsyncMethods):
    """One connection to the daemon, shared by any number of tasks: every
    control method as a typed, awaited call, plus ``call(method, params)``."""

    @classmethod
    @contextlib.asynccontextmanager
    async def connect(
        cls, socket: str | None = None, *, autostart: bool = True
    ) -> AsyncIterator[AsyncClient]:
        """``async with AsyncClient.connect() as c``: connected for the block
        (autostart as Client.connect); closed at its end."""
        path = default_socket(socket)
        stream = await open_stream(path, autostart=autostart)
        client = cls(stream, path)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.read_loop)
                try:
                    yield client
                finally:
                    tg.cancel_scope.cancel()
                    with anyio.CancelScope(shield=True):
                        await client.aclose()
        except BaseExceptionGroup as group:
            # the reader never raises: what the group holds is the block's own
            # error, which the caller's ``except`` must see as it was raised
            if len(group.exceptions) == 1:
                raise group.exceptions[0] from None
            raise


def connect_async(
    socket: str | None = None, *, autostart: bool = True
) -> contextlib.AbstractAsyncContextManager[AsyncClient]:
    """``async with ikigai.connect_async() as c``: see AsyncClient.connect."""
    return AsyncClient.connect(socket, autostart=autostart)
