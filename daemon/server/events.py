"""``daemon.event`` notifications: daemon-wide events (an MCP server's state
changed...) for every connection that asked with ``daemon.subscribe``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import protocol as p
from daemon.server.subscriptions import _encoder, without_surrogates

if TYPE_CHECKING:
    from daemon.server.server import ControlServer

__all__ = ["DaemonEvents"]


class DaemonEvents:
    """Daemon events (an MCP server's state...) for every connection that
    asked (daemon.subscribe), numbered by ``seq``. Never waits: a connection
    whose buffer is nearly full gets a ``lagged`` event instead, which ends
    its subscription (it may subscribe again and read the state afresh)."""

    def __init__(self) -> None:
        self.server: ControlServer | None = None  # set once the socket is served
        self.seq = 0  # of the last event published

    def publish(self, event: dict[str, Any]) -> None:
        self.seq += 1
        if self.server is None:
            return  # no connection yet: nobody to tell
        line: bytes | None = None
        # the room the connection keeps for answers (as agent subscriptions do)
        for conn in list(self.server.connections):
            if not conn.daemon_events or conn.closed:
                continue
            if conn.queued >= conn.event_room:
                conn.daemon_events = False
                conn.send_bytes(_line(self.seq, {"type": "lagged", "missed_from": self.seq}))
                continue
            if line is None:
                line = _line(self.seq, event)
            conn.send_bytes(line)


def _line(seq: int, event: dict[str, Any]) -> bytes:
    params = {"seq": seq, "event": event}
    try:
        body = _encoder.encode(params)
    except UnicodeEncodeError:  # a server's error text with a lone surrogate
        body = _encoder.encode(without_surrogates(params))
    return b'{"jsonrpc":"2.0","method":"' + p.DAEMON_EVENT.encode() + b'","params":' + body + b"}\n"
