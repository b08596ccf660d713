"""ikictl's connection is the client library's (ikigai.client): one client."""

from ikigai._conn import _message, autostart_allowed, default_socket
from ikigai.client import Client
from ikigai.errors import DaemonUnreachable, RequestTooLarge, RpcError

__all__ = [
    "Client",
    "DaemonUnreachable",
    "RequestTooLarge",
    "RpcError",
    "_message",
    "autostart_allowed",
    "connect",
    "default_socket",
]


def connect(path: str | None = None, *, autostart: bool = True) -> Client:
    """A connection to the daemon; with ``autostart``, start one when none answers."""
    return Client.connect(path, autostart=autostart)
