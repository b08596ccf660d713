"""The control socket's server: NDJSON JSON-RPC lines in, answers and events out.

- ``lines``: a request line's checks (UTF-8, depth, ids) before it is parsed;
- ``connection``: one client's connection: reader, writer, backpressure, calls;
- ``server``: the listening socket, peer checks, draining at shutdown;
- ``subscriptions``: agent events to subscribed connections (``lagged``);
- ``events``: ``daemon.subscribe``'s daemon-wide events;
- ``forwarding``: requests for agents another daemon runs, and relayed
  subscriptions.
"""

from daemon.server.connection import Connection, Handler
from daemon.server.forwarding import Elsewhere
from daemon.server.server import ControlServer

__all__ = ["Connection", "ControlServer", "Elsewhere", "Handler"]
