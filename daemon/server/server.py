"""The listening control socket: accepts connections from the daemon's own
user only (SO_PEERCRED) and gives each its Connection in its own task."""

from __future__ import annotations

import os
import socket
import struct

import structlog
import trio

import protocol as p
from daemon.server.connection import Connection, Handler
from daemon.server.forwarding import Forwarder
from protocol.params import PARAMS

log = structlog.get_logger("ikigai.control")

__all__ = ["ControlServer", "peer_uid"]


def peer_uid(sock: socket.socket) -> int | None:
    try:
        data = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except OSError:
        return None
    _pid, uid, _gid = struct.unpack("3i", data)
    return uid


class ControlServer:
    """The control socket: ``serve`` accepts connections (started with
    ``nursery.start``) and gives each a Connection; ``handlers`` maps each
    method to its coroutine (daemon/methods/api.py)."""

    def __init__(
        self,
        handlers: dict[str, Handler],
        *,
        max_line: int = p.MAX_LINE,
        client_buffer: int = 4096,
        check_uid: bool = True,
        flush_interval: float = 0.0,
    ) -> None:
        missing = set(PARAMS) - set(handlers)
        if missing:
            raise ValueError(f"no handler for {sorted(missing)}")
        self.handlers = handlers
        self.max_line = max_line
        self.client_buffer = client_buffer
        self.check_uid = check_uid
        self.flush_interval = flush_interval  # seconds; config stream.flush_interval
        self.connections: set[Connection] = set()
        # asks other daemons for the agents they run (daemon/cluster/peers.py);
        # None: every agent is this daemon's
        self.forwarder: Forwarder | None = None

    async def serve(
        self,
        sock: trio.socket.SocketType,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        listener = trio.SocketListener(sock)
        task_status.started()
        await trio.serve_listeners(self._handle, [listener])

    async def drain(self) -> None:
        """Wait (briefly: call inside a timeout) until every connection has
        written what it was sent, so a stopping daemon's last events arrive."""
        for _ in range(500):
            if all(c.queued == 0 for c in self.connections):
                break
            await trio.sleep(0.01)
        await trio.sleep(0.05)  # let the writers hand the last lines to the kernel

    async def _handle(self, stream: trio.SocketStream) -> None:
        if self.check_uid:
            uid = peer_uid(stream.socket)  # type: ignore[arg-type]
            if uid != os.getuid():
                log.warning("refused a connection from another user", peer_uid=uid)
                await stream.aclose()
                return
        await self.serve_connection(stream)

    async def serve_connection(self, stream: trio.SocketStream) -> None:
        """One client's connection, until it ends (one already vetted: the
        Unix socket's peer checked, or another daemon authenticated)."""
        conn = Connection(stream, self)
        self.connections.add(conn)
        try:
            await conn.run()
        except Exception:
            # the last guard: a bug in one connection closes it, never the daemon
            log.exception("connection failed; closing it", connection=conn.id)
        finally:
            self.connections.discard(conn)
            with trio.CancelScope(shield=True):
                await stream.aclose()
