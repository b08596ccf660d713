"""Requests for agents another daemon runs: any daemon answers every method
for every agent (docs/cluster.md).

A handler that finds its agent alive but run elsewhere raises ``Elsewhere``;
the connection hands the request to its server's ``Forwarder``
(daemon/cluster/peers.py), which asks the owner and returns its answer or
its error as if it were local. ``agent.subscribe`` becomes a relay: the
owner's event lines are passed on with this connection's subscription id
(the seq, ``lagged`` and resume protocol are the owner's own).

A forwarded request carries an id starting ``fwd:``; a daemon never forwards
such a request again (two daemons that disagree about an owner for a moment
answer AGENT_UNAVAILABLE rather than pass a request back and forth).
"""

from __future__ import annotations

import itertools
from typing import Any, Protocol

import msgspec
import structlog
import trio

import protocol as p
from agents.events import Lagged, LogEntry
from daemon.server.subscriptions import _tail

log = structlog.get_logger("ikigai.control")

FORWARDED = "fwd:"  # the id prefix of a request one daemon sends another


class Elsewhere(Exception):
    """The agent is alive and run by daemon ``daemon``, not this one."""

    def __init__(self, daemon: str, agent: str, params: Any = None) -> None:
        super().__init__(f"agent {agent} runs on daemon {daemon}")
        self.daemon = daemon
        self.agent = agent
        self.params = params  # to send instead of the request's own (a create placed there)


class Connection(Protocol):
    """What forwarding needs of a connection (daemon/server/connection.py)."""

    server: Any
    closed: bool
    event_room: int
    subscriptions: dict[int, Any]
    nursery: trio.Nursery | None
    _sub_ids: itertools.count[int]

    @property
    def queued(self) -> int: ...

    def push(self, data: bytes) -> None: ...

    def send(self, message: dict[str, Any]) -> None: ...


class Upstream(Protocol):
    """One relayed subscription's connection to the owner."""

    up_sid: int
    next_seq: int

    async def receive_line(self) -> bytes | None: ...  # None: the owner went away

    async def aclose(self) -> None: ...


class Forwarder(Protocol):
    async def call(self, daemon: str, method: str, params: Any) -> Any: ...

    async def open_subscription(self, daemon: str, params: Any) -> Upstream: ...


def forwarded(rid: Any) -> bool:
    return isinstance(rid, str) and rid.startswith(FORWARDED)


async def answer_elsewhere(
    conn: Connection, rid: Any, method: str, params: Any, where: Elsewhere
) -> Any:
    """The owner's answer to this request (raises its RpcError)."""
    forwarder: Forwarder | None = getattr(conn.server, "forwarder", None)
    if forwarder is None or forwarded(rid):
        raise p.RpcError(
            p.AGENT_UNAVAILABLE,
            f"agent {where.agent} runs on daemon {where.daemon}: ask that daemon",
            {"daemon": where.daemon},
        )
    body = msgspec.to_builtins(where.params if where.params is not None else params)
    if method != p.AGENT_SUBSCRIBE:
        return await forwarder.call(where.daemon, method, body)
    upstream = await forwarder.open_subscription(where.daemon, body)
    return {"subscription": _relay(conn, upstream), "next_seq": upstream.next_seq}


class Relay:
    """A subscription of ``conn`` whose events come from another daemon."""

    __slots__ = ("closed", "conn", "scope", "sid", "upstream")

    def __init__(self, conn: Connection, sid: int, upstream: Upstream) -> None:
        self.conn, self.sid, self.upstream = conn, sid, upstream
        self.closed = False
        self.scope = trio.CancelScope()

    def cancel(self) -> None:
        """agent.unsubscribe or the connection's end."""
        self.closed = True
        self.scope.cancel()

    async def run(self) -> None:
        up = self.upstream
        theirs = (
            b'{"jsonrpc":"2.0","method":"agent.event","params":{"subscription":'
            + str(up.up_sid).encode()
            + b","
        )
        ours = theirs[: -len(str(up.up_sid)) - 1] + str(self.sid).encode() + b","
        reason = "agent moved"  # the owner went away: subscribe again to resume
        with self.scope:
            try:
                while True:
                    line = await up.receive_line()
                    if line is None:
                        break
                    if line.startswith(theirs):
                        if not self._pass(ours, line[len(theirs) :]):
                            return
                        continue
                    msg = msgspec.json.decode(line)
                    if isinstance(msg, dict) and msg.get("method") == p.SUBSCRIPTION_END:
                        reason = str((msg.get("params") or {}).get("reason") or reason)
                        break
            except (OSError, trio.BrokenResourceError, msgspec.DecodeError) as e:
                log.warning("relayed subscription broke", reason=str(e), sid=self.sid)
            finally:
                with trio.CancelScope(shield=True):
                    await up.aclose()
            self._end(reason)

    def _pass(self, ours: bytes, tail: bytes) -> bool:
        conn = self.conn
        if conn.closed:
            return False
        if conn.queued < conn.event_room:
            conn.push(ours + tail)
            return True
        # this subscriber reads too slowly: lagged, from the seq it missed
        note = msgspec.json.decode(b"{" + tail[:-2] + b"}") if tail.endswith(b"}\n") else {}
        seq = int(note.get("seq", 0)) if isinstance(note, dict) else 0
        lag = LogEntry(
            seq=seq,
            agent=str(note.get("agent", "")) if isinstance(note, dict) else "",
            turn=None,
            event=Lagged(resume_from=seq, oldest_kept=seq),
        )
        conn.push(ours + _tail(lag))
        self._end("lagged")
        return False

    def _end(self, reason: str) -> None:
        self.closed = True
        if self.conn.subscriptions.pop(self.sid, None) is not None:
            self.conn.send(
                {
                    "jsonrpc": "2.0",
                    "method": p.SUBSCRIPTION_END,
                    "params": {"subscription": self.sid, "reason": reason},
                }
            )


def _relay(conn: Connection, upstream: Upstream) -> int:
    """A local subscription id for ``upstream``'s events; they flow once this
    answer is queued (a task started now runs after it)."""
    assert conn.nursery is not None
    sid = next(conn._sub_ids)
    relay = Relay(conn, sid, upstream)
    conn.subscriptions[sid] = relay
    conn.nursery.start_soon(relay.run)
    return sid
