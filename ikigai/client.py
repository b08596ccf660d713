"""The synchronous client: standard library only (no trio, httpx, SQLAlchemy
or msgspec), so a script or ``ikictl`` that imports it starts fast.

    import ikigai

    with ikigai.connect() as c:
        agent = c.create(model="claude-sonnet-4-5/low")["agent"]["uuid"]
        print(c.ask(agent, "hello")["reply"])
"""

from __future__ import annotations

from ikigai._conn import Connection, connect_socket, default_socket
from ikigai._methods import Methods

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Self

__all__ = ["Client", "connect"]


class Client(Connection, Methods):
    """One connection to the daemon: every control method as a typed call
    (the Methods), plus the raw ``call(method, params)`` for any other.

    Not thread-safe: one thread uses one Client (open one per thread)."""

    @classmethod
    def connect(
        cls, socket: str | None = None, *, autostart: bool = True, timeout: float | None = None
    ) -> Self:
        """Connect to the daemon at ``socket`` (default: IKIGAI_SOCKET,
        IKIGAI_HOME/run/ikigai.sock, ...); with ``autostart``, start one when
        none answers (unless IKIGAI_AUTOSTART=0 or config "autostart": false).
        Raises DaemonUnreachable."""
        path = default_socket(socket)
        return cls(connect_socket(path, autostart=autostart, timeout=timeout), path)


def connect(
    socket: str | None = None, *, autostart: bool = True, timeout: float | None = None
) -> Client:
    """A Client connected to the daemon (see Client.connect)."""
    return Client.connect(socket, autostart=autostart, timeout=timeout)
