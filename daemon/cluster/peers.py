"""Asking another daemon: the Forwarder of daemon/server/forwarding.py.

Daemons of one host reach each other on their control sockets, whose paths
they announce in their ``daemons`` rows: the same user's Unix socket, the
same trust (SO_PEERCRED) as any local client, and the same protocol. One
connection per peer carries every forwarded request, multiplexed by id; a
relayed subscription has a connection of its own, so its events never
wait behind an answer.

A daemon on another host is reached on the TCP port it announces
(``cluster.listen``), each connection authenticated both ways with the
shared ``cluster_secret`` first (daemon/cluster/tcp.py).
"""

from __future__ import annotations

import itertools
import json
import socket
import time
from typing import Any

import msgspec
import structlog
import trio

import protocol as p
from daemon.cluster.tcp import HANDSHAKE_S, NotAuthenticated, offer
from daemon.server.forwarding import FORWARDED
from store import DaemonRecord, Store, StoreError

log = structlog.get_logger("ikigai.cluster")

_MAX_LINE = 256 << 20  # an answer (a long history) may be large; a line past this is broken
_ROWS_TTL_S = 1.0  # how long the daemons' rows are trusted for an address


def _unavailable(daemon: str, why: str) -> p.RpcError:
    return p.RpcError(p.AGENT_UNAVAILABLE, f"daemon {daemon} {why}", {"daemon": daemon})


class _Lines:
    """Lines from a stream, each at most _MAX_LINE."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self._buf = bytearray()

    async def next(self) -> bytes | None:
        while True:
            at = self._buf.find(b"\n")
            if at >= 0:
                line = bytes(self._buf[: at + 1])
                del self._buf[: at + 1]
                return line
            if len(self._buf) > _MAX_LINE:
                raise trio.BrokenResourceError("a line from the peer is too long")
            data = await self.stream.receive_some(1 << 16)
            if not data:
                return None
            self._buf += data


def _request(rid: str, method: str, params: Any) -> bytes:
    return (
        json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()
        + b"\n"
    )


def _result(daemon: str, msg: Any) -> Any:
    if not isinstance(msg, dict):
        raise _unavailable(daemon, "answered something that is not JSON-RPC")
    error = msg.get("error")
    if isinstance(error, dict):
        raise p.RpcError(
            int(error.get("code", p.INTERNAL_ERROR)),
            str(error.get("message", "")),
            error.get("data"),
        )
    return msg.get("result")


class _Link:
    """The one connection to a peer for forwarded requests."""

    def __init__(self, daemon: str, stream: trio.SocketStream) -> None:
        self.daemon = daemon
        self.stream = stream
        self.lines = _Lines(stream)
        self.waiting: dict[str, list[Any]] = {}  # id -> [event, answer]
        self.send_lock = trio.Lock()
        self.broken = False
        self._ids = itertools.count(1)

    async def call(self, method: str, params: Any) -> Any:
        rid = f"{FORWARDED}{next(self._ids)}"
        slot: list[Any] = [trio.Event(), None]
        self.waiting[rid] = slot
        try:
            async with self.send_lock:
                await self.stream.send_all(_request(rid, method, params))
            await slot[0].wait()
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError):
            self.broken = True
            raise _unavailable(self.daemon, "stopped answering") from None
        finally:
            self.waiting.pop(rid, None)
        if slot[1] is None:
            raise _unavailable(self.daemon, "stopped answering before it answered")
        return _result(self.daemon, slot[1])

    async def read(self) -> None:
        try:
            while (line := await self.lines.next()) is not None:
                try:
                    msg = msgspec.json.decode(line)
                except msgspec.DecodeError:
                    continue
                slot = self.waiting.get(msg.get("id")) if isinstance(msg, dict) else None
                if slot is not None:
                    slot[1] = msg
                    slot[0].set()
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError) as e:
            log.warning("connection to a daemon broke", daemon=self.daemon, reason=str(e))
        finally:
            self.broken = True
            for slot in self.waiting.values():
                slot[0].set()  # answered None: it stopped answering
            with trio.CancelScope(shield=True):
                await self.stream.aclose()


class _Upstream:
    """A relayed subscription's own connection to the owner."""

    def __init__(
        self, stream: trio.SocketStream, up_sid: int, next_seq: int, lines: _Lines
    ) -> None:
        self.stream, self.up_sid, self.next_seq, self._lines = stream, up_sid, next_seq, lines

    async def receive_line(self) -> bytes | None:
        return await self._lines.next()

    async def aclose(self) -> None:
        await self.stream.aclose()


class Peers:
    """The other daemons of this database, as this one asks them."""

    def __init__(
        self, store: Store, me: str, host: str | None = None, secret: str | None = None
    ) -> None:
        self.store = store
        self.me = me
        self.host = host or socket.gethostname()  # as this daemon announces it
        self.secret = secret  # cluster_secret: for daemons of other hosts
        self._links: dict[str, _Link] = {}
        self._rows: dict[str, DaemonRecord] = {}
        self._rows_at = -_ROWS_TTL_S
        self._nursery: trio.Nursery | None = None

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            await trio.sleep_forever()

    async def row(self, daemon: str) -> DaemonRecord | None:
        """The daemon's row, read again at most every second."""
        if time.monotonic() - self._rows_at > _ROWS_TTL_S or daemon not in self._rows:
            try:
                rows = await trio.to_thread.run_sync(
                    lambda: self.store.daemons(include_gone=True)
                )
            except StoreError as e:
                raise _unavailable(daemon, f"cannot be looked up: {e}") from None
            self._rows = {d.id: d for d in rows}
            self._rows_at = time.monotonic()
        return self._rows.get(daemon)

    async def _connect(self, daemon: str) -> trio.SocketStream:
        row = await self.row(daemon)
        if row is None:
            raise _unavailable(daemon, "is not known to this database")
        if row.state not in ("up", "draining") or row.expired:
            raise _unavailable(daemon, f"is {'lost' if row.expired else row.state}")
        if row.host == self.host:
            try:
                return await trio.open_unix_socket(row.socket)
            except OSError as e:
                raise _unavailable(
                    daemon, f"does not answer on {row.socket}: {e.strerror}"
                ) from None
        if not row.address:
            raise _unavailable(
                daemon,
                f"runs on host {row.host} and listens on no TCP port for other hosts: "
                "set cluster.listen in its config.json, or ask it directly",
            )
        if not self.secret:
            raise _unavailable(
                daemon,
                f"runs on host {row.host}: reaching it needs cluster_secret in this "
                "daemon's credentials.json (the same as in its)",
            )
        host, _, port = row.address.rpartition(":")
        try:
            stream = await trio.open_tcp_stream(host.strip("[]"), int(port))
        except (OSError, ValueError) as e:
            raise _unavailable(daemon, f"does not answer on {row.address}: {e}") from None
        try:
            with trio.fail_after(HANDSHAKE_S):
                await offer(stream, self.secret, self.me, daemon)
        except (NotAuthenticated, trio.TooSlowError, trio.BrokenResourceError, OSError) as e:
            with trio.CancelScope(shield=True):
                await stream.aclose()
            raise _unavailable(daemon, f"at {row.address}: {e}") from None
        return stream

    async def call(self, daemon: str, method: str, params: Any) -> Any:
        link = self._links.get(daemon)
        if link is None or link.broken:
            assert self._nursery is not None, "peers are not running"
            link = self._links[daemon] = _Link(daemon, await self._connect(daemon))
            self._nursery.start_soon(link.read)
        return await link.call(method, params)

    async def open_subscription(self, daemon: str, params: Any) -> _Upstream:
        stream = await self._connect(daemon)
        lines = _Lines(stream)
        try:
            await stream.send_all(_request(f"{FORWARDED}sub", p.AGENT_SUBSCRIBE, params))
            line = await lines.next()
            if line is None:
                raise _unavailable(daemon, "closed the subscription at once")
            answer = _result(daemon, msgspec.json.decode(line))
            return _Upstream(stream, int(answer["subscription"]), int(answer["next_seq"]), lines)
        except BaseException:
            with trio.CancelScope(shield=True):
                await stream.aclose()
            raise
